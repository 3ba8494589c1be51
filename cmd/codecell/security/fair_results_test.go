package security

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
)

// TestStoredResultsBounded (issue 19, third round M7): a run whose
// result is cut keeps the whole result as codecell://results/<id>. The
// results were bounded only by an hourly prune of everyone's, oldest
// first, so that one principal could fill the disk within the hour and
// then have the others' results pruned, their URIs dead. Now a
// principal's stored results are bounded when written: past
// memory.results_max_principal_bytes its own oldest go, never another's.
func TestStoredResultsBounded(t *testing.T) {
	t.Parallel()
	// Random text compresses little: each result below keeps ~400 KB, so
	// that a 1 MiB bound holds two of them.
	s := start(t, "CODECELL_MEMORY_RESULTS_MAX_PRINCIPAL_BYTES=1048576")
	alice, bob := s.open(t, aliceToken), s.open(t, bobToken)
	uriRE := regexp.MustCompile(`codecell://results/[A-Za-z0-9]+`)
	store := func(ss *session) string {
		t.Helper()
		rec := ss.run(`let s = ""; for (let i = 0; i < 60000; i++) s += Math.random().toString(36).slice(2, 12).padEnd(10, "0"); return s`, "timeout_ms", 60000)
		uri := uriRE.FindString(rec.raw)
		if uri == "" {
			t.Fatalf("the result was not stored: %.300s", rec.raw)
		}
		return uri
	}
	kept := func(ss *session, uri string) bool {
		t.Helper()
		ss.next++
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ss.next, "method": "resources/read", "params": map[string]any{"uri": uri}})
		code, _, out := do(t, http.MethodPost, ss.url, ss.header(), string(body))
		if code != http.StatusOK {
			t.Fatalf("read %s: HTTP %d %s", uri, code, out)
		}
		var r struct {
			Result *struct {
				Contents []json.RawMessage `json:"contents"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(lastMessage(out)), &r); err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return r.Result != nil && len(r.Result.Contents) > 0
	}
	mine := store(alice)
	var bobs []string
	for range 4 {
		bobs = append(bobs, store(bob))
	}
	if kept(bob, bobs[0]) {
		t.Errorf("bob's 4 results of ~400 KB each are all kept past his 1 MiB bound: no bound at write time")
	}
	if !kept(bob, bobs[3]) {
		t.Errorf("bob's newest result %s was evicted", bobs[3])
	}
	if !kept(alice, mine) {
		t.Errorf("bob's results evicted alice's %s", mine)
	}
}
