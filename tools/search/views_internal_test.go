package search

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/codecell/codecell/tools"
)

// manyTools returns n tools of an API's kind of words.
func manyTools(n int) []tools.Tool {
	nouns := []string{"issue", "repository", "user", "invoice", "customer", "channel", "message", "file", "folder", "meeting", "track", "board"}
	verbs := []string{"list", "get", "create", "update", "delete", "search"}
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	out := make([]tools.Tool, n)
	for i := range out {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		out[i] = tools.Tool{Name: fmt.Sprintf("api%d.%s_%s_%d", i%7, v, o, i), Handler: h,
			Summary:     fmt.Sprintf("%s a %s of the account %d.", v, o, i),
			Description: fmt.Sprintf("%s the %s with its labels, owners and history, page by page (%d).", v, o, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The id."},"page":{"type":"integer"}}}`)}
	}
	return out
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestIndexMadeOnce (attack15 M1, L1): the index was made for each
// caller's view — each principal's first search paid for the whole
// catalogue again (5.8 s of CPU on 170,000 operations), and any change
// every caller sees (a skill published, then unpublished) made every
// principal's next search pay it again. The catalogue's index is made
// once; a new principal's first search, and a search after a tool came
// and went, cost a small part of the first search (here in bytes
// allocated, which do not depend on the machine's load).
func TestIndexMadeOnce(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(manyTools(2000)...); err != nil {
		t.Fatal(err)
	}
	ix := New(reg, func(tools.Caller) Docs { return noDocs{} })
	search := func(principal, text string) {
		t.Helper()
		if _, err := ix.Search(Query{Text: text, Caller: tools.Caller{Principal: principal}}); err != nil {
			t.Fatal(err)
		}
	}
	first := allocated(func() { search("alice", "list the issues") })
	warm := allocated(func() { search("alice", "create a customer") })
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	if err := reg.RegisterScoped("bob", tools.Tool{Name: "skills.flip", Summary: "Flip the board.", Handler: h}); err != nil {
		t.Fatal(err)
	}
	bob := allocated(func() { search("bob", "flip the board") })
	if err := reg.Register(tools.Tool{Name: "skills.flip", Summary: "Flip the board.", Handler: h}); err != nil {
		t.Fatal(err)
	}
	reg.Unregister("skills.flip")
	after := allocated(func() { search("alice", "delete a meeting") })
	t.Logf("bytes allocated: first search %d, warm %d, bob's first %d, after a publish and unpublish %d", first, warm, bob, after)
	for what, n := range map[string]uint64{"bob's first search": bob, "a search after a publish and unpublish": after} {
		if n > first/10 {
			t.Errorf("%s allocated %d bytes, the first search %d: the index was made again", what, n, first)
		}
	}
}

// TestDeadDocumentsCompacted: a tool no longer registered keeps its
// document until such documents pass an eighth of the live ones (and
// minCompact); then the corpus is made again of the live ones, and
// searches find what they found.
func TestDeadDocumentsCompacted(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := reg.Register(manyTools(200)...); err != nil {
		t.Fatal(err)
	}
	ix := New(reg, func(tools.Caller) Docs { return noDocs{} })
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	top := func(q string) string {
		t.Helper()
		hits, err := ix.Search(Query{Text: q, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Name
	}
	want := top("update a meeting")
	first := ix.corp.Load()
	for i := range 3 * minCompact {
		if err := reg.Register(tools.Tool{Name: "skills.flip", Summary: "Flip the zeppelin.", Handler: h}); err != nil {
			t.Fatal(err)
		}
		if got := top("flip the zeppelin"); got != "skills.flip" {
			t.Fatalf("round %d: %q", i, got)
		}
		reg.Unregister("skills.flip")
		if got := top("flip the zeppelin"); got == "skills.flip" {
			t.Fatalf("round %d: found a tool unregistered", i)
		}
		co := ix.corp.Load()
		if co.dead > max(co.live/8, minCompact) {
			t.Fatalf("round %d: %d dead documents beside %d live", i, co.dead, co.live)
		}
	}
	if ix.corp.Load() == first {
		t.Error("never compacted")
	}
	if got := top("update a meeting"); got != want {
		t.Errorf("after compaction: %q, before %q", got, want)
	}
}
