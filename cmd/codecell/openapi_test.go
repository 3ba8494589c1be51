package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
)

// openAPISpec is a slice of GitHub's REST API, shared with tools/openapi's
// tests.
var openAPISpec = filepath.Join("..", "..", "testdata", "openapi", "api.yaml")

// apiSecret is the token the OpenAPI source sends; nothing a client sees
// or the log holds may contain it.
const apiSecret = "ghp_e2eSecretTokenNeverShown0123"

// localAPI serves the operations of testdata/openapi/api.yaml that the
// tests call, and counts requests and what authenticated them.
type localAPI struct {
	*httptest.Server
	foreign *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD path?query auth"
}

func newLocalAPI(tb testing.TB) *localAPI {
	tb.Helper()
	a := &localAPI{}
	a.foreign = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.note(r)
		io.WriteString(w, `{"foreign":true}`)
	}))
	tb.Cleanup(a.foreign.Close)
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	tb.Cleanup(a.Close)
	return a
}

func (a *localAPI) note(r *http.Request) {
	auth := "no-auth"
	if r.Header.Get("Authorization") == "Bearer "+apiSecret {
		auth = "auth"
	}
	a.mu.Lock()
	a.requests = append(a.requests, fmt.Sprintf("%s %s?%s %s", r.Method, r.URL.Path, r.URL.RawQuery, auth))
	a.mu.Unlock()
}

func (a *localAPI) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

func (a *localAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.note(r)
	w.Header().Set("Content-Type", "application/json")
	switch p := r.URL.Path; {
	case p == "/repos/octo/hello/issues":
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		if page < 3 {
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?per_page=2&page=%d>; rel="next"`, a.URL, p, page+1))
		}
		var out []map[string]any
		for i := 1; i <= 2; i++ {
			n := (page-1)*2 + i
			out = append(out, map[string]any{"number": n, "title": fmt.Sprintf("Issue %d", n), "state": "open",
				"user": map[string]any{"login": "mona", "email": "mona.lisa@example.com"}})
		}
		json.NewEncoder(w).Encode(out)
	case p == "/repos/octo/hello":
		io.WriteString(w, `{"id":1,"full_name":"octo/hello","owner":{"login":"octo"}}`)
	case strings.HasPrefix(p, "/repos/"):
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
	case p == "/rate_limited":
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"message":"API rate limit exceeded"}`)
	case p == "/moved":
		http.Redirect(w, r, a.foreign.URL+"/elsewhere", http.StatusFound)
	case p == "/echo":
		json.NewEncoder(w).Encode(map[string]any{"authorization": r.Header.Get("Authorization")})
	default:
		io.WriteString(w, `{}`)
	}
}

