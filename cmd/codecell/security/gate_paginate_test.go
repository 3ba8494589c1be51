package security

import (
	"strings"
	"testing"
)

// TestGatePaginateBounded (issue 19, High 2): pages of 2 MB, linked
// forever, do not pile up in the server: they reach the program one at a
// time, and the pagination ends at its byte bound with an error that
// says what to change.
func TestGatePaginateBounded(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	rec := alice.run(`return (await tools.paginate(api.list_things, {kb: 2048}, {max: 100})).length`)
	if rec.Status != "error" || rec.Error.Code != "pagination_limit" || !strings.Contains(rec.Error.Message, "maxBytes") {
		t.Errorf("a pagination past its bytes: %.600s", rec.raw)
	}
	// Asked for more than the heap holds, the run fails in its sandbox,
	// not in the server.
	rec = alice.run(`return (await tools.paginate(api.list_things, {kb: 2048}, {max: 100, maxBytes: 250e6})).length`)
	if rec.Status != "error" {
		t.Errorf("200 MB of pages fit a 64 MiB heap: %.600s", rec.raw)
	}
	if n := len(api.got("GET /things")); n > 60 {
		t.Errorf("%d pages fetched for a 64 MiB heap", n)
	}
	if rss := peakRSS(s.cmd.Process.Pid); rss > 150<<20 {
		t.Errorf("the server's memory peaked at %d MiB: the pages piled up in it", rss>>20)
	}
	alice.normal()
}

// TestGatePaginateApproval (issue 19, High 8): with an operation named in
// approval.required_for, every way of paginating it asks first, and a
// declined page is not sent.
func TestGatePaginateApproval(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[approval]\nrequired_for = [\"api.search_things\"]\n"))
	u := &user{}
	alice := s.connect(t, aliceToken, u, "api", "vault")
	for _, code := range []string{
		`await api.paginate({tool: "search_things", args: {v: "x"}})`,
		`await tools.paginate(api.search_things, {v: "x"})`,
		`await tools.call("api.paginate", {tool: "api.search_things", args: {v: "x"}})`,
	} {
		_, m := u.seen()
		before := len(m)
		rec := alice.run(code)
		if rec.Status != "error" || rec.Error.Code != "approval_declined" {
			t.Errorf("%s: %.400s", code, rec.raw)
		}
		if _, asked := u.seen(); len(asked) != before+1 || !strings.Contains(asked[len(asked)-1], "api.search_things") {
			t.Errorf("%s: the user was not asked about api.search_things: %q", code, asked[before:])
		}
	}
	if got := api.got("POST /search"); len(got) != 0 {
		t.Errorf("declined pages were sent: %q", got)
	}
	alice.normal()
}

// TestGatePaginateFlow (issue 19, High 9): a data-flow rule holds for
// every page, whichever way the program paginates.
func TestGatePaginateFlow(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[[filter.rules]]\nfrom = \"vault.*\"\nto = \"api.search_things\"\n"))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	const get = `const s = await vault.get_secret(); `
	for _, code := range []string{
		get + `await api.paginate({tool: "search_things", args: {v: s.email}})`,
		get + `await tools.paginate(api.search_things, {v: "contact " + s.email})`,
		get + `await api.paginate({tool: "search_things", args: {v: s.email.toUpperCase()}, max: 5})`,
	} {
		rec := alice.run(code)
		if rec.Status != "error" || rec.Error.Code != "policy_violation" {
			t.Errorf("%s: %.400s", code, rec.raw)
		}
	}
	for _, r := range api.got("POST /search") {
		if strings.Contains(strings.ToLower(r), plantedEmail) {
			t.Errorf("the e-mail reached api.search_things: %s", r)
		}
	}
	// A value from elsewhere pages as before.
	if rec := alice.run(`(await tools.paginate(api.search_things, {v: "x"})).length`); rec.Status != "ok" || string(rec.Result) != "3" {
		t.Errorf("a pagination the rule allows: %.400s", rec.raw)
	}
	alice.normal()
}

// TestGatePaginateDryRun (issue 19, Medium): a dry run records a
// pagination of an operation that is not read-only instead of sending
// it, whichever way the program paginates.
func TestGatePaginateDryRun(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	for _, code := range []string{
		`return await tools.paginate(api.search_things, {v: "x"})`,
		`return await api.paginate({tool: "search_things", args: {v: "x"}})`,
	} {
		rec := alice.run(code, "mode", "plan")
		if rec.Status != "ok" || !strings.Contains(rec.raw, `"planned":true`) || !strings.Contains(rec.raw, `"tool":"api.search_things"`) {
			t.Errorf("%s: not recorded as a step: %.600s", code, rec.raw)
		}
	}
	if got := api.got("POST /search"); len(got) != 0 {
		t.Errorf("a dry run sent POSTs: %q", got)
	}
	// Reads page for real in a dry run.
	if rec := alice.run(`(await tools.paginate(api.list_things, {kb: 1}, {max: 3})).length`, "mode", "plan"); rec.Status != "ok" || string(rec.Result) != "3" {
		t.Errorf("a read in a dry run: %.400s", rec.raw)
	}
	alice.normal()
}

// TestGatePaginateMemoised: with a memo rule on the operation, each page
// is memoised as a page of its own — never the first page again, never
// the page's envelope for a plain call.
func TestGatePaginateMemoised(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[cache.memoize]\n\"api.list_things\" = \"5m\"\n"))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	const pages = `(await tools.paginate(api.list_things, {kb: 1}, {max: 3})).map(p => p.page)`
	for i := range 2 {
		if rec := alice.run(pages); rec.Status != "ok" || string(rec.Result) != "[1,2,3]" {
			t.Errorf("run %d: %.400s", i+1, rec.raw)
		}
	}
	if n := len(api.got("GET /things")); n != 3 {
		t.Errorf("%d pages fetched, want 3 (the second run from the memo)", n)
	}
	if rec := alice.run(`(await api.list_things({kb: 1}))[0].page`); rec.Status != "ok" || string(rec.Result) != "1" {
		t.Errorf("a plain call after the pages: %.400s", rec.raw)
	}
	alice.normal()
}

// TestGatePaginateCharged: every page is a tool call of the principal's
// rate limit, and a page refused by it fails with its own code.
func TestGatePaginateCharged(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""), "CODECELL_SANDBOX_MAX_TOOL_CALLS=10", "CODECELL_LIMITS_TOOL_CALL_BURST=10", "CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=10")
	alice := s.connect(t, aliceToken, &user{}, "api")
	const six = `(await tools.paginate(api.list_things, {kb: 1}, {max: 6})).length`
	if rec := alice.run(six); rec.Status != "ok" || string(rec.Result) != "6" {
		t.Fatalf("6 pages under a burst of 10: %.400s", rec.raw)
	}
	if rec := alice.run(six); rec.Status != "error" || rec.Error.Code != "rate_limited" {
		t.Errorf("12 pages under a burst of 10: %.400s", rec.raw)
	}
	if n := len(api.got("GET /things")); n > 11 {
		t.Errorf("%d pages sent under a burst of 10", n)
	}
}
