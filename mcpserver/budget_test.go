package mcpserver_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// TestRecordWithinBudget checks what hosts hand the model: the
// serialized structuredContent (which is also the text content) stays
// within the response budget whatever the program returns, prints or
// throws, and says what it measured.
func TestRecordWithinBudget(t *testing.T) {
	t.Parallel()
	srv, _ := storeServer(t, filepath.Join(t.TempDir(), "db"))
	c := start(t, transports[0].connect(t, srv))
	cases := []struct {
		name   string
		code   string
		budget int // 0: the default, 16 KiB
		kind   executor.Kind
	}{
		{name: "3000 rows", code: `Array.from({length: 3000}, (_, i) => ({id: i, name: "item " + i, tags: ["a", "b"], email: "user" + i + "@example.com"}))`},
		{name: "a 4 MB error message", code: `throw new Error("e".repeat(4*1024*1024))`, kind: executor.KindRuntime},
		{name: "a thrown string", code: `throw "s".repeat(5*1024*1024)`, kind: executor.KindRuntime},
		{name: "a tool error quoting a huge argument", code: `await util.echo({text: 7, extra: "x".repeat(1 << 20)})`, kind: executor.KindTool},
		{name: "console flood within the limits", code: `for (let i = 0; i < 900; i++) console.log("line " + i + " " + "y".repeat(60)); 1`},
		{name: "many calls with details", code: `for (let i = 0; i < 300; i++) await util.echo({text: "" + i}); "done"`},
		{name: "a tiny budget", code: `Array.from({length: 100}, (_, i) => i)`, budget: 1024},
		{name: "a tiny budget and an error", code: `throw new Error("z".repeat(10000))`, budget: 1024, kind: executor.KindRuntime},
		{name: "a long unknown tool name", code: `await tools.call("x".repeat(100000), {})`, kind: executor.KindTool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"code": tc.code, "timeout_ms": 60000, "details": strings.Contains(tc.name, "details")}
			budget := 16 << 10
			if tc.budget > 0 {
				args["budget_bytes"] = tc.budget
				budget = tc.budget
			}
			before := ledger(t, c)
			res, rec := execute(t, c, args)
			// The text content is the record as the server serialized it
			// (an in-process client hands structuredContent over decoded).
			txt := text(res)
			if len(txt) > budget {
				t.Errorf("the record is %d bytes, over the %d-byte budget: %.300s", len(txt), budget, txt)
			}
			var fromText, fromStructured any
			structured, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal([]byte(txt), &fromText)
			json.Unmarshal(structured, &fromStructured)
			if !reflect.DeepEqual(fromText, fromStructured) {
				t.Errorf("the text content is not the serialized record:\n%.200s\n%.200s", txt, structured)
			}
			// The ledger counts what the host hands the model.
			if got := ledger(t, c).ToModelBytes - before.ToModelBytes; got != len(txt) {
				t.Errorf("the ledger counted %d bytes to the model, want %d", got, len(txt))
			}
			if tc.kind == "" && (res.IsError || rec.Status != executor.StatusOK) {
				t.Fatalf("run failed: %.500s", structured)
			}
			if tc.kind != "" && (rec.Error == nil || rec.Error.Kind != tc.kind) {
				t.Fatalf("error %+v, want kind %s", rec.Error, tc.kind)
			}
		})
	}
}

// ledger reads the session's running totals.
func ledger(t *testing.T, c *client.Client) engine.Totals {
	t.Helper()
	var totals engine.Totals
	if err := json.Unmarshal([]byte(readResource(t, c, mcpserver.LedgerURI)), &totals); err != nil {
		t.Fatal(err)
	}
	return totals
}
