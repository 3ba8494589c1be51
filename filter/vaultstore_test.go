package filter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// memTokens is a TokenStore in memory, as a database would keep it: by
// principal, session and token. fail, when set, makes PutTokens fail.
type memTokens struct {
	mu   sync.Mutex
	rows map[[3]string]SealedToken
	puts int
	fail func() error
}

func newMemTokens() *memTokens { return &memTokens{rows: map[[3]string]SealedToken{}} }

func (m *memTokens) PutTokens(_ context.Context, principal, session string, tokens []SealedToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		if err := m.fail(); err != nil {
			return err
		}
	}
	m.puts++
	for _, t := range tokens {
		k := [3]string{principal, session, t.Token}
		t.Sources = addSources(slices.Clone(m.rows[k].Sources), t.Sources) // added to, never replaced
		m.rows[k] = t
	}
	return nil
}

func (m *memTokens) GetToken(_ context.Context, principal, session, token string) (SealedToken, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.rows[[3]string{principal, session, token}]
	return t, ok && time.Now().Before(t.Expires), nil
}

var _ TokenStore = (*memTokens)(nil)

// TestSharedVault: two vaults over one store stand for one session on two
// instances.
func TestSharedVault(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rules := []Rule{{From: "crm.*", To: "http.*"}}
	mk := func(t *testing.T, key Key, principal, session string, store TokenStore) *Vault {
		t.Helper()
		v, err := NewVault(key, principal, VaultOptions{Store: store, Session: session, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	otherKey, _ := NewKey()
	tests := []struct {
		name    string
		key     Key
		who     string
		session string
		flush   bool
		wantErr error // nil: resolves
	}{
		{name: "same session on another instance", key: fuzzKey, who: "alice", session: "s1", flush: true},
		{name: "not flushed yet", key: fuzzKey, who: "alice", session: "s1", wantErr: ErrUnknownToken},
		{name: "another session", key: fuzzKey, who: "alice", session: "s2", flush: true, wantErr: ErrUnknownToken},
		{name: "another principal", key: fuzzKey, who: "bob", session: "s1", flush: true, wantErr: ErrUnknownToken},
		{name: "another key", key: otherKey, who: "alice", session: "s1", flush: true, wantErr: errSealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newMemTokens()
			a := mk(t, fuzzKey, "alice", "s1", store)
			email := a.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get"})
			card := a.tokenize(ClassCard, "4111111111111111", true, nil)
			if tt.flush {
				if err := a.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			b := mk(t, tt.key, tt.who, tt.session, store)
			args := json.RawMessage(`{"to":"` + email + `","card":"` + card + `","note":"mail ` + email + `"}`)
			out, err := b.ResolveContext(ctx, args, "mail.send")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("resolved %s, %v; want %v", out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"to":"ada@example.com","card":4111111111111111,"note":"mail ada@example.com"}`; string(out) != want {
				t.Errorf("resolved %s, want %s", out, want)
			}
			// The sources came along: the rule holds on the other instance.
			var re *RuleError
			if _, err := b.ResolveContext(ctx, json.RawMessage(`{"x":"`+email+`"}`), "http.post"); !errors.As(err, &re) || re.Source != "crm.get" {
				t.Errorf("to http.post: %v, want the crm.* → http.* rule", err)
			}
			// Read through once, then held.
			if b.Len() != 2 {
				t.Errorf("the other vault holds %d tokens after resolving, want 2", b.Len())
			}
		})
	}
}

// TestSharedVaultSources (issue 19): a value minted on one instance from
// crm, and minted again on another from no source (a program returned
// it), was held there without its sources, and written back without
// them: resolved on that instance, it passed the crm.* → http.* rule.
// The store now adds sources, never replaces them, and a vault resolving
// a token it holds checks the stored sources too.
func TestSharedVaultSources(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rules := []Rule{{From: "crm.*", To: "http.*"}}
	store := newMemTokens()
	mk := func() *Vault {
		v, err := NewVault(fuzzKey, "alice", VaultOptions{Store: store, Session: "s1", Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b := mk(), mk()
	token := a.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get"})
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if again := b.Tokenize(ClassEmail, "ada@example.com", nil); again != token {
		t.Fatalf("the same value on the other instance: %s, want %s", again, token)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"x":"` + token + `"}`)
	for name, v := range map[string]*Vault{"minted from no source": b, "minted from crm": a, "read from the store": mk()} {
		var re *RuleError
		if out, err := v.ResolveContext(ctx, args, "http.post"); !errors.As(err, &re) || re.Source != "crm.get" {
			t.Errorf("%s: resolved for http.post: %s, %v; want the crm.* → http.* rule", name, out, err)
		}
		if got, _ := v.Sources(token); !slices.Contains(got, "crm.get") {
			t.Errorf("%s: sources after resolving %q, want crm.get among them", name, got)
		}
		if out, err := v.ResolveContext(ctx, args, "mail.send"); err != nil || string(out) != `{"x":"ada@example.com"}` {
			t.Errorf("%s: resolved for mail.send: %s, %v", name, out, err)
		}
	}
}

func TestSharedVaultSealed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := newMemTokens()
	v, err := NewVault(fuzzKey, "alice", VaultOptions{Store: store, Session: "s1", MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	tok := v.Tokenize(ClassEmail, "ada@example.com", []string{"crm.get"})
	if err := v.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("no value in clear", func(t *testing.T) {
		for k, row := range store.rows {
			if bytes.Contains(row.Sealed, []byte("ada@example.com")) || bytes.Contains(row.Sealed, []byte("crm.get")) {
				t.Errorf("row %v holds the value or its source in clear", k)
			}
		}
	})
	t.Run("a row moved to another token does not open", func(t *testing.T) {
		other := v.Tokenize(ClassEmail, "bob@example.com", nil)
		if err := v.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		store.rows[[3]string{"alice", "s1", other}] = store.rows[[3]string{"alice", "s1", tok}]
		w, _ := NewVault(fuzzKey, "alice", VaultOptions{Store: store, Session: "s1"})
		if _, err := w.ResolveContext(ctx, json.RawMessage(`"`+other+`"`), "mail.send"); !errors.Is(err, errSealed) {
			t.Errorf("moved row: %v, want errSealed", err)
		}
	})
	t.Run("evicted, then read back", func(t *testing.T) {
		v.Tokenize(ClassEmail, "c@example.com", nil)
		v.Tokenize(ClassEmail, "d@example.com", nil) // evicts ada's
		if _, ok := v.Sources(tok); ok {
			t.Fatal("ada's token still held; the test needs it evicted")
		}
		out, err := v.ResolveContext(ctx, json.RawMessage(`"`+tok+`"`), "mail.send")
		if err != nil || string(out) != `"ada@example.com"` {
			t.Errorf("evicted token: %s, %v", out, err)
		}
	})
	t.Run("nothing to flush writes nothing", func(t *testing.T) {
		before := store.puts
		if err := v.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := v.Flush(ctx); err != nil || store.puts != before+1 {
			t.Errorf("puts %d after two flushes from %d, %v; want one (the tokens of the last subtest), then none", store.puts, before, err)
		}
	})
	t.Run("a failed flush is retried", func(t *testing.T) {
		down := errors.New("database down")
		store.fail = func() error { return down }
		tok := v.Tokenize(ClassPhone, "+44 20 7946 0000", nil)
		if err := v.Flush(ctx); !errors.Is(err, down) {
			t.Fatalf("flush: %v, want the store's error", err)
		}
		store.fail = nil
		if err := v.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := store.GetToken(ctx, "alice", "s1", tok); !ok {
			t.Error("the token is not stored after the retry")
		}
	})
	t.Run("new sources are written again", func(t *testing.T) {
		v.Tokenize(ClassEmail, "d@example.com", []string{"hr.get"})
		w, _ := NewVault(fuzzKey, "alice", VaultOptions{Store: store, Session: "s1", Rules: []Rule{{From: "hr.*", To: "*"}}})
		tok := v.Tokenize(ClassEmail, "d@example.com", nil)
		if err := v.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ResolveContext(ctx, json.RawMessage(`"`+tok+`"`), "mail.send"); !errors.Is(err, ErrExfiltration) {
			t.Errorf("with hr.get as a new source: %v, want the rule", err)
		}
	})
}

// BenchmarkVaultFlush: the cost of writing a run's new tokens through to
// a store (here in memory: sealing and bookkeeping only).
func BenchmarkVaultFlush(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(map[int]string{1: "1 token", 100: "100 tokens"}[n], func(b *testing.B) {
			v, _ := NewVault(fuzzKey, "alice", VaultOptions{Store: newMemTokens(), Session: "s"})
			i := 0
			for b.Loop() {
				for range n {
					i++
					v.Tokenize(ClassEmail, string(rune('a'+i%26))+time.Duration(i).String()+"@example.com", nil)
				}
				if err := v.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/token")
		})
	}
}
