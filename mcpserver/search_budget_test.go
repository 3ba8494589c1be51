package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestDiscoveryBudget: search_tools and read_tools answer within the
// response budget, or the one a call asks for (budget_bytes, at most
// the largest allowed): fewer hits, cut at a declaration, each saying
// what was left out and where the rest is.
func TestDiscoveryBudget(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Budget: 16 << 10, MaxBudget: 64 << 10})
	for i := range 12 {
		props := map[string]any{}
		for j := range 400 {
			props[fmt.Sprintf("field_%d", j)] = map[string]any{"type": "string", "description": "A field of the ledger entry, described at length."}
		}
		out, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
		if err := srv.Registry().Register(tools.Tool{Name: fmt.Sprintf("ledger.entry_%02d", i), Summary: "Read a ledger entry.",
			Description: "Read a ledger entry. " + strings.Repeat("It returns every field. ", 20), OutputSchema: out,
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }}); err != nil {
			t.Fatal(err)
		}
	}
	c := start(t, transports[0].connect(t, srv))
	for _, tt := range []struct {
		tool   string
		args   map[string]any
		budget int
		want   []string
	}{
		{"search_tools", map[string]any{"query": "ledger entry", "detail": "signature", "limit": 12}, 16 << 10,
			[]string{"more hits left out to fit 16384 bytes: ledger.entry_", "left out to fit", `read_tools {"path": "/ledger/entry_00.d.ts"} gives all of ledger.entry_00, in pages`}},
		{"search_tools", map[string]any{"query": "ledger entry", "detail": "full", "limit": 12}, 16 << 10, []string{"more hits left out"}},
		{"search_tools", map[string]any{"query": "ledger entry", "detail": "full", "limit": 12, "budget_bytes": 40000}, 40000, []string{"left out to fit", "gives all of ledger.entry_"}},
		{"search_tools", map[string]any{"query": "ledger entry", "detail": "signature", "budget_bytes": 1024}, 6 << 10, nil},
		{"read_tools", map[string]any{"path": "/ledger/entry_03.md"}, 16 << 10, []string{`read_tools {"path": "/ledger/entry_03.md", "offset": `}},
		{"read_tools", map[string]any{"path": "/ledger/entry_03.d.ts", "budget_bytes": 8192}, 8192, []string{`read_tools {"path": "/ledger/entry_03.d.ts", "offset": `}},
		{"read_tools", map[string]any{"path": "/ledger/entry_03.d.ts", "budget_bytes": 64 << 10}, 64 << 10, nil},
	} {
		res := callTool(t, c, tt.tool, tt.args)
		got := text(res)
		if res.IsError {
			t.Errorf("%s %v: %s", tt.tool, tt.args, got)
			continue
		}
		if len(got) > tt.budget {
			t.Errorf("%s %v: %d bytes, budget %d", tt.tool, tt.args, len(got), tt.budget)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %v lacks %q:\n%.2000s", tt.tool, tt.args, w, got)
			}
		}
	}
	// A listing pages too, and an offset outside a file says so.
	if res := callTool(t, c, "read_tools", map[string]any{"path": "/ledger/entry_03.d.ts", "offset": 1 << 30}); !res.IsError || !strings.Contains(text(res), "is outside") {
		t.Errorf("an offset past the end: %s", text(res))
	}
}
