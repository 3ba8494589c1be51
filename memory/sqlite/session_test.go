package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestToolResultsHideSession is issue 10 item 4: memory records carried
// the MCP session id they were stored in, and tools returned it to
// programs, from which a model could read it and act in that session.
// Every memory and workspace tool is called, by a caller whose session id
// is a marker, and no result may hold the marker. A tool added later
// without a case here fails the test.
func TestToolResultsHideSession(t *testing.T) {
	const session = "mcp-session-3f9a1c77e0"
	s := openTest(t, Config{})
	r := newRegistry(t, s)
	ctx := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice", Session: session})
	calls := []struct{ tool, args string }{
		{"memory.remember", `{"content": "the deploy key lives in vault", "tags": ["ops"], "entities": ["vault"]}`},
		{"memory.remember", `{"content": "the deploy key lives in vault.", "tags": ["ops"]}`},
		{"memory.remember", `{"content": "met the auditors", "layer": "episodic", "session": "` + session + `"}`},
		{"memory.recall", `{"query": "deploy key", "session": "` + session + `"}`},
		{"memory.get", `{"id": 1}`},
		{"memory.update", `{"id": 3, "add_tags": ["audit"]}`},
		{"memory.stats", `{}`},
		{"memory.entity_upsert", `{"name": "vault", "type": "service"}`},
		{"memory.relate", `{"from": "alice", "to": "vault", "type": "uses"}`},
		{"memory.neighbors", `{"entity": "vault", "include_memories": true}`},
		{"memory.path", `{"from": "alice", "to": "vault"}`},
		{"memory.task_add", `{"content": "rotate the deploy key"}`},
		{"memory.task_list", `{}`},
		{"memory.task_update", `{"id": 4, "note": "soon"}`},
		{"memory.consolidate", `{"threshold": 0.9, "min_overlap": 0.5}`},
		{"memory.get", `{"id": SURVIVOR}`}, // with merged_from
		{"memory.forget", `{"ids": [3], "dry_run": true}`},
		{"workspace.write", `{"path": "notes.md", "data": "x"}`},
		{"workspace.read", `{"path": "notes.md"}`},
		{"workspace.list", `{}`},
		{"workspace.remove", `{"path": "notes.md"}`},
	}
	called := map[string]bool{}
	merged := false
	survivor := "0"
	for _, c := range calls {
		out, err := r.Call(ctx, c.tool, json.RawMessage(strings.ReplaceAll(c.args, "SURVIVOR", survivor)))
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.args, err)
		}
		called[c.tool] = true
		if strings.Contains(string(out), session) {
			t.Errorf("%s returned the session id: %s", c.tool, out)
		}
		if strings.Contains(string(out), "merged_from") {
			merged = true
		}
		if c.tool == "memory.consolidate" {
			var res memory.ConsolidateResult
			json.Unmarshal(out, &res)
			if len(res.Groups) == 1 {
				survivor = strconv.FormatInt(res.Groups[0].Survivor.ID, 10)
			}
		}
	}
	if !merged {
		t.Fatal("consolidation merged nothing; the merged_from shape went unchecked")
	}
	for _, cat := range []string{"memory", "workspace"} {
		for _, tl := range r.ListCategory(cat) {
			if !called[tl.Name] {
				t.Errorf("%s is not called here: add a case", tl.Name)
			}
		}
	}
	// The store keeps the session for itself and for exports.
	m, err := s.Get(ctx, 3)
	if err != nil || m.Session != session {
		t.Fatalf("stored session: %q %v", m.Session, err)
	}
}