// openAPIServer starts the binary over stdio with the source gh, the
// slice of GitHub's API, served by a, and waits until its tools are
// registered. It returns the client and the server's log.
func openAPIServer(tb testing.TB, a *localAPI, extraEnv []string, args ...string) (*client.Client, *lockedBuffer) {
	tb.Helper()
	spec, err := filepath.Abs(openAPISpec)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := filepath.Join(tb.TempDir(), "codecell.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[openapi.gh]
spec = %q
base_url = %q
auth = { type = "bearer", token_env = "GH_E2E_TOKEN" }
`, spec, a.URL)), 0o600)
	env := append(append(dataDir(tb), "GH_E2E_TOKEN="+apiSecret), extraEnv...)
	c, err := client.NewStdioMCPClient(binary, env, append([]string{"serve", "--config", cfg}, args...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	logs := &lockedBuffer{}
	if r, ok := client.GetStderr(c); ok {
		go io.Copy(logs, r)
	}
	initialize(tb, c)
	deadline := time.Now().Add(20 * time.Second)
	for {
		// While it loads, gh is a namespace without tools.
		_, rec, _ := callExecute(tb, c, map[string]any{"code": "Object.keys(gh).length > 0"})
		if string(rec.Result) == `true` {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the source gh did not load:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c, logs
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOpenAPIEndToEnd drives an OpenAPI source through the built binary
// with an MCP client, as an agent would: programs in execute_code call
// the API of a local server, page through it, meet its errors, and never
// see the token the server gets; the filter tokenises what the API
// returns; the log has every request and never the token.
func TestOpenAPIEndToEnd(t *testing.T) {
	t.Parallel()
	a := newLocalAPI(t)
	data := t.TempDir()
	c, logs := openAPIServer(t, a, []string{"CODECELL_SERVER_DATA_DIR=" + data})
	tests := []struct {
		name, code string
		result     string // the result, exactly; "" to skip
		contains   []string
		lacks      []string
	}{
		{name: "pages of a list", code: "const issues = await tools.paginate(gh.issues_list_for_repo, {owner: 'octo', repo: 'hello'}, {max: 500});\nreturn issues.map(i => i.number)",
			result: "[1,2,3,4,5,6]"},
		{name: "a 404 with the API's error", code: "try { await gh.repos_get({owner: 'octo', repo: 'nope'}) } catch (e) { return [e instanceof ToolError, e.code, e.message] }",
			result: `[true,"http_404","gh.repos_get: GET /repos/{owner}/{repo}: HTTP 404 Not Found: {\"message\":\"Not Found\",\"documentation_url\":\"https://docs.github.com/rest\"}"]`},
		{name: "a 429 with Retry-After", code: "try { await gh.rate_limited({}) } catch (e) { return [e.code, e.message] }",
			result: `["http_429","gh.rate_limited: GET /rate_limited: HTTP 429 Too Many Requests; the API asks to retry after 30s: {\"message\":\"API rate limit exceeded\"}"]`},
		{name: "a redirect to a foreign host", code: "try { await gh.moved({}) } catch (e) { return e.code }", result: `"redirect_refused"`},
		{name: "the filter tokenises what the API returns", code: "(await gh.issues_list_for_repo({owner: 'octo', repo: 'hello'}))[0].user",
			contains: []string{`"login":"mona"`, "⟦email:"}, lacks: []string{"mona.lisa@example.com"}},
		{name: "an echoed token never reaches the program", code: "await gh.echo({})", contains: []string{"redacted"}},
		{name: "the program cannot read the token", code: "JSON.stringify([Object.getOwnPropertyNames(globalThis), Object.keys(gh).length, String(gh.repos_get)])",
			lacks: []string{apiSecret, "GH_E2E_TOKEN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isErr, rec, txt := callExecute(t, c, map[string]any{"code": tc.code})
			if isErr {
				t.Fatalf("run failed: %s", txt)
			}
			if tc.result != "" && string(rec.Result) != tc.result {
				t.Errorf("result\n got %s\nwant %s", rec.Result, tc.result)
			}
			all, _ := json.Marshal(rec)
			for _, s := range tc.contains {
				if !strings.Contains(string(rec.Result), s) {
					t.Errorf("result %s lacks %q", rec.Result, s)
				}
			}
			for _, s := range append(tc.lacks, apiSecret) {
				if strings.Contains(txt, s) || strings.Contains(string(all), s) {
					t.Errorf("the response holds %q: %s", s, txt)
				}
			}
		})
	}
	// Every request carried the token, and the foreign host got none.
	for _, r := range a.seen() {
		if !strings.HasSuffix(r, " auth") || strings.Contains(r, "/elsewhere") {
			t.Errorf("request %s", r)
		}
	}
	if n := len(a.seen()); n != 3+1+1+1+1+1 {
		t.Errorf("%d requests: %v (the 429 is not retried: its wait does not fit the deadline)", n, a.seen())
	}
	// The tree documents the tools and never the token.
	for _, p := range []string{"/gh/index.json", "/gh/issues_list_for_repo.md", "/gh/paginate.d.ts"} {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_tools"
		req.Params.Arguments = map[string]any{"path": p}
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("read_tools %s: %v %+v", p, err, res)
		}
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), apiSecret) || !strings.Contains(string(b), "gh") {
			t.Errorf("read_tools %s: %s", p, b)
		}
	}
	// The log has each request — method, host, status — and never the token.
	time.Sleep(100 * time.Millisecond) // the last lines of stderr
	log := logs.String()
	host := strings.TrimPrefix(a.URL, "http://")
	for _, want := range []string{
		`msg="http request" component=openapi principal=local tool=gh.issues_list_for_repo method=GET host=` + host + ` status=200`,
		`tool=gh.repos_get method=GET host=` + host + ` status=404`,
		`tool=gh.rate_limited method=GET host=` + host + ` status=429`,
		`tool=gh.moved method=GET host=` + host + ` status=0 error=redirect_refused`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, apiSecret) {
		t.Error("the log holds the token")
	}
	// The audit log has every request with its run: method, host, status.
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(data, "codecell.db"), ReadOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var audited []string
	for range 50 { // the audit log is written off the request's path
		audited = audited[:0]
		execs, err := st.ListExecutions(t.Context(), memory.ExecutionQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range execs {
			reqs, err := st.HTTPRequests(t.Context(), e.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reqs {
				audited = append(audited, fmt.Sprintf("%s %s %s %d %s", r.Tool, r.Method, r.Host, r.Status, r.Error))
			}
		}
		if len(audited) >= 6 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := strings.Join(audited, "\n")
	for _, want := range []string{
		"gh.repos_get GET " + host + " 404 ",
		"gh.rate_limited GET " + host + " 429 ",
		"gh.moved GET " + host + " 0 redirect_refused",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, apiSecret) {
		t.Error("the audit log holds the token")
	}
}

// TestOpenAPISourceUnavailable: a source whose credential's variable is
// unset, or whose document cannot be read, is unavailable with the reason
// — in the manifest, its index and the log, and its calls fail with it —
// and the server serves the rest: another source's calls, the built-in
// tools. config check warns about the credential, naming the variable,
// and succeeds. (codecell used to exit with status 2 when a source's
// token_env was unset, which a host shows only as "server disconnected".)
func TestOpenAPISourceUnavailable(t *testing.T) {
	t.Parallel()
	a := newLocalAPI(t)
	spec, _ := filepath.Abs(openAPISpec)
	cfg := filepath.Join(t.TempDir(), "codecell.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[openapi.gh]
spec = %[1]q
base_url = %[2]q
auth = { type = "bearer", token_env = "GH_E2E_TOKEN" }

[openapi.nokey]
spec = %[1]q
base_url = %[2]q
auth = { type = "bearer", token_env = "NOKEY_E2E_UNSET_TOKEN" }

[openapi.broken]
spec = "no-such-file.yaml"
`, spec, a.URL)), 0o600)

	check := exec.Command(binary, "config", "check", "--config", cfg)
	check.Env = append(os.Environ(), "GH_E2E_TOKEN="+apiSecret)
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# Warning: [openapi.nokey] will be unavailable: auth.token_env names NOKEY_E2E_UNSET_TOKEN, empty or unset in this environment; set NOKEY_E2E_UNSET_TOKEN") {
		t.Errorf("config check: %v\n%s", err, out)
	}

	c, err := client.NewStdioMCPClient(binary, append(dataDir(t), "GH_E2E_TOKEN="+apiSecret), "serve", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	logs := &lockedBuffer{}
	if r, ok := client.GetStderr(c); ok {
		go io.Copy(logs, r)
	}
	initialize(t, c)
	if isErr, rec, txt := callExecute(t, c, map[string]any{"code": "[Object.keys(broken).length, Object.keys(nokey).length, (await util.echo({text: 'up'})).text]"}); isErr || string(rec.Result) != `[0,0,"up"]` {
		t.Fatalf("%s", txt)
	}
	waitFor(t, 20*time.Second, func() bool {
		_, rec, _ := callExecute(t, c, map[string]any{"code": "try { return (await gh.repos_get({owner: 'octo', repo: 'hello'})).full_name } catch (e) { return e.code }"})
		return string(rec.Result) == `"octo/hello"`
	})
	read := func(p string) string {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_tools"
		req.Params.Arguments = map[string]any{"path": p}
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("read_tools %s: %v %+v", p, err, res)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(read("/manifest.json"), `"broken"`) })
	manifest := read("/manifest.json")
	for _, want := range []string{
		`"nokey":"0 tools, unavailable (credential unset: NOKEY_E2E_UNSET_TOKEN;`,
		`"broken":"0 tools, unavailable (document not found: no-such-file.yaml;`,
		`"gh":"`,
	} {
		if !strings.Contains(manifest, want) {
			t.Errorf("manifest lacks %s:\n%s", want, manifest)
		}
	}
	if ix := read("/nokey/index.json"); !strings.Contains(ix, `"status":"unavailable"`) || !strings.Contains(ix, "or disable [openapi.nokey]") {
		t.Errorf("nokey/index.json:\n%s", ix)
	}
	if log := logs.String(); !strings.Contains(log, "source=broken") || !strings.Contains(log, "document not found: no-such-file.yaml") ||
		!strings.Contains(log, "source=nokey") || strings.Contains(log, apiSecret) {
		t.Errorf("log:\n%s", log)
	}
	_, rec, txt := callExecute(t, c, map[string]any{"code": "await broken.list_things({})"})
	if rec.Error == nil || rec.Error.Code != "unavailable" || !strings.Contains(rec.Error.Message, "broken is unavailable: ") || !strings.Contains(rec.Error.Message, "no-such-file.yaml: no such file") {
		t.Errorf("a call to the unavailable source: %s", txt)
	}
}

