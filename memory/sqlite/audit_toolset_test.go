package sqlite

import (
	"testing"

	"github.com/codecell/codecell/memory"
)

// TestAuditToolset keeps the toolset a run had, in listings and in the
// record of one run, and leaves it empty for a run that reached every
// tool.
func TestAuditToolset(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	for _, e := range []memory.Execution{
		{ID: "all", Principal: "alice", Status: "ok"},
		{ID: "ro", Principal: "bob", Status: "ok", Toolset: "ts-0123456789ab", ToolsetDescription: "allow memory.*; read_only"},
	} {
		if err := s.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListExecutions(ctx, memory.ExecutionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]memory.Execution{}
	for _, e := range list {
		got[e.ID] = e
	}
	if e := got["all"]; e.Toolset != "" || e.ToolsetDescription != "" {
		t.Errorf("a run with every tool: toolset %q %q", e.Toolset, e.ToolsetDescription)
	}
	if e := got["ro"]; e.Toolset != "ts-0123456789ab" || e.ToolsetDescription != "allow memory.*; read_only" {
		t.Errorf("listed: toolset %q %q", e.Toolset, e.ToolsetDescription)
	}
	e, _, err := s.GetExecution(ctx, "ro")
	if err != nil || e.Toolset != "ts-0123456789ab" || e.ToolsetDescription != "allow memory.*; read_only" {
		t.Errorf("get: toolset %q %q, %v", e.Toolset, e.ToolsetDescription, err)
	}
}
