package mcpserver

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
)

// This file is learning from use: when a search_tools query is followed,
// in the same session, by a run that calls catalogue tools, the query's
// words are linked to those tools, and later searches with those words
// rank them higher (search.Index.Learn). The links are words and tool
// names only, never a program's arguments or results; they are kept in
// the store for the installation when it has one (searchLinks).
//
// What is learned ranks every principal's searches, so one principal
// alone may not teach it to the others: a link of a word to a tool counts
// once principals of their own (quorum, not sessions) have made it —
// three, or every principal of a server with fewer static principals and
// no OAuth; one on a server with a single principal. Until then it is
// kept, bounded, in this process only, and one principal may have only
// its share of such links (learnPerPrincipal). Once agreed, a link counts
// once more for each other principal that makes it, never twice for one.

// LearnConfig configures learning from use.
type LearnConfig struct {
	// Disabled turns learning from use off: searches rank as the
	// vocabulary alone says, and nothing is recorded.
	Disabled bool
}

// searchLinks keeps what learning from use learned. Both stores
// (memory/sqlite, memory/postgres) implement it: the contract suite
// (memory/storetest) holds them to it.
type searchLinks interface {
	LearnSearch(ctx context.Context, terms, toolNames []string) error
	SearchLinks(ctx context.Context) ([]memory.SearchLink, error)
	ResetSearchLinks(ctx context.Context) (int64, error)
}

// Bounds of the searches a session remembers for learning.
const (
	learnWindow      = 10 * time.Minute // a run this long after a search still follows it
	learnPerSession  = 4                // searches a session remembers
	learnMaxSessions = 4096             // sessions remembered at once
	learnQuorum      = 3                // principals a link needs, on a shared server
	learnMaxPending  = 16384            // links awaiting their quorum
	// learnPerPrincipal bounds the links one principal may have awaiting
	// their quorum, and the agreed links its learning counts for: one
	// principal cannot fill the table for the others, nor weigh more
	// than its share.
	learnPerPrincipal = learnMaxPending / 16
	learnMaxCounted   = 1 << 18 // principals' counts of agreed links remembered
)

// learner remembers each session's recent searches until a run follows
// them.
type learner struct {
	ix    *search.Index
	store searchLinks // nil: learned for this process only
	now   func() time.Time

	// quorum is how many principals must make a link before it counts.
	quorum int

	mu      sync.Mutex
	pending map[string][]pendingSearch // by principal and session
	// makers are the principals that made each link short of its quorum.
	makers map[learnLink][]string
	// pendingBy counts the links short of their quorum that each
	// principal made.
	pendingBy map[string]int
	// agreedLinks are the links that have their quorum (or that the store
	// kept): each other principal's making them counts, once.
	agreedLinks map[learnLink]bool
	// counted are the agreed links each principal counted for, in this
	// process; countedBy counts them by principal.
	counted   map[countedLink]bool
	countedBy map[string]int
}

// countedLink is a principal's count of a link.
type countedLink struct {
	principal string
	learnLink
}

// learnLink is a word linked to a tool.
type learnLink struct{ term, tool string }

type pendingSearch struct {
	terms []string
	at    time.Time
}

// newLearner returns the learner of ix, which it primes with what store
// learned before; nil when learning is disabled.
// quorum is how many principals must make a link (learnQuorum, see
// above).
func newLearner(ctx context.Context, cfg LearnConfig, quorum int, ix *search.Index, st Store, log interface {
	Warn(msg string, args ...any)
}) *learner {
	if cfg.Disabled {
		return nil
	}
	l := &learner{ix: ix, now: time.Now, quorum: max(quorum, 1), pending: map[string][]pendingSearch{},
		makers: map[learnLink][]string{}, pendingBy: map[string]int{}, agreedLinks: map[learnLink]bool{},
		counted: map[countedLink]bool{}, countedBy: map[string]int{}}
	if sl, ok := st.(searchLinks); ok && st != nil {
		l.store = sl
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		links, err := sl.SearchLinks(ctx)
		if err != nil {
			log.Warn("learning from use: read what was learned", "err", err)
		}
		ls := make([]search.Link, len(links))
		for i, k := range links {
			ls[i] = search.Link{Term: k.Term, Tool: k.Tool, Count: k.Count}
			l.agreedLinks[learnLink{k.Term, k.Tool}] = true
		}
		ix.SetLearned(ls)
	}
	return l
}

// learnQuorumOf is how many principals must make a link on the server
// cfg configures: one when it has a single principal (stdio, or HTTP
// with one token or none, and no OAuth), else learnQuorum, or all of its
// static principals when they are fewer.
func learnQuorumOf(cfg Config) int {
	principals := map[string]bool{}
	for _, t := range cfg.Auth {
		principals[t.Principal] = true
	}
	if cfg.OAuth != nil {
		return learnQuorum
	}
	return max(1, min(learnQuorum, len(principals)))
}

