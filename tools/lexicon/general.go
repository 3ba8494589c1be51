package lexicon

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed" // the general lexicon
	"slices"
	"strings"
	"sync"
)

//go:generate go run ./internal/wngen -dict /usr/share/wordnet -out wordnet.txt.gz

// wordnetData is the general English lexicon, derived from WordNet 3.0
// by internal/wngen (WordNet 3.0 Copyright 2006 by Princeton
// University; its license is in WORDNET-LICENSE).
//
//go:embed wordnet.txt.gz
var wordnetData []byte

// Rel is a word related to another, with how closely (0 to 1: 0.9 for a
// synonym of its most frequent sense, less for a broader word, a word
// of its definition or a rarer sense).
type Rel struct {
	Word   string
	Weight float64
}

// lexiconData is the general lexicon, read on first use: each word's
// related words, and irregular forms' base words.
type lexiconData struct {
	related map[string][]Rel
	alias   map[string]string
}

var general = sync.OnceValue(func() lexiconData {
	d := lexiconData{related: make(map[string][]Rel, 80000), alias: map[string]string{}}
	zr, err := gzip.NewReader(bytes.NewReader(wordnetData))
	if err != nil {
		panic("lexicon: embedded wordnet.txt.gz: " + err.Error())
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if word[0] == '=' {
			d.alias[word[1:]] = rest
			continue
		}
		fs := strings.Fields(rest)
		rels := make([]Rel, 0, len(fs))
		for _, f := range fs {
			w, n, ok := strings.Cut(f, "/")
			if !ok || n == "" {
				continue
			}
			v := 0
			for _, c := range n {
				v = v*10 + int(c-'0')
			}
			rels = append(rels, Rel{Word: w, Weight: float64(v) / 10})
		}
		d.related[word] = rels
	}
	if err := sc.Err(); err != nil {
		panic("lexicon: embedded wordnet.txt.gz: " + err.Error())
	}
	return d
})

// Base returns the dictionary form of a lower-case English word that
// the general lexicon knows ("parked" → park, "children" → child,
// "offices" → office), other than the word itself, and whether there is
// one.
func Base(w string) (string, bool) {
	g := general()
	if b, ok := g.alias[w]; ok {
		return b, true
	}
	for _, r := range inflections {
		if len(w) > len(r.suffix)+1 && strings.HasSuffix(w, r.suffix) {
			b := w[:len(w)-len(r.suffix)] + r.base
			if _, ok := g.related[b]; ok {
				return b, true
			}
		}
	}
	return "", false
}

// inflections are WordNet's rules of detachment (morphy): a regular
// ending and what replaces it, tried in order.
var inflections = []struct{ suffix, base string }{
	{"ies", "y"}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"},
	{"es", "e"}, {"es", ""}, {"s", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}, {"er", ""}, {"est", ""},
	{"er", "e"}, {"est", "e"},
}

// General returns the words related to a lower-case English word in
// general use, closest first: its synonyms, the words derived from it
// or it from them, broader words, common narrower ones and the words of
// its definition (from WordNet), each with its weight. An inflected
// form ("parked", "children") also has its base form and the base's
// related words. Nil when the lexicon does not know the word.
func General(w string) []Rel {
	g := general()
	own := g.related[w]
	b, ok := Base(w)
	if !ok || b == w {
		return own
	}
	weight := map[string]float64{}
	var order []string
	add := func(x string, v float64) {
		if x == w {
			return
		}
		if _, seen := weight[x]; !seen {
			order = append(order, x)
		}
		weight[x] = max(weight[x], v)
	}
	add(b, 1)
	for _, r := range own {
		add(r.Word, r.Weight)
	}
	for _, r := range g.related[b] {
		add(r.Word, r.Weight*0.9)
	}
	out := make([]Rel, len(order))
	for i, x := range order {
		out[i] = Rel{Word: x, Weight: weight[x]}
	}
	slices.SortStableFunc(out, func(a, b Rel) int {
		switch {
		case a.Weight > b.Weight:
			return -1
		case a.Weight < b.Weight:
			return 1
		}
		return 0
	})
	return out
}
