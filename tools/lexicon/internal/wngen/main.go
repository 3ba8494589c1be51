// Command wngen derives the general English lexicon of package lexicon
// (wordnet.txt.gz) from the WordNet 3.0 database files (Debian's
// wordnet-base installs them in /usr/share/wordnet):
//
//	go run ./internal/wngen -dict /usr/share/wordnet -out wordnet.txt.gz
//
// For each common single word (one that has a sense tagged in WordNet's
// semantic concordance) it keeps the words most closely related to its
// most frequent senses, each with a weight: the other words of the same
// sense (synonyms), words derived from it or it from them (park,
// parking), the words of the sense above it (garage: outbuilding), an
// adjective's similar words and the noun it pertains to, common words
// below it, and the content words of its definition at a low weight.
// Senses count by their rank in WordNet's frequency order. Irregular
// forms (children, went) are kept as aliases of their base word.
//
// WordNet 3.0 Copyright 2006 by Princeton University; its license (in
// WORDNET-LICENSE beside the output) allows use, copying, modification
// and distribution with the notice kept.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type pointer struct {
	sym    string
	offset int64
	pos    byte
	src    int // 1-based word of the source synset, 0 for the whole synset
	dst    int // 1-based word of the target synset, 0 for the whole synset
}

type synset struct {
	words    []string
	pointers []pointer
	gloss    string
}

type entry struct {
	senses []int64 // synset offsets, most frequent first
	tagged int     // how many of them are tagged in the concordance
}

var (
	synsets = map[byte]map[int64]*synset{}
	index   = map[byte]map[string]*entry{}
)

func main() {
	dict := flag.String("dict", "/usr/share/wordnet", "WordNet's dict directory")
	out := flag.String("out", "wordnet.txt.gz", "output file")
	show := flag.String("show", "", "print the relations of these comma-separated words instead")
	flag.Parse()
	for _, p := range []struct {
		pos  byte
		name string
	}{{'n', "noun"}, {'v', "verb"}, {'a', "adj"}, {'r', "adv"}} {
		readData(filepath.Join(*dict, "data."+p.name), p.pos)
		readIndex(filepath.Join(*dict, "index."+p.name), p.pos)
	}
	related := map[string]map[string]float64{}
	var keys []string
	for _, pos := range []byte{'n', 'v', 'a', 'r'} {
		for w, e := range index[pos] {
			if !plain(w) {
				continue
			}
			if related[w] == nil {
				related[w] = map[string]float64{}
				keys = append(keys, w)
			}
			relate(related[w], w, pos, e, posWeight(w, pos))
		}
	}
	sort.Strings(keys)
	if *show != "" {
		for _, w := range strings.Split(*show, ",") {
			fmt.Println(w, format(related[w]))
		}
		return
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	bw := bufio.NewWriter(zw)
	fmt.Fprintln(bw, "# Derived from WordNet 3.0 (Copyright 2006 by Princeton University; see WORDNET-LICENSE) by internal/wngen.")
	fmt.Fprintln(bw, "# word related/weight×10 …; =form base for irregular forms.")
	n := 0
	for _, w := range keys {
		line := format(related[w])
		if line == "" {
			continue
		}
		fmt.Fprintf(bw, "%s %s\n", w, line)
		n++
	}
	aliases := 0
	for _, name := range []string{"noun", "verb", "adj"} {
		aliases += writeExceptions(bw, filepath.Join(*dict, name+".exc"), related)
	}
	if err := bw.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d words, %d irregular forms", n, aliases)
}

// Weights of the relations, before the sense's own weight.
const (
	synonymW    = 0.9
	derivedW    = 0.8
	pertainW    = 0.8
	similarW    = 0.6
	hypernymW   = 0.5
	attributeW  = 0.5
	hyponymW    = 0.4
	glossW      = 0.3
	minWeight   = 0.2
	maxRelated  = 16
	maxHyponyms = 6
)

// senseWeight is the weight of a word's sense by its rank in WordNet's
// frequency order, lower for senses the concordance never saw.
func senseWeight(i, tagged int) float64 {
	w := []float64{1, 0.7, 0.5, 0.35}[min(i, 3)]
	if i >= tagged && i > 0 {
		w *= 0.5
	}
	return w
}

// posWeight weighs a word's part of speech by how common its use as
// that part is beside the others: the concordance's tags, else the
// number of senses ("peanut" is a noun more than an adjective).
func posWeight(w string, pos byte) float64 {
	tagged, senses := 0, 0
	for _, p := range []byte{'n', 'v', 'a', 'r'} {
		if e := index[p][w]; e != nil {
			tagged = max(tagged, e.tagged)
			senses = max(senses, len(e.senses))
		}
	}
	e := index[pos][w]
	switch {
	case tagged > 0 && e.tagged == 0:
		return 0.4
	case tagged == 0 && len(e.senses) < senses:
		return 0.6
	}
	return 1
}

func relate(out map[string]float64, w string, pos byte, e *entry, pw float64) {
	add := func(x string, weight float64) {
		x = strings.ToLower(x)
		weight *= pw
		if x == w || !plain(x) || weight < minWeight {
			return
		}
		out[x] = max(out[x], weight)
	}
	for i, off := range e.senses {
		if i >= 4 {
			break
		}
		sw := senseWeight(i, e.tagged)
		s := synsets[pos][off]
		if s == nil {
			continue
		}
		self := 0
		for j, x := range s.words {
			if strings.EqualFold(x, w) {
				self = j + 1
			} else {
				add(x, synonymW*sw)
			}
		}
		hypos := 0
		for _, p := range s.pointers {
			t := synsets[p.pos][p.offset]
			if t == nil {
				continue
			}
			lexical := p.src != 0
			if lexical && p.src != self {
				continue // a relation of another word of the sense
			}
			switch p.sym {
			case "+":
				for _, x := range targetWords(t, p) {
					add(x, derivedW*sw)
				}
			case "\\":
				for _, x := range targetWords(t, p) {
					add(x, pertainW*sw)
				}
			case "&":
				for _, x := range t.words[:min(2, len(t.words))] {
					add(x, similarW*sw)
				}
			case "=":
				for _, x := range t.words[:min(2, len(t.words))] {
					add(x, attributeW*sw)
				}
			case "@", "@i":
				for _, x := range t.words[:min(2, len(t.words))] {
					add(x, hypernymW*sw)
				}
			case "~", "~i":
				if i > 0 || hypos >= maxHyponyms {
					continue
				}
				// Only common words below it: "vehicle" → car, not
				// every make of it.
				x := t.words[0]
				if e := index[p.pos][strings.ToLower(x)]; e != nil && e.tagged > 0 && len(e.senses) > 0 && e.senses[0] == p.offset {
					add(x, hyponymW*sw)
					hypos++
				}
			}
		}
		if i < 2 {
			for _, g := range glossWords(s.gloss) {
				add(g, glossW*sw)
			}
		}
	}
}

// targetWords are the words a pointer leads to: its target word for a
// lexical pointer, else the target synset's first words.
func targetWords(t *synset, p pointer) []string {
	if p.dst > 0 && p.dst <= len(t.words) {
		return t.words[p.dst-1 : p.dst]
	}
	return t.words[:min(2, len(t.words))]
}

// glossWords are the common content words of a definition's first
// clause, in their base form.
func glossWords(g string) []string {
	if i := strings.IndexAny(g, ";\""); i >= 0 {
		g = g[:i]
	}
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(g), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if len(f) < 3 || glossStop[f] {
			continue
		}
		if b, ok := base(f); ok {
			out = append(out, b)
		}
	}
	return out
}

var glossStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for that with from into onto which who whom whose what when where this these those
		are was were been being has have had having not but its their his her them they such any some all each
		one two used use using make made makes something someone somebody thing things person people act way
		especially usually often also other another more most less very can may will would should could part kind
		state quality being having become give given take taken get gets set put being characterized relating
		pertaining small large good new old like etc`) {
		m[w] = true
	}
	return m
}()

// base returns the word's base form if it is a common noun or verb:
// the word itself, or it with a regular ending taken off.
func base(w string) (string, bool) {
	common := func(x string) bool {
		for _, pos := range []byte{'n', 'v'} {
			if e := index[pos][x]; e != nil && e.tagged > 0 {
				return true
			}
		}
		return false
	}
	if common(w) {
		return w, true
	}
	for _, r := range [][2]string{{"ies", "y"}, {"es", ""}, {"s", ""}, {"ed", ""}, {"ed", "e"}, {"ing", ""}, {"ing", "e"}} {
		if strings.HasSuffix(w, r[0]) {
			x := strings.TrimSuffix(w, r[0]) + r[1]
			if common(x) {
				return x, true
			}
		}
	}
	return "", false
}

func format(rel map[string]float64) string {
	type kv struct {
		w string
		v float64
	}
	var kvs []kv
	for w, v := range rel {
		kvs = append(kvs, kv{w, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.w, b.w)
	})
	var b strings.Builder
	for i, x := range kvs {
		if i >= maxRelated {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s/%d", x.w, int(x.v*10+0.5))
	}
	return b.String()
}

// plain reports whether w is one lower-case word of letters.
func plain(w string) bool {
	if len(w) < 2 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func writeExceptions(bw *bufio.Writer, path string, related map[string]map[string]float64) int {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || !plain(fs[0]) || related[fs[1]] == nil || related[fs[0]] != nil {
			continue
		}
		fmt.Fprintf(bw, "=%s %s\n", fs[0], fs[1])
		n++
	}
	return n
}

func readData(path string, pos byte) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	m := map[int64]*synset{}
	synsets[pos] = m
	if pos == 'a' {
		synsets['s'] = m
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		body, gloss, _ := strings.Cut(line, " | ")
		fs := strings.Fields(body)
		off, _ := strconv.ParseInt(fs[0], 10, 64)
		wcnt, _ := strconv.ParseInt(fs[3], 16, 64)
		s := &synset{gloss: strings.TrimSpace(gloss)}
		i := 4
		for range wcnt {
			w := fs[i]
			if j := strings.IndexByte(w, '('); j > 0 {
				w = w[:j] // an adjective's marker: (a), (p), (ip)
			}
			s.words = append(s.words, strings.ToLower(w))
			i += 2
		}
		pcnt, _ := strconv.Atoi(fs[i])
		i++
		for range pcnt {
			o, _ := strconv.ParseInt(fs[i+1], 10, 64)
			st, _ := strconv.ParseInt(fs[i+3], 16, 64)
			p := fs[i+2][0]
			if p == 's' {
				p = 'a'
			}
			s.pointers = append(s.pointers, pointer{sym: fs[i], offset: o, pos: p, src: int(st >> 8), dst: int(st & 0xff)})
			i += 4
		}
		m[off] = s
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
}

func readIndex(path string, pos byte) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	m := map[string]*entry{}
	index[pos] = m
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		fs := strings.Fields(line)
		scnt, _ := strconv.Atoi(fs[2])
		pcnt, _ := strconv.Atoi(fs[3])
		i := 4 + pcnt
		tagged, _ := strconv.Atoi(fs[i+1])
		e := &entry{tagged: tagged}
		for _, o := range fs[i+2 : i+2+scnt] {
			off, _ := strconv.ParseInt(o, 10, 64)
			e.senses = append(e.senses, off)
		}
		m[fs[0]] = e
	}
}