func learnKey(c tools.Caller) string { return c.Principal + "\x00" + c.Session }

// searched remembers a search of c's session.
func (l *learner) searched(c tools.Caller, query string) {
	if l == nil {
		return
	}
	terms := search.LearnTerms(query)
	if len(terms) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := learnKey(c)
	if _, ok := l.pending[k]; !ok && len(l.pending) >= learnMaxSessions {
		l.evict()
	}
	p := append(l.pending[k], pendingSearch{terms: terms, at: l.now()})
	if len(p) > learnPerSession {
		p = p[len(p)-learnPerSession:]
	}
	l.pending[k] = p
}

// evict drops the sessions whose searches are too old to be followed,
// or, when none are, the one searched least recently. Called with mu held.
func (l *learner) evict() {
	cutoff := l.now().Add(-learnWindow)
	oldest, oldestAt := "", time.Time{}
	for k, p := range l.pending {
		last := p[len(p)-1].at
		if last.Before(cutoff) {
			delete(l.pending, k)
			continue
		}
		if oldest == "" || last.Before(oldestAt) {
			oldest, oldestAt = k, last
		}
	}
	if len(l.pending) >= learnMaxSessions {
		delete(l.pending, oldest)
	}
}

// ran links the searches c's session made before a run to the catalogue
// tools the run called successfully, and forgets those searches.
func (l *learner) ran(ctx context.Context, c tools.Caller, view *tools.View, calls []engine.CallSummary) {
	if l == nil || len(calls) == 0 {
		return
	}
	var names []string
	for _, cs := range calls {
		t, ok := view.Get(cs.Tool)
		if !ok || t.Runtime || cs.Calls <= cs.Failed || slices.Contains(names, t.Name) {
			continue
		}
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return
	}
	if len(names) > memory.MaxSearchLinkTools {
		names = names[:memory.MaxSearchLinkTools]
	}
	l.mu.Lock()
	k := learnKey(c)
	p := l.pending[k]
	delete(l.pending, k)
	l.mu.Unlock()
	cutoff := l.now().Add(-learnWindow)
	for _, ps := range p {
		if ps.at.Before(cutoff) {
			continue
		}
		for _, name := range names {
			terms := l.agreed(c.Principal, ps.terms, name)
			if len(terms) == 0 {
				continue
			}
			l.ix.Learn(terms, []string{name})
			if l.store != nil {
				// The run's context may be cancelled as it ends; the
				// links are written on their own, bounded.
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = l.store.LearnSearch(ctx, terms, []string{name})
				cancel()
			}
		}
	}
}

// agreed notes that principal linked terms to tool, and returns the
// terms whose link to tool has its quorum of principals and counts for
// principal: all of them when one principal is enough. A link short of
// its quorum is kept while there is room (learnMaxPending, and
// learnPerPrincipal of them made by principal), and otherwise not
// learned. An agreed link counts once for each principal — its makers
// counted when it was agreed — and for at most learnPerPrincipal links
// of one principal.
func (l *learner) agreed(principal string, terms []string, tool string) []string {
	if l.quorum <= 1 {
		return terms
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, t := range terms {
		k := learnLink{t, tool}
		if l.agreedLinks[k] {
			if l.count(principal, k) {
				out = append(out, t)
			}
			continue
		}
		m, ok := l.makers[k]
		if slices.Contains(m, principal) ||
			!ok && len(l.makers) >= learnMaxPending ||
			l.pendingBy[principal] >= learnPerPrincipal {
			continue
		}
		m = append(m, principal)
		l.pendingBy[principal]++
		if len(m) >= l.quorum {
			// Agreed: it counts from now on, once for each principal, as
			// the store keeps it; its makers have counted.
			delete(l.makers, k)
			for _, p := range m {
				if l.pendingBy[p]--; l.pendingBy[p] <= 0 {
					delete(l.pendingBy, p)
				}
				l.count(p, k)
			}
			if len(l.agreedLinks) < learnMaxPending {
				l.agreedLinks[k] = true
			}
			out = append(out, t)
			continue
		}
		l.makers[k] = m
	}
	return out
}

// count notes that principal counts for the agreed link k, and reports
// whether it may: not when it counted for k before, nor past its share of
// links or the memory of counts. Called with mu held.
func (l *learner) count(principal string, k learnLink) bool {
	c := countedLink{principal, k}
	if l.counted[c] || len(l.counted) >= learnMaxCounted || l.countedBy[principal] >= learnPerPrincipal {
		return false
	}
	l.counted[c] = true
	l.countedBy[principal]++
	return true
}
