package security

import (
	"strings"
	"testing"
)

// TestTypeScriptParseIsBounded (issue 19, attack9 D10): esbuild parsed
// programs in the server, before the run had a deadline or a slot: a
// TypeScript run of "a<" (quadratic in esbuild's parser) went on for
// minutes past a 5 s deadline, and 100 KiB of "[" grew the server by
// hundreds of MiB. The parse now runs in a transform process, killed at
// the run's deadline, with a bounded stack; skills.save's check too.
func TestTypeScriptParseIsBounded(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "1")
	bob := s.open(t, bobToken)
	rec := bob.run(strings.Repeat("a<", 50000), "language", "typescript", "timeout_ms", 1000)
	if rec.Status != "error" || rec.Error == nil || rec.Error.Kind != "timeout" {
		t.Fatalf("a TypeScript run of a<: %.400s, want a timeout", rec.raw)
	}
	rec = bob.run(strings.Repeat("[", 100<<10), "language", "typescript")
	if rec.Error == nil || rec.Error.Kind != "syntax_error" || !strings.Contains(rec.Error.Message, "nests too deeply") {
		t.Fatalf("a TypeScript program of 100 KiB of [: %.400s", rec.raw)
	}
	rec = bob.run(`try { await skills.save({name: "deep", description: "d", code: "[".repeat(100 << 10), language: "typescript"}) } catch (e) { return e.message }`)
	if !strings.Contains(string(rec.Result), "nests too deeply") {
		t.Fatalf("skills.save of 100 KiB of [: %.400s", rec.raw)
	}
	s.open(t, aliceToken).normal()
}
