package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

const catalogDir = "../../testdata/catalog"

func newIndex(tb testing.TB, r *tools.Registry) *search.Index {
	tb.Helper()
	return search.New(r, docsOf(vfs.New(r)))
}

func newCatalog(tb testing.TB) *tools.Registry {
	tb.Helper()
	r := tools.NewRegistry()
	if err := catalog.LoadInto(r, catalogDir); err != nil {
		tb.Fatal(err)
	}
	return r
}

// qualityQueries are natural-language requests written for the testdata
// catalogue, each with the tool an agent would want.
var qualityQueries = []struct {
	query, want string
}{
	{"find open bugs in a github repository", "github.search_issues"},
	{"send a message to a slack channel", "slack.post_message"},
	{"refund a customer's payment", "payments.refund_charge"},
	{"what will the weather be like this week", "weather.forecast_daily"},
	{"schedule a meeting with several people", "calendar.create_event"},
	{"when are both of us free for a 30 minute call", "calendar.find_free_slots"},
	{"run a SQL select query", "db.query"},
	{"move a jira ticket to done", "jira.transition_ticket"},
	{"read the text of a spreadsheet or document", "drive.read_file"},
	{"reply to an email thread", "email.reply"},
	{"merge a pull request", "github.merge_pull_request"},
	{"look up a slack user by their email address", "slack.lookup_user"},
	{"bill a customer with an invoice", "payments.create_invoice"},
	{"conversion rate through the signup steps", "analytics.funnel"},
	{"check if a website is up and when its certificate expires", "http.check_url"},
	{"log hours worked on a ticket", "jira.log_work"},
	{"give a colleague access to a file", "drive.share_file"},
	{"mark a deal as closed won", "crm.update_deal_stage"},
	{"show the columns and indexes of a table", "db.describe_table"},
	{"air pollution levels in a city", "weather.air_quality"},
	// Added with issue 9: questions, plurals, actions and their opposites.
	{"which pull requests are waiting for review", "github.list_pull_requests"},
	{"list open PRs in a repo", "github.list_pull_requests"},
	{"open a pull request for my branch", "github.create_pull_request"},
	{"who has access to this document", "drive.list_permissions"},
	{"cancel a customer's subscription", "payments.cancel_subscription"},
	{"what meetings do I have tomorrow", "calendar.list_events"},
	{"unread emails from my manager", "email.search_messages"},
	{"find a company by its website domain", "crm.search_companies"},
	{"stop sharing a file with someone", "drive.revoke_permission"},
	{"recent commits on the main branch", "github.list_commits"},
	{"how much money is in the account", "payments.get_balance"},
	{"post a comment on a github issue", "github.add_issue_comment"},
	{"slow database queries", "db.list_slow_queries"},
	{"hourly forecast for the next few hours", "weather.forecast_hourly"},
	{"tickets assigned to me that are still open", "jira.search_tickets"},
}

// TestQuality measures ranking on qualityQueries: how many have the
// intended tool first and in the top 3, and the mean reciprocal rank.
//
//	go test ./tools/search -run TestQuality -v
func TestQuality(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	top1, top3, mrr := 0, 0, 0.0
	for _, q := range qualityQueries {
		hits, err := ix.Search(search.Query{Text: q.query, Limit: 10, Detail: search.DetailName})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		rank := 0
		for i, h := range hits {
			names = append(names, h.Name)
			if h.Name == q.want && rank == 0 {
				rank = i + 1
			}
		}
		if rank == 1 {
			top1++
		}
		if rank >= 1 && rank <= 3 {
			top3++
		}
		if rank != 1 {
			t.Logf("rank %d: %q → %v, want %s", rank, q.query, names[:min(3, len(names))], q.want)
		}
		if rank > 0 {
			mrr += 1 / float64(rank)
		}
	}
	n := len(qualityQueries)
	mrr /= float64(n)
	t.Logf("quality: %d/%d queries have the intended tool first, %d/%d in the top 3; MRR %.3f", top1, n, top3, n, mrr)
	if top3 < n*9/10 || top1 < n*8/10 {
		t.Errorf("%d/%d first and %d/%d in the top 3; want at least 80%% first and 90%% in the top 3", top1, n, top3, n)
	}
}

