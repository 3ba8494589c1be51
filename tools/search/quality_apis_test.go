package search_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// Targets of make bench-search, on the dev set and on the held-out one.
const (
	targetTop3 = 0.90
	targetTop1 = 0.75
)

// score counts where the expected operations ranked.
type score struct{ n, top1, top3, top5 int }

func (s *score) add(rank int) {
	s.n++
	if rank == 0 {
		s.top1++
	}
	if rank >= 0 && rank < 3 {
		s.top3++
	}
	if rank >= 0 && rank < 5 {
		s.top5++
	}
}

func pct(a, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(n))
}

func (s score) row(label string, base score) string {
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s |", label, s.n,
		pct(s.top1, s.n), pct(s.top3, s.n), pct(s.top5, s.n), pct(base.top1, base.n), pct(base.top3, base.n), pct(base.top5, base.n))
}

func rankOf(names []string, want []string) int {
	for i, n := range names {
		if slices.Contains(want, n) {
			return i
		}
	}
	return -1
}

// TestSearchQuality is make bench-search: the dev and held-out task sets
// of testdata/search, searched over all their APIs loaded into one
// registry, scored top-1/3/5 beside the plain BM25 baseline, per API. It
// fails when a set misses the targets (top-3 ≥ 90%, top-1 ≥ 75%). It
// loads eight real descriptions, so it runs only when
// CODECELL_SEARCH_BENCH is set (make bench-search sets it);
// CODECELL_SEARCH_REPORT=FILE writes the table there. The held-out set's
// misses are listed only with CODECELL_SEARCH_SHOW_HELDOUT=1.
func TestSearchQuality(t *testing.T) {
	if os.Getenv("CODECELL_SEARCH_BENCH") == "" {
		t.Skip("make bench-search runs it: it loads eight real API descriptions")
	}
	start := time.Now()
	reg := loadAPIs(t, "dev", "heldout")
	t.Logf("loaded %d tools in %s", len(reg.List()), time.Since(start).Round(time.Millisecond))
	f := vfs.New(reg)
	ix := search.New(reg, docsOf(f))
	base := newBM25(reg.List())
	var report strings.Builder
	fmt.Fprintf(&report, "Search over %d tools of %d APIs loaded together.\n\n", len(reg.List()), len(reg.Categories()))
	fmt.Fprintf(&report, "| set / API | tasks | top-1 | top-3 | top-5 | BM25 top-1 | BM25 top-3 | BM25 top-5 |\n|---|---|---|---|---|---|---|---|\n")
	showHeldOut := os.Getenv("CODECELL_SEARCH_SHOW_HELDOUT") != ""
	failed := false
	for _, set := range []struct{ name, file string }{{"dev", "dev.txt"}, {"held-out", "heldout.txt"}} {
		tasks := readTasks(t, set.file)
		var all, allBase score
		per, perBase := map[string]*score{}, map[string]*score{}
		var apis []string
		ambiguous := 0
		for _, tk := range tasks {
			if len(tk.want) > 1 {
				ambiguous++
			}
			hits, err := ix.Search(search.Query{Text: tk.query, Limit: 5, Detail: search.DetailName})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range hits {
				names = append(names, h.Name)
			}
			r := rankOf(names, tk.want)
			rb := rankOf(base.rank(tk.query, 5), tk.want)
			if per[tk.api] == nil {
				per[tk.api], perBase[tk.api] = &score{}, &score{}
				apis = append(apis, tk.api)
			}
			per[tk.api].add(r)
			perBase[tk.api].add(rb)
			all.add(r)
			allBase.add(rb)
			if r != 0 && (set.name == "dev" || showHeldOut) {
				t.Logf("%s rank %d: %q want %s; got %s", set.name, r+1, tk.query, strings.Join(tk.want, " or "), strings.Join(names, ", "))
			}
		}
		fmt.Fprintln(&report, all.row("**"+set.name+"**", allBase))
		for _, a := range apis {
			fmt.Fprintln(&report, per[a].row(set.name+" / "+a, *perBase[a]))
		}
		t.Logf("%s: %d tasks (%d with more than one acceptable operation)", set.name, all.n, ambiguous)
		if float64(all.top3) < targetTop3*float64(all.n) || float64(all.top1) < targetTop1*float64(all.n) {
			t.Errorf("%s: top-1 %s, top-3 %s; want at least %.0f%% and %.0f%%", set.name, pct(all.top1, all.n), pct(all.top3, all.n), 100*targetTop1, 100*targetTop3)
			failed = true
		}
	}
	learningReport(t, ix, &report)
	t.Logf("\n%s", report.String())
	if p := os.Getenv("CODECELL_SEARCH_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	_ = failed
}

// TestSearchFresh is make bench-search's check of generalization:
// testdata/search/fresh.txt, phrasings written after dev and held-out
// and before the tuning that followed, over Jira, GitLab, SendGrid and
// Twilio (APIs that shaped nothing of the vocabulary) and in new words
// over the dev APIs, and heldout2.txt, phrasings over the APIs not in
// dev written before the third round of tuning and never tuned against;
// each searched over every API of apis.txt loaded at once (over 5,000
// tools). It reports top-1/3/5 beside plain BM25, per API, with
// CODECELL_SEARCH_REPORT appending to that file; it sets no target.
func TestSearchFresh(t *testing.T) {
	if os.Getenv("CODECELL_SEARCH_BENCH") == "" {
		t.Skip("make bench-search runs it: it loads thirteen real API descriptions")
	}
	reg := loadAPIs(t, "dev", "heldout", "extra")
	ix := search.New(reg, docsOf(vfs.New(reg)))
	base := newBM25(reg.List())
	var report strings.Builder
	for _, set := range []struct{ name, file, about string }{
		{"fresh", "fresh.txt", "Fresh phrasings"},
		{"held-out 2", "heldout2.txt", "Second held-out set, never tuned against,"},
	} {
		var all, allBase score
		per, perBase := map[string]*score{}, map[string]*score{}
		var apis []string
		for _, tk := range readTasks(t, set.file) {
			hits, err := ix.Search(search.Query{Text: tk.query, Limit: 5, Detail: search.DetailName})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range hits {
				names = append(names, h.Name)
			}
			if per[tk.api] == nil {
				per[tk.api], perBase[tk.api] = &score{}, &score{}
				apis = append(apis, tk.api)
			}
			r, rb := rankOf(names, tk.want), rankOf(base.rank(tk.query, 5), tk.want)
			per[tk.api].add(r)
			perBase[tk.api].add(rb)
			all.add(r)
			allBase.add(rb)
		}
		fmt.Fprintf(&report, "\n%s over all %d tools of %d APIs (testdata/search/%s; no target).\n\n", set.about, len(reg.List()), len(reg.Categories()), set.file)
		fmt.Fprintf(&report, "| set / API | tasks | top-1 | top-3 | top-5 | BM25 top-1 | BM25 top-3 | BM25 top-5 |\n|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintln(&report, all.row("**"+set.name+"**", allBase))
		for _, a := range apis {
			fmt.Fprintln(&report, per[a].row(set.name+" / "+a, *perBase[a]))
		}
	}
	t.Logf("\n%s", report.String())
	if p := os.Getenv("CODECELL_SEARCH_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(report.String()); err != nil {
			t.Error(err)
		}
	}
}

// learningReport measures learning from use: every other dev task is
// searched and followed by a run that calls its expected operation
// (search.Index.Learn with the query's words); then the learned tasks
// are asked again (a repeated task family), beside the dev tasks not
// learned and the held-out set, which should not get worse.
func learningReport(t *testing.T, ix *search.Index, report *strings.Builder) {
	t.Helper()
	dev := readTasks(t, "dev.txt")
	var learned, other []task
	for i, tk := range dev {
		if i%2 == 0 {
			learned = append(learned, tk)
		} else {
			other = append(other, tk)
		}
	}
	heldOut := readTasks(t, "heldout.txt")
	measure := func(ts []task) score {
		var s score
		for _, tk := range ts {
			hits, err := ix.Search(search.Query{Text: tk.query, Limit: 5, Detail: search.DetailName})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range hits {
				names = append(names, h.Name)
			}
			s.add(rankOf(names, tk.want))
		}
		return s
	}
	sets := []struct {
		name string
		ts   []task
	}{{"dev, learned tasks asked again", learned}, {"dev, tasks not learned", other}, {"held-out", heldOut}}
	var before []score
	for _, st := range sets {
		before = append(before, measure(st.ts))
	}
	for _, tk := range learned {
		ix.Learn(search.LearnTerms(tk.query), tk.want[:1])
	}
	fmt.Fprintf(report, "\nLearning from use: each of %d dev tasks searched once and followed by a run that called its operation.\n\n", len(learned))
	fmt.Fprintf(report, "| set | tasks | top-1 before | top-1 after | top-3 before | top-3 after |\n|---|---|---|---|---|---|\n")
	for i, st := range sets {
		after := measure(st.ts)
		b := before[i]
		fmt.Fprintf(report, "| %s | %d | %s | %s | %s | %s |\n", st.name, b.n, pct(b.top1, b.n), pct(after.top1, after.n), pct(b.top3, b.n), pct(after.top3, after.n))
		if i > 0 && (after.top1 < b.top1-1 || after.top3 < b.top3-1) {
			t.Errorf("learning from use hurt %s: top-1 %d → %d, top-3 %d → %d", st.name, b.top1, after.top1, b.top3, after.top3)
		}
	}
	ix.SetLearned(nil)
}

// BenchmarkSearchScale measures one search over every API of apis.txt
// loaded together (over 5,000 tools): the median (p50) and p90 of the dev
// set's phrasings.
func BenchmarkSearchScale(b *testing.B) {
	if os.Getenv("CODECELL_SEARCH_BENCH") == "" {
		b.Skip("make bench-search runs it: it loads thirteen real API descriptions")
	}
	reg := loadAPIs(b, "dev", "heldout", "extra")
	f := vfs.New(reg)
	ix := search.New(reg, docsOf(f))
	tasks := readTasks(b, "dev.txt")
	if _, err := ix.Search(search.Query{Text: "warm up"}); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	i := 0
	for b.Loop() {
		q := tasks[i%len(tasks)].query
		i++
		start := time.Now()
		if _, err := ix.Search(search.Query{Text: q, Limit: 5}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(len(reg.List())), "tools")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}
