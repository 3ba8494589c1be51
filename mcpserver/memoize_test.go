package mcpserver_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
)

// TestMemoize: a memoised read-only tool answers the same arguments from
// the same principal within the TTL without calling the source, marked
// cached; after the TTL, or for another principal, the source is called;
// a tool that writes is never memoised.
func TestMemoize(t *testing.T) {
	env := planServer(t, mcpserver.Config{Cache: engine.CacheConfig{Memoize: []engine.MemoRule{
		{Pattern: "test.*", TTL: time.Minute},
	}}})
	alice := authedClient(t, env.url, aliceToken)
	bob := authedClient(t, env.url, bobToken)
	const code = `const a = await test.count({q: "x", n: 1});
const b = await test.count({n: 1, q: "x"});
await test.touch({}); await test.touch({});
return [a.calls, b.calls]`

	for _, c := range []struct {
		name      string
		before    func()
		as        string
		wantCalls int64 // test.count's calls so far
		cached    int   // calls in the run answered from the cache
	}{
		{name: "second call within the run cached", as: "alice", wantCalls: 1, cached: 1},
		{name: "next run cached", as: "alice", wantCalls: 1, cached: 2},
		{name: "another principal calls the source", as: "bob", wantCalls: 2, cached: 1},
		{name: "after the TTL the source is called", before: func() { env.clock.add(time.Minute) }, as: "alice", wantCalls: 3, cached: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before()
			}
			cl := alice
			if c.as == "bob" {
				cl = bob
			}
			res, rec := execute(t, cl, map[string]any{"code": code, "details": true})
			if rec == nil || rec.Status != executor.StatusOK {
				t.Fatalf("run: %s", text(res))
			}
			if got := env.src.calls("test.count"); got != c.wantCalls {
				t.Fatalf("test.count called %d times, want %d", got, c.wantCalls)
			}
			cached := 0
			for _, call := range rec.Trace {
				if call.Cached {
					cached++
					if call.Tool != "test.count" {
						t.Errorf("%s marked cached", call.Tool)
					}
				}
			}
			if cached != c.cached || rec.Stats.CachedCalls != c.cached {
				t.Fatalf("trace marks %d cached, stats %d; want %d: %+v", cached, rec.Stats.CachedCalls, c.cached, rec.Trace)
			}
			for _, s := range rec.Calls {
				if s.Tool == "test.count" && s.Cached != c.cached {
					t.Errorf("summary %+v: want %d cached", s, c.cached)
				}
			}
		})
	}
	if got := env.src.calls("test.touch"); got != 8 {
		t.Fatalf("test.touch (a write) called %d times, want all 8", got)
	}
	t.Run("audit", func(t *testing.T) {
		env.srv.Close()
		calls, err := env.store.ListToolCalls(t.Context(), memory.ToolCallQuery{Tool: "test.count", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		cached := 0
		for _, c := range calls {
			if c.Cached {
				cached++
			}
		}
		if len(calls) != 8 || cached != 5 {
			t.Fatalf("audit: %d calls of test.count, %d cached; want 8 and 5", len(calls), cached)
		}
	})
}

func TestMemoizeConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  engine.CacheConfig
		ok   bool
	}{
		{"valid", engine.CacheConfig{Memoize: []engine.MemoRule{{Pattern: "gh.get_*", TTL: time.Minute}}}, true},
		{"bad pattern", engine.CacheConfig{Memoize: []engine.MemoRule{{Pattern: "gh.[", TTL: time.Minute}}}, false},
		{"no ttl", engine.CacheConfig{Memoize: []engine.MemoRule{{Pattern: "gh.*"}}}, false},
		{"ttl over the max", engine.CacheConfig{MaxTTL: time.Hour, Memoize: []engine.MemoRule{{Pattern: "gh.*", TTL: 2 * time.Hour}}}, false},
		{"default over the max", engine.CacheConfig{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.cfg.Validate(); (err == nil) != c.ok {
				t.Fatalf("Validate: %v, want ok %v", err, c.ok)
			}
		})
	}
}

