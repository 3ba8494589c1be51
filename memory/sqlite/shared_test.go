package sqlite

import (
	"github.com/codecell/codecell/memory"

	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestVaultTokens(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.UnixMilli(1_700_000_000_000)}
	s := openTest(t, Config{Now: clock.now})
	ctx := t.Context()
	exp := clock.t.Add(time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.PutVaultTokens(ctx,
		memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:01⟧", Sealed: []byte("a1"), Expires: exp},
		memory.VaultToken{Principal: "alice", Session: "", Token: "⟦email:01⟧", Sealed: []byte("a0"), Expires: exp},
		memory.VaultToken{Principal: "bob", Session: "s1", Token: "⟦email:01⟧", Sealed: []byte("b1"), Expires: exp},
		memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:02⟧", Sealed: []byte("old"), Expires: clock.t.Add(time.Minute)},
	))
	// Replaced: new sealed value, later expiry.
	must(s.PutVaultTokens(ctx, memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:02⟧", Sealed: []byte("new"), Expires: exp}))

	tests := []struct {
		name                      string
		principal, session, token string
		after                     time.Duration
		want                      string // "" for not found
	}{
		{name: "own session", principal: "alice", session: "s1", token: "⟦email:01⟧", want: "a1"},
		{name: "session-less", principal: "alice", session: "", token: "⟦email:01⟧", want: "a0"},
		{name: "another principal's same session id", principal: "bob", session: "s1", token: "⟦email:01⟧", want: "b1"},
		{name: "another session", principal: "alice", session: "s2", token: "⟦email:01⟧"},
		{name: "replaced", principal: "alice", session: "s1", token: "⟦email:02⟧", want: "new"},
		{name: "replaced keeps its new expiry", principal: "alice", session: "s1", token: "⟦email:02⟧", after: 30 * time.Minute, want: "new"},
		{name: "expired", principal: "alice", session: "s1", token: "⟦email:01⟧", after: time.Hour},
		{name: "unknown", principal: "alice", session: "s1", token: "⟦email:99⟧"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &testClock{t: clock.t.Add(tt.after)}
			s.now = c.now
			defer func() { s.now = clock.now }()
			got, err := s.GetVaultToken(ctx, tt.principal, tt.session, tt.token)
			if tt.want == "" {
				if !errors.Is(err, memory.ErrNotFound) {
					t.Fatalf("got %q, %v; want ErrNotFound", got.Sealed, err)
				}
				return
			}
			if err != nil || string(got.Sealed) != tt.want {
				t.Fatalf("got %q, %v; want %q", got.Sealed, err, tt.want)
			}
		})
	}

	t.Run("delete a session", func(t *testing.T) {
		must(s.DeleteVaultTokens(ctx, "alice", "s1"))
		if _, err := s.GetVaultToken(ctx, "alice", "s1", "⟦email:02⟧"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("after delete: %v, want ErrNotFound", err)
		}
		if _, err := s.GetVaultToken(ctx, "bob", "s1", "⟦email:01⟧"); err != nil {
			t.Errorf("bob's session went too: %v", err)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		if err := s.PutVaultTokens(ctx, memory.VaultToken{Principal: "alice", Token: "t"}); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("empty sealed value: %v, want ErrInvalid", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		s.now = (&testClock{t: clock.t.Add(2 * time.Hour)}).now
		defer func() { s.now = clock.now }()
		n, err := s.PruneShared(ctx, clock.t)
		if err != nil || n != 2 { // alice's session-less and bob's
			t.Errorf("pruned %d, %v; want 2", n, err)
		}
	})
}

func TestCheckFilterKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "codecell.db")
	a := openTest(t, Config{Path: path})
	b := openTest(t, Config{Path: path})
	if err := a.CheckFilterKey(t.Context(), "0123abcd"); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	if err := b.CheckFilterKey(t.Context(), "0123abcd"); err != nil {
		t.Errorf("same key: %v", err)
	}
	if err := b.CheckFilterKey(t.Context(), "ffff0000"); !errors.Is(err, memory.ErrKeyMismatch) {
		t.Errorf("another key: %v, want ErrKeyMismatch", err)
	}
}

func TestReadyAndPoolStats(t *testing.T) {
	t.Parallel()
	s := openTest(t, Config{})
	if err := s.Ready(t.Context()); err != nil {
		t.Fatalf("ready: %v", err)
	}
	ps := s.PoolStats()
	if ps.MaxOpen < 2 || ps.Open < 1 || ps.Open != ps.InUse+ps.Idle {
		t.Errorf("pool stats %+v: want a writer and readers, open = in use + idle", ps)
	}
	if _, err := s.w.ExecContext(t.Context(), `PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); !errors.Is(err, memory.ErrSchema) {
		t.Errorf("old schema: %v, want ErrSchema", err)
	}
	s.Close()
	if err := s.Ready(t.Context()); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("closed: %v, want ErrClosed", err)
	}
}
