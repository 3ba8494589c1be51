package security

import (
	"strings"
	"testing"
)

// TestMemoryQuotas (issue 19, third round L11): a principal's memories
// and graph are bounded (memory.max_memories, max_graph_entities…); past
// the bound the program's call fails with quota_exceeded, naming the
// setting, and another principal is not affected.
func TestMemoryQuotas(t *testing.T) {
	t.Parallel()
	s := start(t, "CODECELL_MEMORY_MAX_MEMORIES=2", "CODECELL_MEMORY_MAX_GRAPH_ENTITIES=2")
	alice, bob := s.open(t, aliceToken), s.open(t, bobToken)
	rec := alice.run(`for (const c of ["one", "two", "three"]) await memory.remember({content: "note " + c}); return 1`)
	if rec.Error == nil || rec.Error.Code != "quota_exceeded" || !strings.Contains(rec.Error.Message, "memory.max_memories") {
		t.Fatalf("a third memory past memory.max_memories = 2: %.600s", rec.raw)
	}
	rec = alice.run(`for (const n of ["a", "b", "c"]) await memory.entity_upsert({name: n}); return 1`)
	if rec.Error == nil || rec.Error.Code != "quota_exceeded" || !strings.Contains(rec.Error.Message, "memory.max_graph_entities") {
		t.Fatalf("a third entity past memory.max_graph_entities = 2: %.600s", rec.raw)
	}
	if rec := bob.run(`await memory.remember({content: "bob's own"}); await memory.entity_upsert({name: "x"}); return 1`); rec.Status != "ok" {
		t.Fatalf("another principal's writes: %.600s", rec.raw)
	}
}
