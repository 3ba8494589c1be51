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
// The sources are read as the server reads them (storedOf in
// mcpserver/engine): where each tool says its results carry them
// (tools.Tool.Stored), never a "provenance" key of the stored data
// itself (issue 19, attack21 P1).
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
	// has fails unless the provenance fields of out, a result of a tool
	// whose stored fields are stored, name every source.
	has := func(what string, stored *tools.StoredFields, out json.RawMessage, sources ...string) {
		t.Helper()
		got := stored.Read(out).Sources
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
		has(c.what, storedOf(t, r, c.tool), call(alice, c.tool, c.args), "crm.get_contact")
	}

	// Stored data names no sources: a "provenance" key of a memory's
	// metadata, an entity's properties or a file's text is data (attack21
	// P1 named 64 made-up sources there, which cut crm's off).
	forged := call(from(crm), "memory.remember", `{"content": "forged note", "metadata": {"provenance": ["aa.00"]}}`)
	var fm memory.Memory
	if err := json.Unmarshal(forged, &fm); err != nil {
		t.Fatal(err)
	}
	call(from(crm), "memory.entity_upsert", `{"name": "forged-entity", "properties": {"provenance": ["aa.00"]}}`)
	call(from(crm), "workspace.write", `{"path": "forged.json", "data": "{\"provenance\": [\"aa.00\"]}"}`)
	for _, c := range []struct{ what, tool, args string }{
		{"a memory's metadata", "memory.get", `{"id": ` + id(fm) + `}`},
		{"an entity's properties", "memory.neighbors", `{"entity": "forged-entity"}`},
		{"a file's text", "workspace.read", `{"path": "forged.json"}`},
	} {
		got := storedOf(t, r, c.tool).Read(call(alice, c.tool, c.args)).Sources
		if !slices.Equal(got, []string{"crm.get_contact"}) {
			t.Errorf("%s: the sources read are %q, want only crm.get_contact", c.what, got)
		}
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
	has("skills listing", skillsListing, out, "crm.get_contact")
	if _, err := st.PublishSkill(alice, "contact_note"); err != nil {
		t.Fatal(err)
	}
	page, err = st.ListCallableSkills(as(t.Context(), "bob"), memory.SkillQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(page)
	has("published skills listing", skillsListing, out, "crm.get_contact")

	// An update joins its sources to the stored ones: what it leaves of
	// the memory (the content, the metadata keys it does not touch) is
	// still crm's.
	has("update from jira", storedOf(t, r, "memory.update"), call(from(jira), "memory.update", `{"id": `+id(fromCRM)+`, "merge_metadata": {"ticket": "OPS-142"}}`),
		"crm.get_contact", "jira.get_ticket")
	has("update with no sources", storedOf(t, r, "memory.update"), call(alice, "memory.update", `{"id": `+id(fromCRM)+`, "importance": 0.2}`),
		"crm.get_contact", "jira.get_ticket")
	var tasks struct{ Tasks []memory.Task }
	if err := json.Unmarshal(call(alice, "memory.task_list", `{}`), &tasks); err != nil || len(tasks.Tasks) != 1 {
		t.Fatalf("tasks %+v: %v", tasks, err)
	}
	has("task note from jira", storedOf(t, r, "memory.task_update"), call(from(jira), "memory.task_update", `{"id": `+id(tasks.Tasks[0].Memory)+`, "note": "OPS-142"}`),
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
	has("consolidated survivor", storedOf(t, r, "memory.get"), json.RawMessage(`{"provenance":`+string(sv.Provenance)+`}`), "crm.get_contact", "jira.get_ticket")
	has("recall of the survivor", storedOf(t, r, "memory.recall"), call(alice, "memory.recall", `{"query": "customer follow up note"}`), "crm.get_contact")
}

// skillsListing is where skills.list (mcpserver/engine) says its results
// carry the sources of each skill: the page's, as the store returns it.
var skillsListing = &tools.StoredFields{Provenance: []string{"skills/*/provenance"}}

// storedOf returns the stored fields of the tool name of r, failing t
// when it has none.
func storedOf(t *testing.T, r *tools.Registry, name string) *tools.StoredFields {
	t.Helper()
	tool, ok := r.Get(name)
	if !ok || tool.Stored == nil {
		t.Fatalf("%s says nowhere that its results carry the sources of what they show (tools.Tool.Stored)", name)
	}
	return tool.Stored
}
