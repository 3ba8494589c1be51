package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// testReadProvenance (issue 19, attack18 K2–K6): every value a program
// reads from the store comes back with the provenance of the data it
// came from — through every tool that reads the store, and through every
// write that keeps part of a stored value — so that a data-flow rule on
// those sources still stops it in a later session. Found by an attacker,
// each a way around the rule crm.* → http.*: consolidation gave a
// survivor its members' metadata and tags but not their provenance; an
// update replaced the stored provenance with its own; consolidate's
// report (a dry run too), stats' top tags and the skills listing showed
// stored text with none.
//
// The sources are read as the server reads them (storedProvenance in
// mcpserver/engine): every "provenance" field of a tool's result, joined.
func testReadProvenance(t *testing.T, open Opener) {
	st, _ := open(t)
	r := tools.NewRegistry()
	if err := memory.RegisterTools(r, st.ToolSet()); err != nil {
		t.Fatal(err)
	}
	alice := as(t.Context(), "alice")
	from := func(p string) context.Context { return memory.WithProvenance(alice, json.RawMessage(p)) }
	call := func(ctx context.Context, tool, args string) json.RawMessage {
		t.Helper()
		out, err := r.Call(ctx, tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s(%s): %v", tool, args, err)
		}
		return out
	}
	// has fails unless the provenance fields of out name every source.
	has := func(what string, out json.RawMessage, sources ...string) {
		t.Helper()
		got := resultSources(out)
		for _, s := range sources {
			if !slices.Contains(got, s) {
				t.Errorf("%s: the result names the sources %q, not %q: %.600s", what, got, s, out)
			}
		}
	}
	const crm, jira = `["crm.get_contact"]`, `["jira.get_ticket"]`

	// A plain memory, and its near-duplicate written from crm with the
	// contact's address in its metadata, a tag and an entity.
	var plain, fromCRM memory.Memory
	if err := json.Unmarshal(call(alice, "memory.remember", `{"content": "customer follow up note", "importance": 0.9}`), &plain); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(call(from(crm), "memory.remember", `{"content": "customer follow up note", "importance": 0.1,
		"metadata": {"contact": "ann@example.com"}, "tags": ["t-ann"], "entities": ["ann@example.com"]}`), &fromCRM); err != nil {
		t.Fatal(err)
	}
	call(alice, "memory.relate", `{"from": "plain-entity", "to": "ann@example.com", "type": "knows"}`)
	call(from(crm), "memory.task_add", `{"content": "call ann@example.com back"}`)
	call(from(crm), "workspace.write", `{"path": "ann@example.com.txt", "data": "ann"}`)

	// Read in a later session, which has read nothing.
	id := func(m memory.Memory) string { b, _ := json.Marshal(m.ID); return string(b) }
	for _, c := range []struct{ what, tool, args string }{
		{"recall", "memory.recall", `{"query": "customer follow up note"}`},
		{"get", "memory.get", `{"id": ` + id(fromCRM) + `}`},
		{"stats' top tags", "memory.stats", `{}`},
		{"consolidate's dry run", "memory.consolidate", `{"dry_run": true, "threshold": 0.5, "min_overlap": 0}`},
		{"neighbors", "memory.neighbors", `{"entity": "plain-entity"}`},
		{"path", "memory.path", `{"from": "plain-entity", "to": "ann@example.com"}`},
		{"path of one entity", "memory.path", `{"from": "ann@example.com", "to": "ann@example.com"}`},
		{"task_list", "memory.task_list", `{}`},
		{"workspace.list", "workspace.list", `{}`},
		{"workspace.read", "workspace.read", `{"path": "ann@example.com.txt"}`},
	} {
		has(c.what, call(alice, c.tool, c.args), "crm.get_contact")
	}

	// Skills: the listing shows a description saved from crm.
	if _, err := st.SaveSkill(from(crm), memory.Skill{Name: "contact_note", Description: "Contact VP of Sales", Code: "return 1"}); err != nil {
		t.Fatal(err)
	}
	page, err := st.ListCallableSkills(alice, memory.SkillQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(page)
	has("skills listing", out, "crm.get_contact")
	if _, err := st.PublishSkill(alice, "contact_note"); err != nil {
		t.Fatal(err)
	}
	page, err = st.ListCallableSkills(as(t.Context(), "bob"), memory.SkillQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(page)
	has("published skills listing", out, "crm.get_contact")

	// An update joins its sources to the stored ones: what it leaves of
	// the memory (the content, the metadata keys it does not touch) is
	// still crm's.
	has("update from jira", call(from(jira), "memory.update", `{"id": `+id(fromCRM)+`, "merge_metadata": {"ticket": "OPS-142"}}`),
		"crm.get_contact", "jira.get_ticket")
	has("update with no sources", call(alice, "memory.update", `{"id": `+id(fromCRM)+`, "importance": 0.2}`),
		"crm.get_contact", "jira.get_ticket")
	var tasks struct{ Tasks []memory.Task }
	if err := json.Unmarshal(call(alice, "memory.task_list", `{}`), &tasks); err != nil || len(tasks.Tasks) != 1 {
		t.Fatalf("tasks %+v: %v", tasks, err)
	}
	has("task note from jira", call(from(jira), "memory.task_update", `{"id": `+id(tasks.Tasks[0].Memory)+`, "note": "OPS-142"}`),
		"crm.get_contact", "jira.get_ticket")

	// Consolidation: the plain memory survives (by importance) and gains
	// the crm one's metadata and tags, and its provenance.
	res := call(alice, "memory.consolidate", `{"threshold": 0.5, "min_overlap": 0}`)
	if !strings.Contains(string(res), `"merged":1`) {
		t.Fatalf("consolidate = %s, want one merged", res)
	}
	survivor := call(alice, "memory.get", `{"id": `+id(plain)+`}`)
	if !strings.Contains(string(survivor), "ann@example.com") {
		t.Fatalf("survivor %s did not gain the merged memory's metadata", survivor)
	}
	var sv memory.Memory
	if err := json.Unmarshal(survivor, &sv); err != nil {
		t.Fatal(err)
	}
	// The survivor's own provenance, not only merged_from's records.
	has("consolidated survivor", json.RawMessage(`{"provenance":`+string(sv.Provenance)+`}`), "crm.get_contact", "jira.get_ticket")
	has("recall of the survivor", call(alice, "memory.recall", `{"query": "customer follow up note"}`), "crm.get_contact")
}

// resultSources is the union of the "provenance" fields (arrays of
// source names) anywhere in out, sorted.
func resultSources(out json.RawMessage) []string {
	var got []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "provenance" {
					if a, ok := e.([]any); ok {
						for _, s := range a {
							if s, ok := s.(string); ok && !slices.Contains(got, s) {
								got = append(got, s)
							}
						}
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if json.Unmarshal(out, &v) == nil {
		walk(v)
	}
	slices.Sort(got)
	return got
}
