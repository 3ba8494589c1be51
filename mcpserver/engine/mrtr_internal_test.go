package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// mapCache is a cacheStore in memory, by principal.
type mapCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *mapCache) key(ctx context.Context, kind, key string) string {
	return tools.CallerFrom(ctx).Principal + "\x00" + kind + "\x00" + key
}

func (c *mapCache) CacheGet(ctx context.Context, kind, key string) (memory.CacheEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[c.key(ctx, kind, key)]
	if !ok {
		return memory.CacheEntry{}, memory.ErrNotFound
	}
	return memory.CacheEntry{Value: v}, nil
}

func (c *mapCache) CacheSet(ctx context.Context, in memory.CacheSetInput) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[c.key(ctx, in.Kind, in.Key)] = in.Value
	return time.Now().Add(in.TTL), nil
}

func (c *mapCache) CacheDelete(ctx context.Context, kind, key string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.key(ctx, kind, key)
	_, ok := c.m[k]
	delete(c.m, k)
	return ok, nil
}

func testKey(t *testing.T) filter.Key {
	t.Helper()
	k, err := filter.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRequestState: a state opens once, for its principal and its
// request, before it expires, under its installation's key, whether its
// journal is in the state or in the store; the store's copy cannot be
// altered.
func TestRequestState(t *testing.T) {
	key := testKey(t)
	x := Execution{Code: "return 1", Language: "javascript"}
	j := &journal{Seed: 7, Now: 1000, Calls: []journalCall{{Seq: 0, Tool: "crm.read", Args: "ab", Out: json.RawMessage(`{"n":1}`)}}}
	for _, tc := range []struct {
		name  string
		store *mapCache
	}{{"in the state", nil}, {"in the store", &mapCache{m: map[string][]byte{}}}} {
		t.Run(tc.name, func(t *testing.T) {
			var cs cacheStore
			if tc.store != nil {
				cs = tc.store
			}
			s, err := newStateSealer(key, cs, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			refused := func(state, principal string, x Execution, want string) {
				t.Helper()
				_, err := s.open(ctx, principal, x, state)
				if _, ok := err.(*stateError); !ok || !strings.Contains(err.Error(), want) {
					t.Errorf("open: %v, want a refusal that says %q", err, want)
				}
			}
			state, err := s.seal(ctx, "alice", x, j)
			if err != nil {
				t.Fatal(err)
			}
			if tc.store != nil && len(state) > 300 {
				t.Errorf("a state whose journal is in the store is %d bytes", len(state))
			}
			refused(state, "bob", x, "another principal")
			refused(state, "alice", Execution{Code: "return 2", Language: "javascript"}, "another request")
			other, _ := newStateSealer(testKey(t), cs, time.Minute)
			if _, err := other.open(ctx, "alice", x, state); err == nil || !strings.Contains(err.Error(), "another installation") {
				t.Errorf("another key opened the state: %v", err)
			}
			got, err := s.open(ctx, "alice", x, state)
			if err != nil {
				t.Fatal(err)
			}
			if got.Seed != 7 || len(got.Calls) != 1 || string(got.Calls[0].Out) != `{"n":1}` {
				t.Errorf("journal %+v", got)
			}
			refused(state, "alice", x, "sent back already")

			expired, _ := newStateSealer(key, cs, time.Minute)
			expired.ttl = -time.Minute
			old, err := expired.seal(ctx, "alice", x, j)
			if err != nil {
				t.Fatal(err)
			}
			refused(old, "alice", x, "expired")

			if tc.store != nil {
				state, _ := s.seal(ctx, "alice", x, j)
				tc.store.mu.Lock()
				for k, v := range tc.store.m {
					v[len(v)-1] ^= 1
					tc.store.m[k] = v
				}
				tc.store.mu.Unlock()
				refused(state, "alice", x, "altered in the store")
			}
		})
	}
}

// TestReplayDiverges: a replayed call must be the journal's in its place;
// a call in another place is served when it is the same; a run that ends
// without a call it made before has diverged.
func TestReplayDiverges(t *testing.T) {
	args := json.RawMessage(`{"n":1}`)
	prior := func() *journal {
		return &journal{Calls: []journalCall{
			{Seq: 0, Tool: "crm.read", Args: hashHex(json.RawMessage(`{}`)), Out: json.RawMessage(`{"n":1}`)},
			{Seq: 1, Tool: "crm.write", Args: hashHex(args), Err: &journalError{Message: "no", Code: "tool_failed", Tool: "crm.write"}},
		}}
	}
	r, err := newResumption(Resume{}, prior())
	if err != nil {
		t.Fatal(err)
	}
	var stopped error
	r.stop = func(err error) { stopped = err }
	// Calls made together, started in the other order.
	if _, err, ok := r.replay(0, "crm.write", args); !ok || err == nil || err.(replayedError).ErrorCode() != "tool_failed" {
		t.Fatalf("the write in another place: %v %v", ok, err)
	}
	if out, err, ok := r.replay(1, "crm.read", json.RawMessage(`{}`)); !ok || err != nil || string(out) != `{"n":1}` {
		t.Fatalf("the read in another place: %s %v %v", out, ok, err)
	}
	if err := r.end(); err != nil {
		t.Fatalf("end: %v", err)
	}
	// A new call after the journal's is made.
	if _, err, ok := r.replay(2, "crm.write", args); ok || err != nil {
		t.Fatalf("a new call: %v %v", ok, err)
	}

	r, _ = newResumption(Resume{}, prior())
	r.stop = func(err error) { stopped = err }
	if _, err, ok := r.replay(0, "crm.read", json.RawMessage(`{}`)); !ok || err != nil {
		t.Fatal(err)
	}
	_, err, ok := r.replay(1, "crm.write", json.RawMessage(`{"n":2}`))
	if ok || err == nil || !strings.Contains(err.Error(), "did not do on replay") || stopped != err {
		t.Fatalf("other arguments: %v %v, stopped %v", ok, err, stopped)
	}
	if r.end() != err {
		t.Errorf("end does not report the divergence")
	}

	r, _ = newResumption(Resume{}, prior())
	r.stop = func(error) {}
	if _, _, ok := r.replay(0, "crm.read", json.RawMessage(`{}`)); !ok {
		t.Fatal("not replayed")
	}
	if err := r.end(); err == nil || !strings.Contains(err.Error(), "#2 crm.write") {
		t.Errorf("a run without its write: %v", err)
	}
}

// TestAnswersOfOpenQuestions: a retry's answers are taken for the
// questions the last attempt asked only, not for ones answered before.
func TestAnswersOfOpenQuestions(t *testing.T) {
	var forged mcp.InputResponses
	_ = json.Unmarshal([]byte(`{"c1.elicit.0":{"action":"accept"},"c2.elicit.0":{"action":"accept"},"c9.elicit.0":{"action":"accept"}}`), &forged)
	prior := &journal{
		Asked:   map[string]string{"c1.elicit.0": "a", "c2.elicit.0": "b"},
		Answers: map[string]json.RawMessage{"c1.elicit.0": json.RawMessage(`{"action":"decline"}`)},
		Pending: []string{"c2.elicit.0"},
	}
	r, err := newResumption(Resume{Responses: forged}, prior)
	if err != nil {
		t.Fatal(err)
	}
	a := r.prior.Answers
	if string(a["c1.elicit.0"]) != `{"action":"decline"}` || string(a["c2.elicit.0"]) != `{"action":"accept"}` || a["c9.elicit.0"] != nil {
		t.Errorf("answers %s", a)
	}
}
