package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestErrorTextFollowed (issue 19, attack25 F11): a tool's error reaches
// the program as its ToolError's message, and the run's data flow never
// observed it (the observer followed results only): crm's "contact
// ann@example.com is locked", caught and posted, passed crm.* → http.*.
// What an error carries is now followed as a result is.
func TestErrorTextFollowed(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := reg.Register(
		tools.Tool{Name: "crm.get_contact", Summary: "A fixture that refuses.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &tools.Error{Code: "locked", Message: "contact ann@example.com of Regional VP of Procurement is locked"}
		}},
		tools.Tool{Name: "http.post", Summary: "A fixture.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"v": {"type": "string"}}}`), Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"status": 200}`), nil
		}},
	); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Rules: []filter.Rule{{From: "crm.*", To: "http.*"}}}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cl := start(t, transports[0].connect(t, srv))
	const caught = `let m = ""; try { await crm.get_contact({}) } catch (e) { m = e.message } if (!m.includes("ann@example.com")) throw new Error("no text: " + m);`
	for _, expr := range []string{`m`, `m.toUpperCase()`} {
		res, rec := execute(t, cl, map[string]any{"code": caught + ` await http.post({v: ` + expr + `}); return "SENT"`})
		if rec == nil || rec.Error == nil || rec.Error.Code != "policy_violation" {
			t.Errorf("%s: the text of crm's error was not stopped by crm.* → http.*: %s", expr, text(res))
		}
	}
	// Control: what the error carries of no source passes.
	res, rec := execute(t, cl, map[string]any{"code": `let m = ""; try { await crm.get_contact({}) } catch (e) { m = e.code } await http.post({v: m}); return "SENT"`})
	if rec == nil || string(rec.Result) != `"SENT"` {
		t.Errorf("control: the error's code was stopped: %s", text(res))
	}
}
