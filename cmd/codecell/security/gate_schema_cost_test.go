package security

import (
	"strings"
	"testing"
)

// TestSchemaValidationIsBounded (issue 19, a8): any principal's program
// writes a skill's inputSchema (and llm.extract's schema, which checks a
// model's answer through the same tools.Schema); one whose anyOf
// branches refer to the same definition, level after level, made
// validating one call's arguments take 2^n steps in the server, long past
// the run's deadline. Such a validation is refused as invalid arguments
// that say why, before the work is done.
func TestSchemaValidationIsBounded(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	const defs = `const defs = {a0: {type: "string"}};
for (let i = 1; i <= 24; i++) defs["a" + i] = {anyOf: [{$ref: "#/$defs/a" + (i-1)}, {$ref: "#/$defs/a" + (i-1), title: "x"}]};
const schema = {type: "object", properties: {v: {$ref: "#/$defs/a24"}}, $defs: defs};
`
	if rec := bob.run(defs + `await skills.save({name: "bomb", description: "b", code: "return 1", inputSchema: schema}); 1`); rec.Status != "ok" {
		t.Fatalf("save: %s", rec.raw)
	}
	rec := bob.run(`try { await skills.bomb({v: 1}); return "called" } catch (e) { return e.code + ": " + e.message }`, "timeout_ms", 20000)
	if got := string(rec.Result); !strings.Contains(got, "invalid_arguments") || !strings.Contains(got, "steps") {
		t.Errorf("the skill's arguments: %.600s", rec.raw)
	}
	// A skill whose schema validates in few steps still runs.
	if rec := bob.run(`await skills.save({name: "fine", description: "f", code: "return args.v", inputSchema: {type: "object", properties: {v: {anyOf: [{type: "string"}, {type: "integer"}]}}}}); await skills.fine({v: 2})`); string(rec.Result) != "2" {
		t.Errorf("an ordinary skill: %.600s", rec.raw)
	}
	bob.normal()
}