// BenchmarkOpenAPICall measures one call of an OpenAPI operation against
// a local server: a plain Go net/http GET of it, beside the same request
// made by a program through execute_code (one call, and ten in one
// program, per call; with a run of 1+1 for what a run costs alone), and
// by the tool in direct mode, each a client's round trip to the built
// binary over stdio.
func BenchmarkOpenAPICall(b *testing.B) {
	a := newLocalAPI(b)
	limits := []string{"CODECELL_LIMITS_EXECUTIONS_PER_MINUTE=100000000", "CODECELL_LIMITS_EXECUTION_BURST=1000000",
		"CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=100000000", "CODECELL_LIMITS_TOOL_CALL_BURST=1000000"}
	c, _ := openAPIServer(b, a, limits, "--expose", "both", "--log-level", "warn")
	ctx := context.Background()
	url := a.URL + "/repos/octo/hello"
	httpClient := &http.Client{}
	call := func(name string, args map[string]any) func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		return func() {
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	for _, bc := range []struct {
		name  string
		calls int
		do    func()
	}{
		{"net_http", 1, func() {
			resp, err := httpClient.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			var v map[string]any
			json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
		}},
		{"execute_code_1+1", 1, call("execute_code", map[string]any{"code": "1+1"})},
		{"execute_code_1_call", 1, call("execute_code", map[string]any{"code": "(await gh.repos_get({owner: 'octo', repo: 'hello'})).id"})},
		{"execute_code_10_calls", 10, call("execute_code", map[string]any{"code": "let n = 0; for (let i = 0; i < 10; i++) n += (await gh.repos_get({owner: 'octo', repo: 'hello'})).id; n"})},
		{"direct_tool", 1, call("gh__repos_get", map[string]any{"owner": "octo", "repo": "hello"})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t := time.Now()
				bc.do()
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000/float64(bc.calls), "p50-ms/call")
		})
	}
}

