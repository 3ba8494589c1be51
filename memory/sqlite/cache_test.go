package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"errors"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	set := func(ctx context.Context, kind, key, value string, ttl time.Duration) {
		t.Helper()
		if _, err := s.CacheSet(ctx, memory.CacheSetInput{Kind: kind, Key: key, Value: []byte(value), TTL: ttl, MaxEntries: 2}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(ctx context.Context, kind, key string) string {
		t.Helper()
		e, err := s.CacheGet(ctx, kind, key)
		if errors.Is(err, memory.ErrNotFound) {
			return "(none)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Value)
	}
	set(alice, memory.CacheUser, "k", `{"v":1}`, time.Minute)
	set(alice, memory.CacheMemo, "k", `"memo"`, time.Hour)
	for _, c := range []struct {
		name       string
		ctx        context.Context
		kind, want string
	}{
		{"own value", alice, memory.CacheUser, `{"v":1}`},
		{"kinds apart", alice, memory.CacheMemo, `"memo"`},
		{"principals apart", bob, memory.CacheUser, "(none)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := get(c.ctx, c.kind, "k"); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	t.Run("quota", func(t *testing.T) {
		set(alice, memory.CacheUser, "k2", `2`, time.Minute)
		set(alice, memory.CacheUser, "k", `3`, time.Minute) // a replacement is no new entry
		_, err := s.CacheSet(alice, memory.CacheSetInput{Kind: memory.CacheUser, Key: "k3", Value: []byte(`3`), TTL: time.Minute, MaxEntries: 2})
		wantCode(t, err, memory.CodeQuotaExceeded)
	})
	t.Run("expiry", func(t *testing.T) {
		clock.t = clock.t.Add(time.Minute)
		if got := get(alice, memory.CacheUser, "k"); got != "(none)" {
			t.Fatalf("expired entry read: %s", got)
		}
		if got := get(alice, memory.CacheMemo, "k"); got != `"memo"` {
			t.Fatalf("memo entry with an hour to live: %s", got)
		}
		rep, err := s.Prune(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Cache != 2 {
			t.Fatalf("swept %d entries, want the 2 expired", rep.Cache)
		}
	})
	t.Run("delete", func(t *testing.T) {
		set(alice, memory.CacheUser, "d", `1`, time.Minute)
		if ok, err := s.CacheDelete(bob, memory.CacheUser, "d"); err != nil || ok {
			t.Fatalf("bob deleted alice's entry: %v %v", ok, err)
		}
		if ok, err := s.CacheDelete(alice, memory.CacheUser, "d"); err != nil || !ok {
			t.Fatalf("delete: %v %v", ok, err)
		}
		if got := get(alice, memory.CacheUser, "d"); got != "(none)" {
			t.Fatalf("deleted entry read: %s", got)
		}
	})
}