// TestIssueQueries holds queries that once ranked the wrong tool first.
func TestIssueQueries(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	for _, q := range []struct{ query, want string }{
		{"which pull requests are waiting for review", "github.list_pull_requests"},   // merge_pull_request was first
		{"give a colleague access to a file", "drive.share_file"},                     // revoke_permission was first
		{"refund a customer's payment", "payments.refund_charge"},                     // create_charge was first
		{"when are both of us free for a 30 minute call", "calendar.find_free_slots"}, // create_event was first
	} {
		hits, err := ix.Search(search.Query{Text: q.query, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Name != q.want {
			t.Errorf("%q: first hit %v, want %s", q.query, hits, q.want)
		}
	}
}

func TestIdentifierSplitting(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	for _, q := range []string{"getIssue", "get_issue", "get issue", "GetIssue", "github.get_issue", "get issues"} {
		hits, err := ix.Search(search.Query{Text: q, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Name != "github.get_issue" {
			t.Errorf("%q: top hit %v, want github.get_issue", q, hits)
		}
	}
}

func TestDetailLevels(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	f := vfs.New(r)
	ix := search.New(r, docsOf(f))
	sig, _ := f.ReadFile("github/search_issues.d.ts")
	full, _ := f.ReadFile("github/search_issues.md")
	info, _ := f.Info("github.search_issues")
	for _, d := range []search.Detail{"", search.DetailName, search.DetailSummary, search.DetailSignature, search.DetailFull} {
		t.Run(string(d), func(t *testing.T) {
			hits, err := ix.Search(search.Query{Text: "search issues", Detail: d, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := hits[0]
			if h.Name != "github.search_issues" {
				t.Fatalf("top hit %s", h.Name)
			}
			if h.Cost.Signature != info.Signature || h.Cost.Full != info.Full || h.Output != info.Output || h.Output == "" {
				t.Errorf("costs/output %+v %q, want %+v", h.Cost, h.Output, info)
			}
			if h.Cost.SignaturePath != "github/search_issues.d.ts" || h.Cost.FullPath != "github/search_issues.md" {
				t.Errorf("paths %+v", h.Cost)
			}
			wantSummary := d != search.DetailName
			if (h.Summary != "") != wantSummary || (h.ReadOnly != wantSummary) {
				t.Errorf("summary %q readOnly %v at detail %q", h.Summary, h.ReadOnly, d)
			}
			if (h.Signature == string(sig)) != (d == search.DetailSignature) || (h.Signature != "" && d != search.DetailSignature) {
				t.Errorf("signature set wrongly at detail %q", d)
			}
			if (h.Full == string(full)) != (d == search.DetailFull) || (h.Full != "" && d != search.DetailFull) {
				t.Errorf("full page set wrongly at detail %q", d)
			}
		})
	}
}

func TestCategoryAndLimit(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	hits, err := ix.Search(search.Query{Text: "search find list", Category: "slack", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Fatal("no hits in slack")
	}
	for _, h := range hits {
		if h.Name[:6] != "slack." {
			t.Errorf("hit %s outside the category", h.Name)
		}
	}
	hits, _ = ix.Search(search.Query{Text: "list"})
	if len(hits) != search.DefaultLimit {
		t.Errorf("default limit gave %d hits, want %d", len(hits), search.DefaultLimit)
	}
	hits, _ = ix.Search(search.Query{Text: "a list of the things to get and create", Limit: 1000})
	if len(hits) != search.MaxLimit {
		t.Errorf("limit 1000 gave %d hits, want %d", len(hits), search.MaxLimit)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("hits not sorted by score: %v then %v", hits[i-1], hits[i])
		}
	}
	hits, _ = ix.Search(search.Query{Category: "weather", Limit: 50})
	if len(hits) != 8 || hits[0].Name != "weather.air_quality" {
		t.Errorf("listing a category gave %d hits starting %v", len(hits), hits)
	}
	if hits, _ := ix.Search(search.Query{Text: "xylophone quasar"}); len(hits) != 0 {
		t.Errorf("nonsense query matched %v", hits)
	}
}

func TestInvalidQueries(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	for name, q := range map[string]search.Query{
		"bad detail":       {Text: "x", Detail: "everything"},
		"negative limit":   {Text: "x", Limit: -1},
		"empty":            {Text: "  "},
		"unknown category": {Text: "x", Category: "nope"},
	} {
		if _, err := ix.Search(q); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("%s: err = %v, want ErrInvalidQuery", name, err)
		}
	}
}

// TestRebuild checks that the index follows registry changes.
func TestRebuild(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	ix := newIndex(t, r)
	find := func() bool {
		hits, err := ix.Search(search.Query{Text: "zeppelin hangar"})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits) > 0 && hits[0].Name == "fleet.inspect_zeppelin"
	}
	if find() {
		t.Fatal("found a tool not yet registered")
	}
	tool := tools.Tool{Name: "fleet.inspect_zeppelin", Summary: "Inspect a zeppelin in its hangar.",
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }}
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	if !find() {
		t.Error("new tool not found after registration")
	}
	r.Unregister(tool.Name)
	if find() {
		t.Error("tool still found after unregistration")
	}
}

func TestConcurrentSearch(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	ix := newIndex(t, r)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				q := qualityQueries[(i*50+j)%len(qualityQueries)]
				if _, err := ix.Search(search.Query{Text: q.query, Detail: search.DetailSignature}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		_ = r.Register(tools.Tool{Name: fmt.Sprintf("churn.tool_%d", i), Summary: "Churn.",
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
	}
	wg.Wait()
}

// bigCatalog returns a registry of about 1,000 tools: the testdata
// catalogue eight times over, each copy in its own categories.
func bigCatalog(tb testing.TB) *tools.Registry {
	tb.Helper()
	c, err := catalog.Load(catalogDir)
	if err != nil {
		tb.Fatal(err)
	}
	r := tools.NewRegistry()
	var all []tools.Tool
	for copyN := range 8 {
		for _, t := range c.Tools() {
			cat, short, _ := strings.Cut(t.Name, ".")
			t.Name = fmt.Sprintf("%s_%d.%s", cat, copyN, short)
			t.Related = nil
			all = append(all, t)
		}
	}
	if err := r.Register(all...); err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkSearch measures search_tools over a ~1,000-tool catalogue at
// the default detail level and reports the median latency:
//
//	go test ./tools/search -run '^$' -bench Search -benchtime 2000x
func BenchmarkSearch(b *testing.B) {
	r := bigCatalog(b)
	ix := newIndex(b, r)
	for _, q := range qualityQueries { // build the index and warm the vfs cache
		if _, err := ix.Search(search.Query{Text: q.query}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.List())), "tools")
	var durations []time.Duration
	for i := 0; b.Loop(); i++ {
		q := qualityQueries[i%len(qualityQueries)]
		start := time.Now()
		if _, err := ix.Search(search.Query{Text: q.query}); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	if len(durations) > 0 {
		b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// TestSearchAsCaller checks that a caller finds its own tools and that
// nobody else finds them.
func TestSearchAsCaller(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	err := r.RegisterScoped("alice", tools.Tool{Name: "skills.zeppelin_report", Summary: "Report on the zeppelin fleet.",
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal != "reader" {
			return tools.Toolset{}
		}
		return tools.Toolset{Key: "ro", Allow: func(t *tools.Tool) bool { return t.Annotations.ReadOnly }}
	})
	ix := newIndex(t, r)
	tests := []struct {
		principal, query, want, absent string
	}{
		{principal: "alice", query: "zeppelin fleet report", want: "skills.zeppelin_report"},
		{principal: "bob", query: "zeppelin fleet report", absent: "skills.zeppelin_report"},
		{principal: "", query: "zeppelin fleet report", absent: "skills.zeppelin_report"},
		{principal: "alice", query: "merge a pull request", want: "github.merge_pull_request"},
		{principal: "reader", query: "merge a pull request", absent: "github.merge_pull_request"},
	}
	for _, tt := range tests {
		t.Run(tt.principal+" "+tt.query, func(t *testing.T) {
			hits, err := ix.Search(search.Query{Text: tt.query, Caller: tools.Caller{Principal: tt.principal}, Limit: search.MaxLimit, Detail: search.DetailSignature})
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range hits {
				if h.Name == tt.absent {
					t.Errorf("found %s, which the caller cannot see", h.Name)
				}
				if i == 0 && tt.want != "" && h.Name != tt.want {
					t.Errorf("top hit %s, want %s", h.Name, tt.want)
				}
				if h.Signature == "" || h.Cost.Signature.Bytes != len(h.Signature) {
					t.Errorf("%s: signature of %d bytes, cost says %d", h.Name, len(h.Signature), h.Cost.Signature.Bytes)
				}
			}
			if tt.want != "" && len(hits) == 0 {
				t.Errorf("no hits, want %s", tt.want)
			}
		})
	}
	if _, err := ix.Search(search.Query{Category: "skills", Caller: tools.Caller{Principal: "bob"}}); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("bob lists the skills category: %v", err)
	}
}

// docsOf gives each caller its tree of fsys as the index's Docs.
func docsOf(fsys *vfs.FS) func(tools.Caller) search.Docs {
	return func(c tools.Caller) search.Docs { return fsys.For(c) }
}

// TestGroupsAndDeprecation: a tool's group counts with its category, and
// of two tools that match alike the deprecated one comes second.
func TestGroupsAndDeprecation(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	r := tools.NewRegistry()
	if err := r.Register(
		tools.Tool{Name: "api.get_widget_v1", Summary: "Get a widget.", Deprecated: true, Handler: h},
		tools.Tool{Name: "api.get_widget_v2", Summary: "Get a widget.", Handler: h},
		tools.Tool{Name: "api.add_item", Summary: "Add an item.", Group: "repos/branches", Handler: h},
		tools.Tool{Name: "api.add_entry", Summary: "Add an item.", Handler: h},
	); err != nil {
		t.Fatal(err)
	}
	ix := newIndex(t, r)
	for _, tc := range []struct{ query, want string }{
		{"get a widget", "api.get_widget_v2"},
		{"add an item to a branch", "api.add_item"},
	} {
		hits, err := ix.Search(search.Query{Text: tc.query})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) < 2 || hits[0].Name != tc.want {
			t.Errorf("%q: got %+v, want %s first", tc.query, hits, tc.want)
		}
	}
}

// TestSaysWhatWasAsked: of tools that all mention a query's words, the
// one whose summary says just what was asked and whose short name the
// query covers comes first, as in a large API where many names hold
// "pull_request".
func TestSaysWhatWasAsked(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	r := tools.NewRegistry()
	if err := r.Register(
		tools.Tool{Name: "gh.pulls_merge", Summary: "Merge a pull request", Description: "Merges a pull request into the base branch.", Handler: h},
		tools.Tool{Name: "gh.repos_list_pull_requests_associated_with_commit", Summary: "List pull requests associated with a commit",
			Description: "Lists the merged pull request that introduced the commit, or the open pull requests of a branch.", Handler: h},
		tools.Tool{Name: "gh.pull_request_review_protection_update", Summary: "Update pull request review protection",
			Description: "Protects a branch: pull requests need a review before they merge.", Handler: h},
	); err != nil {
		t.Fatal(err)
	}
	hits, err := newIndex(t, r).Search(search.Query{Text: "merge a pull request"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Name != "gh.pulls_merge" {
		t.Errorf("got %+v, want gh.pulls_merge first", hits)
	}
}

// TestConfidence: a query that the catalogue answers gets a high hit
// that matches all its words; one it does not answer gets only low ones.
func TestConfidence(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	tests := []struct {
		query string
		want  search.Confidence
	}{
		{"merge a pull request", search.High},
		{"refund a customer's payment", search.High},
		{"book a flight to paris", search.Low},
		{"feed the zebras at noon", search.Low},
	}
	for _, tc := range tests {
		hits, err := ix.Search(search.Query{Text: tc.query, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == search.Low {
			for _, h := range hits {
				if h.Confidence != search.Low {
					t.Errorf("%q: %s is %s (match %.2f), want every hit low", tc.query, h.Name, h.Confidence, h.Match)
				}
			}
			continue
		}
		if len(hits) == 0 || hits[0].Confidence != tc.want || hits[0].Match < search.HighMatch {
			t.Errorf("%q: first hit %+v, want %s", tc.query, hits, tc.want)
		}
	}
}

// TestLearnFromUse: words that found nothing rank a tool first once a
// search with them was followed by a call of it, and SetLearned(nil)
// forgets it.
func TestLearnFromUse(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	const query = "what is on fire in the garden"
	const tool = "jira.transition_ticket"
	first := func() string {
		hits, err := ix.Search(search.Query{Text: query, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Name
	}
	if got := first(); got == tool {
		t.Fatalf("%s is already first", tool)
	}
	ix.Learn(search.LearnTerms(query), []string{tool})
	if got := first(); got != tool {
		t.Errorf("after learning, first hit %q, want %s", got, tool)
	}
	ix.SetLearned(nil)
	if got := first(); got == tool {
		t.Errorf("after forgetting, %s is still first", tool)
	}
}

// TestLearnedTaskIsNotAShorterOne: a query whose words are only part of
// a learned task's (of a longer request that led to another tool) keeps
// its own first hit.
func TestLearnedTaskIsNotAShorterOne(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	const query = "which pull requests are waiting for review"
	const want = "github.list_pull_requests"
	first := func() string {
		hits, err := ix.Search(search.Query{Text: query, Limit: 3})
		if err != nil || len(hits) == 0 {
			t.Fatalf("search %q: %v, %d hits", query, err, len(hits))
		}
		return hits[0].Name
	}
	if got := first(); got != want {
		t.Fatalf("before learning, first hit %q, want %s", got, want)
	}
	ix.Learn(search.LearnTerms("which pull requests are waiting for review by the security team before we merge them"), []string{"github.merge_pull_request"})
	if got := first(); got != want {
		t.Errorf("after learning a longer task, first hit %q, want %s", got, want)
	}
}