// githubSpec is GitHub's REST description, installed by `make
// openapi-fixtures`.
var githubSpec = filepath.Join("..", "..", "testdata", "openapi", "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")

// TestOpenAPIGitHubScale serves GitHub's whole REST description (1,223
// operations) through the built binary: code mode's tools/list stays
// within 3 KB and the manifest within 1 KB, the tree leads from the
// category to a tag to its tools, and search finds an operation by its
// task.
func TestOpenAPIGitHubScale(t *testing.T) {
	t.Parallel()
	spec, err := filepath.Abs(githubSpec)
	if err == nil {
		_, err = os.Stat(spec)
	}
	if err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			t.Fatalf("GitHub's description is not installed (%v); run make openapi-fixtures", err)
		}
		t.Skip("run make openapi-fixtures to test with GitHub's description")
	}
	cfg := filepath.Join(t.TempDir(), "codecell.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.github]\nspec = %q\nauth = { type = \"bearer\", token_env = \"GH_E2E_TOKEN\" }\n", spec)), 0o600)
	c, err := client.NewStdioMCPClient(binary, append(dataDir(t), "GH_E2E_TOKEN="+apiSecret), "serve", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	ctx := context.Background()
	start := time.Now()
	for {
		_, rec, _ := callExecute(t, c, map[string]any{"code": "typeof github === 'object' ? Object.keys(github).length : 0"})
		if string(rec.Result) != "0" {
			t.Logf("GitHub's %s tools callable %s after the first request", rec.Result, time.Since(start).Round(100*time.Millisecond))
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatal("GitHub's description did not load")
		}
		time.Sleep(100 * time.Millisecond)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list)
	t.Logf("tools/list: %d tools, %d bytes", len(list.Tools), len(b))
	if len(b) > 3<<10 {
		t.Errorf("tools/list is %d bytes, budget 3 KB", len(b))
	}
	read := func(p string) string {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_tools"
		req.Params.Arguments = map[string]any{"path": p}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("read_tools %s: %v %+v", p, err, res)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	for _, f := range []struct {
		path   string
		budget int
		holds  string
	}{
		{"/manifest.json", 1 << 10, `"github":"1224 tools`},
		{"/github/index.json", 5 << 10, `"issues":"58 tools`},
		{"/github/issues/labels/index.json", 5 << 10, `"issues_add_labels"`},
		{"/github/repos/index.json", 5 << 10, `"branches":"36 tools"`},
	} {
		text := read(f.path)
		if len(text) > f.budget || !strings.Contains(text, f.holds) {
			t.Errorf("%s (%d bytes, budget %d) lacks %s:\n%s", f.path, len(text), f.budget, f.holds, text)
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_tools"
	req.Params.Arguments = map[string]any{"query": "add a label to an issue", "detail": "name"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"hits":[{"from":"the OpenAPI description \"github\"","name":"github.issues_add_labels"`) {
		t.Errorf("search_tools: %v %+v", err, res)
	}
}

// TestOpenAPISnapshotPerBuild: a restart of the same binary reads the
// source's snapshot; another build of codecell never does, and makes the
// tools from the document — here another development build of the same
// version ("0.1.0-dev", with another build tag), which only its
// executable's hash tells apart.
func TestOpenAPISnapshotPerBuild(t *testing.T) {
	t.Parallel()
	a := newLocalAPI(t)
	other := filepath.Join(t.TempDir(), "codecell-other")
	build := exec.Command("go", "build", "-tags", "sqlite_fts5,grpcnotrace", "-o", other, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build another codecell: %v\n%s", err, out)
	}
	data := t.TempDir()
	start := func(bin string) string {
		t.Helper()
		spec, _ := filepath.Abs(openAPISpec)
		cfg := filepath.Join(t.TempDir(), "codecell.toml")
		os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.gh]\nspec = %q\nbase_url = %q\n", spec, a.URL)), 0o600)
		c, err := client.NewStdioMCPClient(bin, []string{"CODECELL_SERVER_DATA_DIR=" + data}, "serve", "--config", cfg, "--log-level", "info")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		logs := &lockedBuffer{}
		if r, ok := client.GetStderr(c); ok {
			go io.Copy(logs, r)
		}
		initialize(t, c)
		waitFor(t, 30*time.Second, func() bool { return strings.Contains(logs.String(), `msg="openapi source ready"`) })
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="openapi source ready"`) {
				return l
			}
		}
		return ""
	}
	for i, step := range []struct {
		bin, want string
	}{
		{binary, "snapshot=false"},
		{binary, "snapshot=true"},
		{other, "snapshot=false"},
		{other, "snapshot=true"},
		{binary, "snapshot=false"},
	} {
		if l := start(step.bin); !strings.Contains(l, step.want) {
			t.Errorf("start %d (%s): want %s, log: %s", i+1, filepath.Base(step.bin), step.want, l)
		}
	}
}
