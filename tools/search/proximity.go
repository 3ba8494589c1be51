package search

import "github.com/codecell/codecell/tools/lexicon"

// Term proximity: a tool whose name, summary or first sentence says the
// query's verb next to the thing it asks about ("Delete a reference" for
// "kill the old branch" read as delete + branch) says what was asked,
// where one that holds both words apart may not. Off while both boosts
// are 0.
var (
	// proxVerbBoost raises a tool that has one of the query's verb words
	// followed, within proxWindow words, by a word for what it asks about.
	proxVerbBoost = 0.0
	// proxPhraseBoost raises a tool that has two consecutive words of the
	// query within proxWindow words of each other, in order, in its
	// summary or first sentence.
	proxPhraseBoost = 0.0
	// proxWindow is how far apart, in words (stop words dropped), two
	// words still count as next to each other.
	proxWindow = 2
)

// sequences returns the single words of a tool's name, summary and first
// sentence, each in order.
func sequences(ft *[numFields][]string) [][]string {
	var out [][]string
	for _, f := range []int{fieldName, fieldSummary, fieldLead} {
		var seq []string
		for _, t := range ft[f] {
			if isWord(t) {
				seq = append(seq, t)
			}
		}
		if len(seq) > 1 {
			out = append(out, seq)
		}
	}
	return out
}

// proximity is what the query gives proximity to look for.
type proximity struct {
	verbs, heads map[string]bool
	pairs        [][2]string // consecutive query words
}

func proximityOf(qa *query, weights map[string]float64) *proximity {
	if proxVerbBoost == 0 && proxPhraseBoost == 0 {
		return nil
	}
	p := &proximity{verbs: map[string]bool{}, heads: map[string]bool{}}
	if v := qa.lx.Verb; v != "" && qa.lx.Head != "" {
		p.verbs[v] = true
		for t, w := range weights {
			if w >= lexicon.VerbWeight && qa.lx.IsVerbWord(t) {
				p.verbs[t] = true
			}
			if w >= lexicon.SynonymWeight && qa.lx.IsHead(t) {
				p.heads[t] = true
			}
		}
		p.heads[qa.lx.Head] = true
	}
	for i := 1; i < len(qa.terms); i++ {
		p.pairs = append(p.pairs, [2]string{qa.terms[i-1], qa.terms[i]})
	}
	return p
}

// factor is what proximity makes of d's score.
func (p *proximity) factor(d *doc) float64 {
	f := 1.0
	if proxVerbBoost > 0 && len(p.verbs) > 0 && p.near(d, func(a, b string) bool { return p.verbs[a] && p.heads[b] }) {
		f *= 1 + proxVerbBoost
	}
	if proxPhraseBoost > 0 && len(p.pairs) > 0 && p.near(d, func(a, b string) bool {
		for _, q := range p.pairs {
			if q[0] == a && q[1] == b {
				return true
			}
		}
		return false
	}) {
		f *= 1 + proxPhraseBoost
	}
	return f
}

// near reports whether one of d's sequences has words a then b, within
// proxWindow, for which ok holds.
func (p *proximity) near(d *doc, ok func(a, b string) bool) bool {
	for _, seq := range d.seqs {
		for i := range seq {
			for j := i + 1; j < len(seq) && j-i <= proxWindow; j++ {
				if ok(seq[i], seq[j]) {
					return true
				}
			}
		}
	}
	return false
}
