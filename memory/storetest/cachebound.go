package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// CacheBound checks the bound of every principal's cache entries
// together (issue 19, a13: the cache was bounded per principal by count
// and by value, not as a whole, so that many principals, or one with
// many entries, could fill the disk). open opens a fresh store with
// memory.Limits.MaxCacheBytes = max. Setting past the bound evicts the
// oldest entries, expired ones first, of any principal; the entry just
// set stays; the total stays within the bound.
func CacheBound(t *testing.T, open func(t *testing.T, max int64) Backend) {
	const max = 64 << 10
	st := open(t, max)
	value := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	set := func(ctx context.Context, key string, n int, ttl time.Duration) {
		t.Helper()
		if _, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheUser, Key: key, Value: value(n), TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	has := func(ctx context.Context, key string) bool {
		t.Helper()
		_, err := st.CacheGet(ctx, memory.CacheUser, key)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	set(alice, "short", 8<<10, 50*time.Millisecond) // expires first
	set(alice, "a0", 8<<10, time.Hour)
	waitPast(time.Now().Add(60 * time.Millisecond))
	for i := range 6 {
		set(bob, fmt.Sprint("b", i), 8<<10, time.Hour)
	}
	// 64 KiB now: 8 entries of 8 KiB, one of them expired. One more
	// evicts the expired one; the next, the oldest live one (alice's a0).
	set(bob, "b6", 8<<10, time.Hour)
	if !has(alice, "a0") {
		t.Error("a live entry was evicted while an expired one could go")
	}
	set(bob, "b7", 8<<10, time.Hour)
	if has(alice, "a0") {
		t.Error("the oldest entry outlived the bound")
	}
	if !has(bob, "b7") || !has(bob, "b1") {
		t.Error("newer entries were evicted")
	}
	// A value larger than what the others leave room for evicts as many
	// as it takes, and stays.
	set(alice, "big", 40<<10, time.Hour)
	if !has(alice, "big") {
		t.Error("the entry just set was evicted")
	}
	live := 0
	for i := range 8 {
		if has(bob, fmt.Sprint("b", i)) {
			live++
		}
	}
	if got := int64(live*(8<<10) + 40<<10); got > max {
		t.Errorf("%d bytes cached, over the bound of %d", got, max)
	}
	if live == 0 {
		t.Error("every other entry was evicted, more than the bound needs")
	}
}
