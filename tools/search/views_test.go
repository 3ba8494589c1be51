package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/tools/search"
)

// TestViewsRankAsTheirOwnIndex (attack15 M1): the index of the
// catalogue is one, shared by every view, and each caller's ranking is
// exactly what an index of its view alone gives — the same hits, scores,
// matches and confidences — so that nothing of a tool outside its view
// (its words, how many tools say them, its category's name) reaches a
// caller through a search. Bob's toolset hides the category secret,
// whose tools say the catalogue's common words and words of their own;
// alice has a skill of her own; both search the shared index, and the
// same queries over registries holding only what each sees must give
// the same answers.
func TestViewsRankAsTheirOwnIndex(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	c, err := catalog.Load(catalogDir)
	if err != nil {
		t.Fatal(err)
	}
	base := c.Tools()
	var secret []tools.Tool
	for i, w := range []string{"issue", "repository", "user", "file", "message", "zeppelin", "vault", "pull request"} {
		secret = append(secret, tools.Tool{Name: fmt.Sprintf("secret.rotate_%d", i), Handler: h,
			Summary:     fmt.Sprintf("Rotate the %s keys of the vault.", w),
			Description: strings.Repeat("List every "+w+" of the vault, search each "+w+", create a "+w+". ", 3)})
	}
	skill := tools.Tool{Name: "skills.zeppelin_report", Summary: "Report on the zeppelin fleet and its issues.", Handler: h}
	register := func(r *tools.Registry, ts ...[]tools.Tool) {
		for _, list := range ts {
			if err := r.Register(list...); err != nil {
				t.Fatal(err)
			}
		}
	}
	shared := tools.NewRegistry()
	register(shared, base, secret)
	if err := shared.RegisterScoped("alice", skill); err != nil {
		t.Fatal(err)
	}
	shared.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal != "bob" {
			return tools.Toolset{}
		}
		return tools.Toolset{Key: "no-secret", Allow: func(t *tools.Tool) bool { return t.Category() != "secret" }}
	})
	bobAlone, aliceAlone := tools.NewRegistry(), tools.NewRegistry()
	register(bobAlone, base)
	register(aliceAlone, base, secret, []tools.Tool{skill})
	ix := newIndex(t, shared)
	alone := map[string]*search.Index{"bob": newIndex(t, bobAlone), "alice": newIndex(t, aliceAlone)}
	// What learning from use taught counts for the views that hold the
	// tools it names, and only for those.
	for _, x := range []*search.Index{ix, alone["bob"], alone["alice"]} {
		x.Learn(search.LearnTerms("rotate the vault keys"), []string{"secret.rotate_6"})
		x.Learn(search.LearnTerms("report on the fleet"), []string{"skills.zeppelin_report"})
	}
	queries := []string{"rotate the vault keys", "list issues in secret", "zeppelin fleet report", "report on the fleet",
		"search users", "create a repository", "send a message", "upload a file", "my pull requests", "which issues are open"}
	for _, q := range qualityQueries {
		queries = append(queries, q.query)
	}
	for _, p := range []string{"bob", "alice"} {
		for _, q := range queries {
			for _, cat := range []string{"", "github"} {
				query := search.Query{Text: q, Category: cat, Limit: search.MaxLimit, Detail: search.DetailName}
				want, werr := alone[p].Search(query)
				query.Caller = tools.Caller{Principal: p}
				got, gerr := ix.Search(query)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s %q in %q: err %v, alone %v", p, q, cat, gerr, werr)
				}
				if len(got) != len(want) {
					t.Errorf("%s %q in %q: %d hits, alone %d", p, q, cat, len(got), len(want))
					continue
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.Name != w.Name || g.Score != w.Score || g.Match != w.Match || g.Confidence != w.Confidence {
						t.Errorf("%s %q in %q: hit %d is %s (%v, %v, %s), alone %s (%v, %v, %s)", p, q, cat, i,
							g.Name, g.Score, g.Match, g.Confidence, w.Name, w.Score, w.Match, w.Confidence)
					}
					if p == "bob" && strings.HasPrefix(g.Name, "secret.") {
						t.Errorf("bob found %s", g.Name)
					}
				}
			}
		}
	}
	for _, q := range []search.Query{{Category: "secret"}, {Text: "vault", Category: "secret"}} {
		q.Caller = tools.Caller{Principal: "bob"}
		_, err := ix.Search(q)
		_, werr := alone["bob"].Search(q)
		if !errors.Is(err, search.ErrInvalidQuery) || err.Error() != werr.Error() {
			t.Errorf("bob's search of the category secret: %v, alone %v", err, werr)
		}
	}
	// The category listing is in name order, as an index of the view
	// alone gives it.
	for _, p := range []string{"bob", "alice"} {
		q := search.Query{Category: "github", Limit: search.MaxLimit, Detail: search.DetailName}
		want, _ := alone[p].Search(q)
		q.Caller = tools.Caller{Principal: p}
		got, err := ix.Search(q)
		if err != nil || fmt.Sprint(names(got)) != fmt.Sprint(names(want)) {
			t.Errorf("%s lists github: %v %v, alone %v", p, names(got), err, names(want))
		}
	}
}

func names(hits []search.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}