// TestCacheTools: cache.set, get and delete, with a time to live, per
// principal, size-bounded.
func TestCacheTools(t *testing.T) {
	env := planServer(t, mcpserver.Config{Cache: engine.CacheConfig{MaxValueBytes: 64}})
	alice := authedClient(t, env.url, aliceToken)
	bob := authedClient(t, env.url, bobToken)
	run := func(t *testing.T, as, code string) *engine.Record {
		t.Helper()
		c := alice
		if as == "bob" {
			c = bob
		}
		_, rec := execute(t, c, map[string]any{"code": code})
		return rec
	}
	for _, c := range []struct {
		name   string
		as     string
		before func()
		code   string
		want   string
		kind   string // a tool error's code, thrown
	}{
		{name: "set", code: `return (await cache.set("k", {n: 1}, {ttl: "2m"})).expires_at.length > 0`, want: `true`},
		{name: "get", code: `const r = await cache.get("k"); return [r.found, r.value]`, want: `[true,{"n":1}]`},
		{name: "other principal", as: "bob", code: `return (await cache.get("k")).found`, want: `false`},
		{name: "ttl in seconds", code: `await cache.set({key: "s", value: "v", ttl: 30}); return (await cache.get("s")).value`, want: `"v"`},
		{name: "expired", before: func() { env.clock.add(time.Minute) }, code: `return [(await cache.get("s")).found, (await cache.get("k")).found]`, want: `[false,true]`},
		{name: "delete", code: `const d = await cache.delete("k"); return [d.deleted, (await cache.get("k")).found]`, want: `[true,false]`},
		{name: "too large", code: `try { await cache.set("big", "x".repeat(100)) } catch (e) { return e.code }`, want: `"too_large"`},
		{name: "ttl over the max", code: `try { await cache.set("k", 1, {ttl: "48h"}) } catch (e) { return e.code }`, want: `"invalid_arguments"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before()
			}
			rec := run(t, c.as, c.code)
			if rec.Status != executor.StatusOK {
				t.Fatalf("run: %+v", rec.Error)
			}
			if got := string(rec.Result); got != c.want {
				t.Fatalf("result %s, want %s", got, c.want)
			}
		})
	}
	t.Run("runtime tools run in a plan", func(t *testing.T) {
		_, rec := execute(t, alice, map[string]any{"code": `await cache.set("p", 1); return (await cache.get("p")).value`, "mode": "plan"})
		if rec.Status != executor.StatusOK || string(rec.Result) != "1" || rec.Plan == nil || rec.Plan.ID != "" {
			t.Fatalf("plan run: %+v", rec)
		}
		var ss []json.RawMessage
		json.Unmarshal(rec.Plan.Steps, &ss)
		if len(ss) != 0 {
			t.Fatalf("steps %s, want none", rec.Plan.Steps)
		}
	})
}

// BenchmarkMemoize measures a memoised call answered from the store's
// cache against the same call made live (an instant in-process tool), in
// a program of 20 sequential calls: µs/call is the whole call through
// the bridge.
func BenchmarkMemoize(b *testing.B) {
	for _, bc := range []struct {
		name string
		rule []engine.MemoRule
	}{
		{"live", nil},
		{"cached", []engine.MemoRule{{Pattern: "test.count", TTL: time.Hour}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			env := planServer(b, mcpserver.Config{Cache: engine.CacheConfig{Memoize: bc.rule},
				Limits: engine.Limits{ExecutionsPerMinute: 1e6, ExecutionBurst: 1e6, ToolCallsPerMinute: 1e8, ToolCallBurst: 1e8}})
			c, err := client.NewInProcessClient(env.srv.MCP())
			if err != nil {
				b.Fatal(err)
			}
			c = start(b, c)
			const calls = 20
			code := `for (let i = 0; i < 20; i++) await test.count({q: "same"}); return 1`
			execute(b, c, map[string]any{"code": code}) // warm: the first call fills the cache
			b.ResetTimer()
			for b.Loop() {
				if _, rec := execute(b, c, map[string]any{"code": code}); rec.Status != executor.StatusOK {
					b.Fatalf("run: %+v", rec.Error)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*calls), "µs/call")
		})
	}
}
