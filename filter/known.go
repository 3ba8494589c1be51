package filter

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Known values: a Flow remembers values a run received from tools, and
// finds them again wherever the program puts them — in tool arguments
// (for the rules) and in everything it outputs (to hide sensitive ones) —
// whole, inside longer strings, with their case or spacing changed, or
// encoded in base64 (standard or URL alphabet, padded or not), hex or URL
// percent-encoding.
//
// Values are kept folded (case folded, whitespace dropped). A text is
// searched in views: folded as it is, folded after URL decoding, and each
// run of base64 or hex characters decoded at every alignment, then
// folded. An index over the first 6 and 8 bytes of the values, behind a
// bit filter, finds every value in a view in one pass whatever the number
// of values.

// Lengths of known values.
const (
	// minKnownLen is the shortest folded value searched for: a sensitive
	// value of 6 bytes (as minSweepLen).
	minKnownLen = 6
	// minTrackLen is the shortest folded value tracked for the rules:
	// shorter strings (status words, flags, small numbers, short codes)
	// recur in unrelated data by chance, so a rule on them would refuse
	// innocent calls.
	minTrackLen = 8
	// maxPatternLen bounds a value's folded form; a longer value is
	// searched for by its first maxPatternLen bytes.
	maxPatternLen = 256
	// minB64Run and minHexRun are the shortest runs decoded: the encoding
	// of minKnownLen bytes.
	minB64Run = 8
	minHexRun = 2 * minKnownLen
)

// encoding says how a known value was found.
type encoding uint8

const (
	encPlain encoding = iota // as received, or with case or spacing changed
	encURL
	encBase64
	encHex
	encJSON
)

func (e encoding) String() string {
	switch e {
	case encURL:
		return "URL-encoded"
	case encBase64:
		return "base64-encoded"
	case encHex:
		return "hex-encoded"
	case encJSON:
		return "JSON-escaped"
	}
	return ""
}

// fold appends to dst the folded form of s: letters case-folded as
// JavaScript's case changes need (casefold.go), whitespace dropped, a
// byte that is not UTF-8 read as a Latin-1 character.
// With withIdx, idx gets, for each byte appended, the offset in s of the
// rune it belongs to.
func fold(dst []byte, idx []int32, s string, withIdx bool) ([]byte, []int32) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if isSpace(c) {
				continue
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			if withIdx {
				idx = append(idx, int32(i-1))
			}
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		dst, idx = foldRune(dst, idx, withIdx, r, w, c, i)
		i += w
	}
	return dst, idx
}

// foldBytes is fold for bytes.
func foldBytes(dst []byte, idx []int32, s []byte, withIdx bool) ([]byte, []int32) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if isSpace(c) {
				continue
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			if withIdx {
				idx = append(idx, int32(i-1))
			}
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		dst, idx = foldRune(dst, idx, withIdx, r, w, c, i)
		i += w
	}
	return dst, idx
}

// foldRune folds the non-ASCII rune r of width w at offset i, whose first
// byte is c: as casefold.go says, and a byte that is not UTF-8 as the
// Latin-1 character of its value — what a program's escape(), its hex of
// char codes or a byte-wise atob give for "ß" is the byte 0xDF, and the
// fold of both is "ss".
func foldRune(dst []byte, idx []int32, withIdx bool, r rune, w int, c byte, i int) ([]byte, []int32) {
	if r == utf8.RuneError && w == 1 {
		r = rune(c)
	}
	if unicode.IsSpace(r) {
		return dst, idx
	}
	n := len(dst)
	dst = foldedRune(dst, r)
	if withIdx {
		for range len(dst) - n {
			idx = append(idx, int32(i))
		}
	}
	return dst, idx
}

// foldString returns the folded form of s.
func foldString(s string) []byte {
	b, _ := fold(make([]byte, 0, len(s)), nil, s, false)
	return b
}

func load6(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40
}

// valueIndex finds known values (folded, minKnownLen bytes or more) in a
// folded text. Values are ids into a table the caller keeps.
type valueIndex struct {
	bits   []uint64 // bit filter over the first 6 bytes
	shift  uint
	n      int
	heads8 map[uint64]int32 // first 8 bytes → group+1, for values of 8 bytes or more
	heads6 map[uint64]int32 // first 6 bytes → group+1, for values of 6 or 7 bytes
	groups []indexGroup
	nodes  []indexNode
	// crowd holds the heads of 8 bytes with more than crowdLimit groups
	// (lengths): their values are found by the automata of levels,
	// in one step a byte, not by a lookup a length a position.
	crowd  map[uint64]bool
	levels []acLevel
	// pendPats and pendIDs are the values of crowded heads added since
	// the last flush.
	pendPats []string
	pendIDs  []int32
}

// crowdLimit is the number of lengths of one head looked up one by one
// at a position; a head with more is searched by automaton.
const crowdLimit = 4

// acLevel is a set of the values of crowded heads: its automaton, which
// keeps them (revAC.pats, ids). The values of a batch of adds make a new
// level, merged (and its automaton rebuilt) with the one before it as
// long as it is as large: a value is in O(log n) builds, and a search
// walks O(log n) automata (Bentley and Saxe's logarithmic method).
type acLevel struct {
	ac *revAC
}

// What the automata of crowded values cost, at most, a byte and a value
// of the values they hold: acNodeBytes a node and a node a byte at most,
// and while a level is rebuilt its build's temporaries (the reversed
// values, the trie in depth-first order, the renumbering: acBuildBytes a
// byte, acBuildValue a value, the levels merged into it dropped first).
// A flow counts a value of a crowded head at crowdCost (acCost for the
// values a head moves when it becomes crowded): one level can hold every
// value, so the most a rebuild takes is what every value costs at once.
// TestCrowdedBuildCounted checks them against the allocations of builds.
const (
	acNodeBytes  = 21
	acBuildBytes = 28
	acValueBytes = 24 // revAC.pats, ids, next
	acBuildValue = 96 // the reversed value (its header, its size class), the order, the batch's and the merge's pats and ids
)

// acCost is what the automata cost for values of n bytes in all, count
// of them.
func acCost(n, count int) int {
	return (acNodeBytes+acBuildBytes)*n + (acValueBytes+acBuildValue)*count
}

// crowdedBytes returns the bytes and the number of the values that adding
// pat (folded, at most maxPatternLen bytes) would put in the automata:
// pat alone when its head is crowded, every value of its head when pat
// makes it crowded, else none.
func (ix *valueIndex) crowdedBytes(pat []byte) (n, count int) {
	if len(pat) < 8 || ix.heads8 == nil {
		return 0, 0
	}
	k := binary.LittleEndian.Uint64(pat)
	if ix.crowd[k] {
		return len(pat), 1
	}
	lengths := 0
	for g := ix.heads8[k]; g != 0; g = ix.groups[g-1].next {
		grp := &ix.groups[g-1]
		if int(grp.length) == len(pat) {
			return 0, 0
		}
		lengths++
		n += int(grp.length) * int(grp.n)
		count += int(grp.n)
	}
	if lengths < crowdLimit {
		return 0, 0
	}
	return n + len(pat), count + 1
}

// addCrowded adds a value of a crowded head to those flush puts in the
// automata.
func (ix *valueIndex) addCrowded(pat string, id int32) {
	ix.pendPats = append(ix.pendPats, pat)
	ix.pendIDs = append(ix.pendIDs, id)
}

// flush makes the values added to crowded heads since the last flush a
// level, merged with the levels before it as long as it is as large, and
// builds its automaton. The writer of an index flushes it at the end of
// a batch of adds (a result observed); until then, find looks every
// length up one by one. The automata of the levels merged are dropped
// before the merged one is built: the build's peak is the merged level's
// alone (see acCost).
func (ix *valueIndex) flush() {
	if len(ix.pendPats) == 0 {
		return
	}
	pats, ids := ix.pendPats, ix.pendIDs
	ix.pendPats, ix.pendIDs = nil, nil
	n, count := len(ix.levels), len(pats)
	for n >= 1 && count >= len(ix.levels[n-1].ac.pats) {
		n--
		count += len(ix.levels[n].ac.pats)
	}
	if n < len(ix.levels) {
		mp, mi := make([]string, 0, count), make([]int32, 0, count)
		for i := range ix.levels[n:] {
			mp = append(mp, ix.levels[n+i].ac.pats...)
			mi = append(mi, ix.levels[n+i].ac.ids...)
			ix.levels[n+i].ac = nil
		}
		pats, ids = append(mp, pats...), append(mi, ids...)
		ix.levels = ix.levels[:n]
	}
	ix.levels = append(ix.levels, acLevel{ac: newRevAC(pats, ids)})
}

// indexGroup holds the values of one head and one length: a chain of
// them, and past groupChain values a map from pattern to the values that
// have it. At a position of a text, a head's groups are looked at one by
// one (one per length), each in one lookup: comparing every value of a
// head in turn cost k² for k values of one head (attack14 I1's class).
type indexGroup struct {
	length int32
	next   int32 // the head's next group+1, or 0
	first  int32 // node+1 of the chain of its values
	n      int32
	byPat  map[string]int32 // pattern → node+1 of the values that have it, chained by same
}

// groupChain is the number of values of a group compared one by one.
const groupChain = 4

type indexNode struct {
	id   int32
	next int32 // node+1 of the group's next value, or 0
	same int32 // node+1 of the next value of the same pattern, once the group has byPat
}

func (ix *valueIndex) hash(k6 uint64) uint64 { return (k6 * 0x9E3779B97F4A7C15) >> ix.shift }

func (ix *valueIndex) set(k6 uint64) {
	h := ix.hash(k6)
	ix.bits[h/64] |= 1 << (h % 64)
}

// add indexes value id, whose folded form in tab is pat (tab.pattern(id)).
// hint is the number of values about to be added, to size the maps.
func (ix *valueIndex) add(pat string, id int32, tab valueTable, hint int) {
	if ix.heads8 == nil {
		ix.heads8, ix.heads6 = make(map[uint64]int32, hint), map[uint64]int32{}
		ix.bits, ix.shift = make([]uint64, 64), 64-12
		for len(ix.bits)*64 < 32*hint && len(ix.bits) < 1<<20 {
			ix.bits = make([]uint64, 2*len(ix.bits))
			ix.shift--
		}
	}
	if ix.n++; ix.n*32 > len(ix.bits)*64 {
		ix.grow()
	}
	heads := ix.heads6
	k := load6s(pat)
	if len(pat) >= 8 {
		heads, k = ix.heads8, load8s(pat)
	}
	g := heads[k]
	for g != 0 && int(ix.groups[g-1].length) != len(pat) {
		g = ix.groups[g-1].next
	}
	newGroup := g == 0
	if newGroup {
		ix.groups = append(ix.groups, indexGroup{length: int32(len(pat)), next: heads[k]})
		g = int32(len(ix.groups))
		heads[k] = g
	}
	grp := &ix.groups[g-1]
	ix.nodes = append(ix.nodes, indexNode{id: id, next: grp.first})
	nd := int32(len(ix.nodes))
	grp.first = nd
	grp.n++
	switch {
	case grp.byPat != nil:
		ix.nodes[nd-1].same = grp.byPat[pat]
		grp.byPat[pat] = nd
	case grp.n > groupChain:
		grp.byPat = make(map[string]int32, 2*grp.n)
		for c := grp.first; c != 0; c = ix.nodes[c-1].next {
			p := tab.pattern(ix.nodes[c-1].id)
			ix.nodes[c-1].same = grp.byPat[p]
			grp.byPat[p] = c
		}
	}
	ix.set(k & (1<<48 - 1))
	if len(pat) < 8 {
		return
	}
	switch {
	case ix.crowd[k]:
		ix.addCrowded(pat, id)
	case newGroup:
		n := 0
		for h := heads[k]; h != 0; h = ix.groups[h-1].next {
			n++
		}
		if n <= crowdLimit {
			return
		}
		if ix.crowd == nil {
			ix.crowd = map[uint64]bool{}
		}
		ix.crowd[k] = true
		for h := heads[k]; h != 0; h = ix.groups[h-1].next {
			for nd := ix.groups[h-1].first; nd != 0; nd = ix.nodes[nd-1].next {
				ix.addCrowded(tab.pattern(ix.nodes[nd-1].id), ix.nodes[nd-1].id)
			}
		}
	}
}

// load6s and load8s are load6 and binary.LittleEndian.Uint64 of a string.
func load6s(s string) uint64 {
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 | uint64(s[4])<<32 | uint64(s[5])<<40
}

func load8s(s string) uint64 { return load6s(s) | uint64(s[6])<<48 | uint64(s[7])<<56 }

// grow doubles the bit filter until it has 32 bits per value.
func (ix *valueIndex) grow() {
	for ix.n*32 > len(ix.bits)*64 {
		ix.bits = make([]uint64, 2*len(ix.bits))
		ix.shift--
	}
	for k := range ix.heads8 {
		ix.set(k & (1<<48 - 1))
	}
	for k := range ix.heads6 {
		ix.set(k)
	}
}

// valueTable gives the folded forms of the values of an index.
type valueTable interface {
	// pattern is a value's folded form, at most maxPatternLen bytes.
	pattern(id int32) string
	// full is the whole folded form of a value longer than that, else "".
	full(id int32) string
}

// find calls emit for every value that occurs in the folded text t, with
// its bounds in t, by start, until emit returns findStop. At a start,
// values come longest first (ties by id) from the automata, and emit
// returns the shortest end still wanted there: a shorter value is then
// not reported (the values of one length all are). With segs (the ends of
// the segments of t, increasing), a value emit took in a segment
// (returned neither findHere nor findStop) is not reported again there
// (the automata's values: those of the other heads, at most crowdLimit
// lengths a position, are). With letters, values of letters only are not
// reported at a start where letters says they cannot count.
func (ix *valueIndex) find(t []byte, tab valueTable, segs []int, letters func(a int) bool, fs *findScratch, emit func(start, end int, id int32) int) bool {
	if ix.n == 0 {
		return true
	}
	if len(ix.levels) == 0 || len(ix.pendPats) > 0 {
		// Every length looked up (values added and not flushed yet are
		// in no automaton).
		for i := 0; i+minKnownLen <= len(t); i++ {
			k6 := load6(t[i:])
			h := ix.hash(k6)
			if ix.bits[h/64]&(1<<(h%64)) == 0 {
				continue
			}
			if i+8 <= len(t) && !ix.findGroups(t, i, ix.heads8[binary.LittleEndian.Uint64(t[i:])], tab, emit) {
				return false
			}
			if !ix.findGroups(t, i, ix.heads6[k6], tab, emit) {
				return false
			}
		}
		return true
	}
	seg := 0
	if segs != nil {
		clear(fs.seen)
	}
	for c0 := 0; c0+minKnownLen <= len(t); c0 += findChunk {
		c1 := min(len(t)-minKnownLen+1, c0+findChunk)
		// The positions where a value may start, and where one of a
		// crowded head may.
		fs.hits, fs.pos = fs.hits[:0], fs.pos[:0]
		for i := c0; i < c1; i++ {
			k6 := load6(t[i:])
			h := ix.hash(k6)
			if ix.bits[h/64]&(1<<(h%64)) == 0 {
				continue
			}
			hit := findHit{at: int32(i), g6: ix.heads6[k6], crowded: -1}
			if i+8 <= len(t) {
				k8 := binary.LittleEndian.Uint64(t[i:])
				if ix.crowd[k8] {
					hit.crowded = int32(len(fs.pos))
					fs.pos = append(fs.pos, int32(i))
				} else {
					hit.g8 = ix.heads8[k8]
				}
			}
			if hit.g6 != 0 || hit.g8 != 0 || hit.crowded >= 0 {
				fs.hits = append(fs.hits, hit)
			}
		}
		if len(fs.pos) > 0 {
			fs.states = slices.Grow(fs.states[:0], len(ix.levels))[:len(ix.levels)]
			for l := range ix.levels {
				fs.states[l] = acStates(ix.levels[l].ac, t, len(t), fs.pos, fs.states[l])
			}
		}
		for _, hit := range fs.hits {
			i := int(hit.at)
			if segs != nil {
				for seg < len(segs) && i >= segs[seg] {
					seg++
					clear(fs.seen)
				}
			}
			want := 0
			if hit.crowded >= 0 {
				if want = ix.findLevels(i, int(hit.crowded), letters == nil || letters(i), segs != nil, fs, emit); want < 0 {
					return false
				}
			}
			if hit.g8 != 0 && !ix.findGroups(t, i, hit.g8, tab, emit) {
				return false
			}
			// The heads of 6 bytes hold values of 6 or 7 bytes, shorter
			// than those of the automata.
			if hit.g6 != 0 && (want == 0 || i+7 >= want) && !ix.findGroups(t, i, hit.g6, tab, emit) {
				return false
			}
		}
	}
	return true
}

// findChunk is the number of positions find looks at before walking the
// automata over them: a walk starts over at most once a chunk.
const findChunk = 4096

// findScratch is what find reuses from one text to the next.
type findScratch struct {
	hits   []findHit
	pos    []int32   // positions of crowded heads
	states [][]int32 // by level, the state at each of pos
	cur    []int32   // by level, the next node of outputs at a position
	depth  []int     // and its depth, or 0
	walk   []walked  // the nodes reported at a position, with dedupe
	tail   []bool
	seen   map[uint64]bool
}

type findHit struct {
	at      int32
	g6, g8  int32 // groups+1 of heads of 6 and (not crowded) 8 bytes
	crowded int32 // index in findScratch.pos, or -1
}

// findLevels calls emit for the values of the automata that start at
// t[i:], the k-th crowded position, longest first across the levels, and
// returns the shortest end still wanted there, or -1 when emit stopped.
// Without letters, values of letters only are passed over. With dedupe, a
// node whose values and chain after it were all taken at an earlier start
// (emit returned no findHere) is passed over with its chain.
func (ix *valueIndex) findLevels(i, k int, letters, dedupe bool, fs *findScratch, emit func(start, end int, id int32) int) int {
	fs.cur = slices.Grow(fs.cur[:0], len(ix.levels))[:len(ix.levels)]
	fs.depth = slices.Grow(fs.depth[:0], len(ix.levels))[:len(ix.levels)]
	for l := range ix.levels {
		ac := ix.levels[l].ac
		u := ac.out(fs.states[l][k])
		if !letters {
			u = ac.nl[u]
		}
		fs.cur[l], fs.depth[l] = u, 0
		if u != 0 {
			fs.depth[l] = ac.depth(u)
		}
	}
	fs.walk = fs.walk[:0]
	flag := uint64(0)
	if letters {
		flag = 1 << 31
	}
	want := 0
	for {
		best, depth := -1, 0
		for l, d := range fs.depth {
			if d > depth {
				best, depth = l, d
			}
		}
		if best < 0 || i+depth < want {
			break
		}
		ac := ix.levels[best].ac
		u := fs.cur[best]
		next := ac.dict[u]
		if !letters {
			next = ac.nl[next]
		}
		if dedupe && fs.seen[uint64(best)<<32|flag|uint64(u)] {
			next = 0 // it and the rest of its chain were taken before
		} else {
			ok := true
			for e := ac.term[u]; e != 0; e = ac.next[e-1] {
				w := emit(i, i+depth, ac.ids[e-1])
				if w == findHere {
					ok = false
					continue
				}
				if w == findStop {
					return findStop
				}
				want = max(want, w)
			}
			if dedupe {
				fs.walk = append(fs.walk, walked{level: int32(best), node: u, ok: ok})
			}
		}
		fs.cur[best], fs.depth[best] = next, 0
		if next != 0 {
			fs.depth[best] = ac.depth(next)
		}
	}
	if dedupe && len(fs.walk) > 0 {
		// A node is taken for good when it and every node after it in its
		// chain were: from the end of each level's walk backwards.
		fs.tail = slices.Grow(fs.tail[:0], len(ix.levels))[:len(ix.levels)]
		for l := range fs.tail {
			fs.tail[l] = true
		}
		if fs.seen == nil {
			fs.seen = map[uint64]bool{}
		}
		for j := len(fs.walk) - 1; j >= 0; j-- {
			w := fs.walk[j]
			if fs.tail[w.level] = fs.tail[w.level] && w.ok; fs.tail[w.level] {
				fs.seen[uint64(w.level)<<32|flag|uint64(w.node)] = true
			}
		}
	}
	return want
}

// What emit returns to find besides the shortest end it wants: stop, or
// that it passed over a value at this start only (a word that does not
// start or end there).
const (
	findStop = -1
	findHere = -2
)

type walked struct {
	level, node int32
	ok          bool
}

// findGroups calls emit for the values of the groups from g on that
// occur at t[i:].
func (ix *valueIndex) findGroups(t []byte, i int, g int32, tab valueTable, emit func(start, end int, id int32) int) bool {
	for ; g != 0; g = ix.groups[g-1].next {
		grp := &ix.groups[g-1]
		end := i + int(grp.length)
		if end > len(t) {
			continue
		}
		w := t[i:end]
		if grp.byPat != nil {
			for nd := grp.byPat[string(w)]; nd != 0; nd = ix.nodes[nd-1].same {
				if emit(i, end, ix.nodes[nd-1].id) == findStop {
					return false
				}
			}
			continue
		}
		for nd := grp.first; nd != 0; nd = ix.nodes[nd-1].next {
			if id := ix.nodes[nd-1].id; tab.pattern(id) == string(w) && emit(i, end, id) == findStop {
				return false
			}
		}
	}
	return true
}

// knownMatch is a known value found in a text: s[start:end] holds it
// (for an encoded value, the whole encoded run).
type knownMatch struct {
	start, end int
	id         int32
	enc        encoding
}

// matchVerdict is what the receiver of a match says of it.
type matchVerdict uint8

const (
	matchNext  matchVerdict = iota // go on
	matchTaken                     // kept: a shorter match at its start is not wanted
	matchStop                      // stop the search
)

// viewer makes the views of texts, reusing its buffers.
type viewer struct {
	fs   findScratch
	long longMatcher
	// dedupe lets the search report a value once a view (or decoding)
	// for a receiver to whom where it is does not matter.
	dedupe bool
	// plainOnly limits the next search to the plain view.
	plainOnly bool
	folded    []byte
	fm        foldMap // offsets in the text of folded bytes, when a match needs them
	dec       []byte
	dsrc      []int32 // for each decoded byte, the offset of its source in s
	dend      []int32 // and the end of its source
	segs      []runSeg
	segEnds   []int
	b64raw    []byte
}

// search calls emit for every value of the indexes that occurs in s, in
// any view, until emit returns matchStop. Matches of the plain and URL
// views come with their exact bounds in s (a value longer than
// maxPatternLen with all of it when all of it is there), by start; once
// emit has taken one, matches at its start that end before it may not be
// reported. Matches in an encoded run span the run; a value found twice
// in one decoding of a run may be reported once. The same value may be
// reported more than once. Runs that overlap a region of skip (ordered)
// are not decoded. With bounded, letters-only values count only as whole
// words (see wordBounded).
func (v *viewer) search(s string, skip []span, ixs []*valueIndex, tab valueTable, bounded bool, emit func(knownMatch) matchVerdict) {
	if len(s) < minKnownLen {
		return
	}
	// Plain. Offsets in s are worked out only for a match, which is rare.
	v.folded, _ = fold(v.folded[:0], nil, s, false)
	v.long.reset()
	v.fm.reset()
	var segs []int
	if v.dedupe {
		segs = []int{len(v.folded) + 1}
	}
	var letters func(a int) bool
	if bounded {
		letters = func(a int) bool {
			return !joinsBefore(s, v.fm.at(s, nil, a))
		}
	}
	for _, ix := range ixs {
		ok := ix.find(v.folded, tab, segs, letters, &v.fs, func(a, pb int, id int32) int {
			b := v.long.extend(v.folded, a, pb, id, tab.full(id))
			start := v.fm.at(s, nil, a)
			last := v.fm.at(s, nil, b-1)
			_, w := utf8.DecodeRuneInString(s[last:])
			if bounded && !wordBounded(s, start, last+w, tab.pattern(id)) {
				return findHere
			}
			return verdictWant(emit(knownMatch{start: start, end: last + w, id: id, enc: encPlain}), v.folded, pb)
		})
		if !ok {
			return
		}
	}
	if v.plainOnly {
		return
	}
	// URL-decoded ('+' is a space there, which folding drops), and with
	// JSON string escapes undone (a value JSON.stringify put in a text),
	// and those decodings of those, maxViewDepth deep.
	if !v.searchLayers(s, s, nil, ixs, tab, bounded, emit) {
		return
	}
	// Base64 and hex runs, decoded into one buffer.
	v.dec, v.segs = v.dec[:0], v.segs[:0]
	ref := 0
	for i := 0; i < len(s); {
		if !isB64Char(s[i]) {
			i++
			continue
		}
		e := i
		for e < len(s) && (isB64Char(s[e]) || s[e] == '\r' || s[e] == '\n') {
			e++
		}
		for e < len(s) && s[e] == '=' {
			e++
		}
		for ref < len(skip) && skip[ref].end <= i {
			ref++
		}
		if ref >= len(skip) || skip[ref].start >= e {
			v.decodeRun(s, i, e)
		}
		i = e
	}
	if len(v.segs) == 0 {
		return
	}
	// Fold the decodings that may hold text into one buffer, each
	// followed by a separator that no value holds.
	v.folded = v.folded[:0]
	kept := v.segs[:0]
	for _, sg := range v.segs {
		d := v.dec[sg.decStart:sg.decEnd]
		if !mayHoldText(d) {
			continue
		}
		sg.foldStart = len(v.folded)
		v.folded, _ = foldBytes(v.folded, nil, d, false)
		sg.foldEnd = len(v.folded)
		v.folded = append(v.folded, segSep)
		kept = append(kept, sg)
	}
	v.segs = kept
	v.segEnds = v.segEnds[:0]
	for _, sg := range v.segs {
		v.segEnds = append(v.segEnds, sg.foldEnd+1)
	}
	for _, ix := range ixs {
		ok := ix.find(v.folded, tab, v.segEnds, nil, &v.fs, func(a, b int, id int32) int {
			k, _ := slices.BinarySearchFunc(v.segs, a, func(sg runSeg, at int) int { return sg.foldEnd - 1 - at })
			if k >= len(v.segs) || a < v.segs[k].foldStart || b > v.segs[k].foldEnd {
				return 0 // across two decodings
			}
			sg := v.segs[k]
			if emit(knownMatch{start: sg.start, end: sg.end, id: id, enc: sg.enc}) == matchStop {
				return findStop
			}
			return 0
		})
		if !ok {
			return
		}
	}
}

// maxViewDepth is how many decodings deep search follows a text: URL
// encoding and JSON string escapes, each of the other or of itself — a
// JSON text in a query parameter (encodeURIComponent(JSON.stringify(o))),
// JSON text in JSON text (an API's field that is a JSON string), a part
// URL-encoded twice — and one more of those. Each layer is a view searched
// whole, only where the layer above holds the escapes of the next; at
// most 2+4+8 views of a text that holds both at every depth.
const maxViewDepth = 3

// layer is one decoding of the views.
type layer struct {
	decode func(v *viewer, s string, track bool)
	enc    encoding
}

var layers = [...]layer{{(*viewer).urlDecode, encURL}, {(*viewer).jsonUnescape, encJSON}}

// searchLayers searches the views of s one decoding below chain, whose
// decoding of s is cur, and those below them, until maxViewDepth deep. A
// match is said to be in the encoding of the outermost decoding. It
// returns false when emit stopped the search.
func (v *viewer) searchLayers(s, cur string, chain []layer, ixs []*valueIndex, tab valueTable, bounded bool, emit func(knownMatch) matchVerdict) bool {
	if len(chain) == maxViewDepth {
		return true
	}
	for _, l := range layers {
		switch l.enc {
		case encURL:
			// A '+' is a space in the text itself only: JSON text with a
			// phone number in it is not a form's encoding.
			if !hasPercentEscape(cur) && (chain != nil || strings.IndexByte(cur, '+') < 0) {
				continue
			}
		case encJSON:
			if strings.IndexByte(cur, '\\') < 0 {
				continue
			}
		}
		c := append(chain[:len(chain):len(chain)], l)
		decode := l.decode
		if len(c) > 1 {
			decode = func(v *viewer, s string, track bool) { v.decodeLayers(s, c, track) }
		}
		if !v.searchDecoded(s, decode, c[0].enc, ixs, tab, bounded, emit) {
			return false
		}
		if len(c) < maxViewDepth && !v.searchLayers(s, string(v.dec), c, ixs, tab, bounded, emit) {
			return false
		}
	}
	return true
}

// decodeLayers decodes s by each layer of chain in turn into v.dec, and
// with track, the source in s of each byte into v.dsrc and v.dend.
func (v *viewer) decodeLayers(s string, chain []layer, track bool) {
	chain[0].decode(v, s, track)
	for _, l := range chain[1:] {
		prev := string(v.dec)
		var psrc, pend []int32
		if track {
			psrc, pend = slices.Clone(v.dsrc), slices.Clone(v.dend)
		}
		l.decode(v, prev, track)
		if track {
			for k := range v.dsrc {
				v.dsrc[k], v.dend[k] = psrc[v.dsrc[k]], pend[v.dend[k]-1]
			}
		}
	}
}

// searchDecoded is search's view of s decoded by decode (which fills
// v.dec and, with track, v.dsrc and v.dend), whose matches come with
// their bounds in s. It returns false when emit stopped the search.
func (v *viewer) searchDecoded(s string, decode func(v *viewer, s string, track bool), enc encoding, ixs []*valueIndex, tab valueTable, bounded bool, emit func(knownMatch) matchVerdict) bool {
	decode(v, s, false)
	v.folded, _ = foldBytes(v.folded[:0], nil, v.dec, false)
	v.long.reset()
	v.fm.reset()
	tracked := false
	track := func() {
		if !tracked {
			decode(v, s, true)
			tracked = true
		}
	}
	var segs []int
	if v.dedupe {
		segs = []int{len(v.folded) + 1}
	}
	var letters func(a int) bool
	if bounded {
		letters = func(a int) bool {
			track()
			return !joinsBefore(v.dec, v.fm.at("", v.dec, a))
		}
	}
	for _, ix := range ixs {
		ok := ix.find(v.folded, tab, segs, letters, &v.fs, func(a, pb int, id int32) int {
			track()
			b := v.long.extend(v.folded, a, pb, id, tab.full(id))
			first := v.fm.at("", v.dec, a)
			start := int(v.dsrc[first])
			last := v.fm.at("", v.dec, b-1)
			_, w := utf8.DecodeRune(v.dec[last:])
			end := int(v.dend[last+w-1])
			// Words are bounded in the decoded text: "%20" or "\n" before
			// a name is a space.
			if bounded && !wordBounded(v.dec, first, last+w, tab.pattern(id)) {
				return findHere
			}
			return verdictWant(emit(knownMatch{start: start, end: end, id: id, enc: enc}), v.folded, pb)
		})
		if !ok {
			return false
		}
	}
	return true
}

// verdictWant turns a verdict on a match of the plain or URL view whose
// pattern ends at pb in the folded text t into what find wants: once one
// is taken, only matches that may end where it does in the text, those
// whose pattern ends in the same folded rune or after.
func verdictWant(vd matchVerdict, t []byte, pb int) int {
	switch vd {
	case matchStop:
		return findStop
	case matchTaken:
		j := pb - 1
		for j > pb-utf8.UTFMax && j > 0 && !utf8.RuneStart(t[j]) {
			j--
		}
		return j + 1
	}
	return 0
}

// mayHoldText reports whether decoded bytes hold minKnownLen bytes in a
// row of text: printable ASCII, whitespace or UTF-8 sequences (a lead
// byte and its continuation bytes). Decodings of what was not an encoding
// are noise that rarely does.
func mayHoldText(d []byte) bool {
	n := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c >= 0x20 && c < 0x7f, c == '\t', c == '\n', c == '\r':
			n++
		case c >= 0xC2 && c <= 0xF4:
			w := 2
			if c >= 0xE0 {
				w = 3
			}
			if c >= 0xF0 {
				w = 4
			}
			if i+w > len(d) {
				return false
			}
			for j := i + 1; j < i+w; j++ {
				if d[j]&0xC0 != 0x80 {
					n, w = 0, 1
					break
				}
			}
			if w > 1 {
				n += w
				i += w - 1
			}
		default:
			n = 0
		}
		if n >= minKnownLen {
			return true
		}
	}
	return false
}

// runSeg is one decoding of a run in viewer.dec, and its folded form in
// viewer.folded.
type runSeg struct {
	decStart, decEnd   int // in dec
	foldStart, foldEnd int // in folded
	start, end         int // the run in s
	enc                encoding
}

// decodeRun appends the decodings of the run s[start:end] of base64
// characters (with line breaks and padding) to v.dec: as hex at both
// alignments if it is hex digits only, else as base64 at each of the 4
// alignments. A run that cannot encode minKnownLen bytes of text is
// skipped: too short, or without mixed case or digits (base64 of text has
// both; a word does not).
func (v *viewer) decodeRun(s string, start, end int) {
	if end-start < minB64Run {
		return
	}
	upper, lower, digit, other, hexOnly := false, false, false, false, true
	for i := start; i < end; i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case isDigit(c):
			digit = true
		default:
			other = true
		}
		if !isHex(c) {
			hexOnly = false
		}
	}
	if hexOnly {
		// Hex digits alone are taken for hex: a base64 encoding made of
		// them only is improbable.
		if end-start < minHexRun || !digit {
			return
		}
		for k := range 2 {
			d := len(v.dec)
			for i := start + k; i+1 < end; i += 2 {
				v.dec = append(v.dec, unhex(s[i])<<4|unhex(s[i+1]))
			}
			v.segs = append(v.segs, runSeg{decStart: d, decEnd: len(v.dec), start: start, end: end, enc: encHex})
		}
		return
	}
	if !((upper && lower) || (digit && (upper || lower)) || other) {
		return
	}
	// The run without line breaks and padding, the URL alphabet mapped to
	// the standard one.
	raw := v.b64raw[:0]
	for i := start; i < end; i++ {
		switch c := s[i]; c {
		case '\r', '\n', '=':
		case '-':
			raw = append(raw, '+')
		case '_':
			raw = append(raw, '/')
		default:
			raw = append(raw, c)
		}
	}
	v.b64raw = raw
	for k := range 4 {
		if len(raw)-k < minB64Run {
			break
		}
		if !asciiGroups(raw[k:]) {
			continue
		}
		src := raw[k:]
		if len(src)%4 == 1 {
			src = src[:len(src)-1]
		}
		d := len(v.dec)
		v.dec = slices.Grow(v.dec, base64.RawStdEncoding.DecodedLen(len(src)))
		dst := v.dec[d : d+base64.RawStdEncoding.DecodedLen(len(src))]
		// Every byte of src is in the alphabet: Decode cannot fail.
		n, _ := base64.RawStdEncoding.Decode(dst, src)
		v.dec = v.dec[:d+n]
		v.segs = append(v.segs, runSeg{decStart: d, decEnd: len(v.dec), start: start, end: end, enc: encBase64})
	}
}

// asciiGroups reports whether base64 text, read from its start, has two
// groups in a row whose first character encodes a byte below 0x80 (one
// of A–Z, a–f): the encoding of minKnownLen bytes of mostly ASCII text
// does, while ids, dates and codes that happen to use the alphabet rarely
// do. Other alignments and runs are not decoded.
func asciiGroups(b []byte) bool {
	n := 0
	for g := 0; g+4 <= len(b); g += 4 {
		if c := b[g]; (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'f') {
			if n++; n == 2 {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// segSep separates decodings: 0xFF is never part of UTF-8 text.
const segSep = 0xFF

func isB64Char(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

func hasPercentEscape(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0 && i+2 < len(s); {
		if _, w := percentEscape(s, i); w > 0 {
			return true
		}
		j := strings.IndexByte(s[i+1:], '%')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// percentEscape decodes the escape at s[i] ('%'): %XX, a byte (r below
// 0x100), or %uXXXX, a UTF-16 code unit (what JavaScript's escape()
// writes for a character past 0xFF). w is the escape's length, 0 when
// there is none.
func percentEscape(s string, i int) (r rune, w int) {
	switch {
	case i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
		return rune(unhex(s[i+1]))<<4 | rune(unhex(s[i+2])), 3
	case i+5 < len(s) && s[i+1] == 'u' && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]):
		return hex4(s[i+2:]), 6
	}
	return 0, 0
}

// hex4 is the value of the 4 hex digits s starts with.
func hex4(s string) rune {
	return rune(unhex(s[0]))<<12 | rune(unhex(s[1]))<<8 | rune(unhex(s[2]))<<4 | rune(unhex(s[3]))
}

// urlDecode decodes %XX escapes, %uXXXX escapes (as UTF-8, a surrogate
// pair joined) and '+' (a space) of s into v.dec, and with track, the
// offsets of each byte's source into v.dsrc and v.dend. A byte of a %XX
// that is not part of UTF-8 is folded as Latin-1 (foldRune).
func (v *viewer) urlDecode(s string, track bool) {
	v.dec, v.dsrc, v.dend = v.dec[:0], v.dsrc[:0], v.dend[:0]
	for i := 0; i < len(s); {
		c, w := s[i], 1
		switch {
		case c == '%':
			r, n := percentEscape(s, i)
			if n == 6 {
				if utf16.IsSurrogate(r) && i+11 < len(s) && s[i+6] == '%' {
					if r2, n2 := percentEscape(s, i+6); n2 == 6 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r, n = d, 12
						}
					}
				}
				v.appendRune(r, i, i+n, track)
				i += n
				continue
			}
			if n == 3 {
				c, w = byte(r), 3
			}
		case c == '+':
			c = ' '
		}
		v.dec = append(v.dec, c)
		if track {
			v.dsrc = append(v.dsrc, int32(i))
			v.dend = append(v.dend, int32(i+w))
		}
		i += w
	}
}

// appendRune appends r, decoded from s[start:end], to v.dec as UTF-8 (a
// lone surrogate as U+FFFD), and with track, its source to v.dsrc and
// v.dend.
func (v *viewer) appendRune(r rune, start, end int, track bool) {
	n := len(v.dec)
	v.dec = utf8.AppendRune(v.dec, r)
	if track {
		for range len(v.dec) - n {
			v.dsrc = append(v.dsrc, int32(start))
			v.dend = append(v.dend, int32(end))
		}
	}
}

// jsonUnescape undoes the JSON string escapes of s into v.dec (\n, \t,
// \", \\, \uXXXX with surrogate pairs joined, ...; anything else is copied),
// and with track, the offsets of each byte's source into v.dsrc and
// v.dend: the text a JSON.stringify of a value holds, seen as the value.
func (v *viewer) jsonUnescape(s string, track bool) {
	v.dec, v.dsrc, v.dend = v.dec[:0], v.dsrc[:0], v.dend[:0]
	for i := 0; i < len(s); {
		c, w := s[i], 1
		if c == '\\' && i+1 < len(s) {
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				c, w = e, 2
			case 'n':
				c, w = '\n', 2
			case 't':
				c, w = '\t', 2
			case 'r':
				c, w = '\r', 2
			case 'b':
				c, w = '\b', 2
			case 'f':
				c, w = '\f', 2
			case 'u':
				if i+5 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
					r, n := hex4(s[i+2:]), 6
					if utf16.IsSurrogate(r) && i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' && isHex(s[i+8]) && isHex(s[i+9]) && isHex(s[i+10]) && isHex(s[i+11]) {
						if d := utf16.DecodeRune(r, hex4(s[i+8:])); d != utf8.RuneError {
							r, n = d, 12
						}
					}
					v.appendRune(r, i, i+n, track)
					i += n
					continue
				}
			}
		}
		v.dec = append(v.dec, c)
		if track {
			v.dsrc = append(v.dsrc, int32(i))
			v.dend = append(v.dend, int32(i+w))
		}
		i += w
	}
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// wordBounded reports whether a match of pattern at s[start:end] may
// count. A value made of letters only (a name, a phrase) counts only as
// whole words: once whitespace is dropped, "Ada Lovelace" would otherwise
// match inside "Nevada lovelaces", and short phrases inside any text.
// Values with a digit or a symbol (addresses, ids, numbers, keys) count
// anywhere.
func wordBounded[T string | []byte](s T, start, end int, pattern string) bool {
	for i := 0; i < len(pattern); i++ {
		if c := pattern[i]; c < 0x80 && !isAlpha(c) {
			return true
		}
	}
	return !joinsBefore(s, start) && !joinsAfter(s, end)
}

// joinsBefore and joinsAfter report whether a letter, a digit or a mark (a
// combining accent) is just before s[i] or at it: a word goes on there.
// Punctuation and spaces past ASCII — ’, « », —, a no-break space — end
// a word as their ASCII kin do. A byte that is not UTF-8 is read as a
// Latin-1 character, as fold reads it. Scripts written without spaces
// between words (Chinese, Japanese, Thai …) have no word ends to see: a
// rune of one on either side joins nothing, so a name in a Japanese
// sentence ("請求先は" + name + "です") is a word of it.
func joinsBefore[T string | []byte](s T, i int) bool {
	if i == 0 {
		return false
	}
	if c := s[i-1]; c < utf8.RuneSelf {
		return isAlnum(c) && (i == len(s) || s[i] < utf8.RuneSelf || !isSpaceless(runeAt(s, i)))
	}
	r := runeBefore(s, i)
	return isWordRune(r) && !isSpaceless(r) && (i == len(s) || !isSpaceless(runeAt(s, i)))
}

func joinsAfter[T string | []byte](s T, i int) bool {
	if i >= len(s) {
		return false
	}
	if c := s[i]; c < utf8.RuneSelf {
		return isAlnum(c) && (i == 0 || s[i-1] < utf8.RuneSelf || !isSpaceless(runeBefore(s, i)))
	}
	r := runeAt(s, i)
	return isWordRune(r) && !isSpaceless(r) && (i == 0 || !isSpaceless(runeBefore(s, i)))
}

// runeAt and runeBefore read the rune at s[i] and the one ending there, a
// byte that is not UTF-8 as a Latin-1 character.
func runeAt[T string | []byte](s T, i int) rune {
	r, w := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
	if r == utf8.RuneError && w == 1 {
		r = rune(s[i])
	}
	return r
}

func runeBefore[T string | []byte](s T, i int) rune {
	r, w := utf8.DecodeLastRuneInString(string(s[max(0, i-utf8.UTFMax):i]))
	if r == utf8.RuneError && w == 1 {
		r = rune(s[i-1])
	}
	return r
}

// spaceless are the scripts written without spaces between words.
var spaceless = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar, unicode.Tibetan}

func isSpaceless(r rune) bool { return r >= 0x0E00 && unicode.IsOneOf(spaceless, r) }

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// longMatcher finds where values longer than maxPatternLen occur whole in
// one folded text: asked, by increasing start, whether a
// value occurs at a start where its first maxPatternLen bytes do, it
// scans the text forwards with the value's Knuth–Morris–Pratt table, from
// where it stopped or, past a gap, from that start. Comparing the value
// at each such start cost its length a position: one value of 100 KB and
// 1 MiB of the letter it was made of, 2 s.
type longMatcher struct {
	m map[int32]*longScan
}

type longScan struct {
	fail []int32 // the value's failure function
	pos  int     // the text is scanned up to here
	j    int     // with this many bytes of the value matched
	occ  []int   // starts of the occurrences found, from head on not yet passed
	head int
}

func (lm *longMatcher) reset() { clear(lm.m) }

// extend returns the end of a match at t[a:b] of value id, whose whole
// folded form is full (when longer than its pattern): past the whole
// value when t holds all of it, else b.
func (lm *longMatcher) extend(t []byte, a, b int, id int32, full string) int {
	if full == "" || len(t)-a < len(full) {
		return b
	}
	sc := lm.m[id]
	if sc == nil {
		if lm.m == nil {
			lm.m = map[int32]*longScan{}
		}
		sc = &longScan{fail: kmpTable(full)}
		lm.m[id] = sc
	}
	if sc.pos < a {
		sc.pos, sc.j, sc.occ, sc.head = a, 0, sc.occ[:0], 0
	}
	for end := a + len(full); sc.pos < end; sc.pos++ {
		c := t[sc.pos]
		for sc.j > 0 && full[sc.j] != c {
			sc.j = int(sc.fail[sc.j-1])
		}
		if full[sc.j] == c {
			sc.j++
		}
		if sc.j == len(full) {
			sc.occ = append(sc.occ, sc.pos+1-len(full))
			sc.j = int(sc.fail[sc.j-1])
		}
	}
	for sc.head < len(sc.occ) && sc.occ[sc.head] < a {
		sc.head++
	}
	if sc.head > 64 && sc.head > len(sc.occ)/2 {
		sc.occ = sc.occ[:copy(sc.occ, sc.occ[sc.head:])]
		sc.head = 0
	}
	if sc.head < len(sc.occ) && sc.occ[sc.head] == a {
		return a + len(full)
	}
	return b
}

// kmpTable returns the failure function of p: for each prefix, the length
// of its longest proper prefix that is also its suffix.
func kmpTable(p string) []int32 {
	f := make([]int32, len(p))
	k := 0
	for i := 1; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = int(f[k-1])
		}
		if p[i] == p[k] {
			k++
		}
		f[i] = int32(k)
	}
	return f
}

// foldMap maps offsets in a text's fold back to the text, for the few
// matches a search reports. A map of every folded byte would be 4 bytes a
// folded byte — up to 12 a byte of the text (maxFoldGrowth), hundreds of
// megabytes for a long output that holds one known value — so the map
// keeps a checkpoint every foldChunk bytes of the text (where the fold of
// a chunk begins), and folds again, with offsets, only the chunk a match
// is in. Folding is rune by rune and drops nothing across runes, so the
// fold of a chunk cut at a rune is that part of the whole text's fold.
// Two chunks are kept, the last ones used: a match's start and end may be
// in two, and matches come by their start.
type foldMap struct {
	built bool
	ckF   []int32 // for each chunk, where its fold begins in the fold
	ckS   []int32 // and where it begins in the text
	wins  [2]foldWindow
	last  int // the window used last
	buf   []byte
}

// foldWindow is one chunk of a foldMap folded with its offsets.
type foldWindow struct {
	k   int // the chunk, or -1
	buf []byte
	idx []int32
}

// foldChunk is the bytes of text between two checkpoints of a foldMap.
const foldChunk = 4096

func (fm *foldMap) reset() { fm.built, fm.wins[0].k, fm.wins[1].k = false, -1, -1 }

// at returns the offset in the text (s, or b when s is empty) of the rune
// the folded byte at a belongs to.
func (fm *foldMap) at(s string, b []byte, a int) int {
	n := len(s)
	if n == 0 {
		n = len(b)
	}
	if !fm.built {
		fm.ckF, fm.ckS = fm.ckF[:0], fm.ckS[:0]
		f := 0
		for i := 0; i < n; {
			j := min(i+foldChunk, n)
			if j < n {
				j = fm.boundary(s, b, j)
			}
			fm.ckF, fm.ckS = append(fm.ckF, int32(f)), append(fm.ckS, int32(i))
			fm.buf, _ = fm.foldPart(fm.buf[:0], nil, s, b, i, j, false)
			f += len(fm.buf)
			i = j
		}
		fm.built = true
	}
	k, _ := slices.BinarySearch(fm.ckF, int32(a)+1) // the first chunk past a
	k--
	w := &fm.wins[fm.last]
	if w.k != k {
		fm.last = 1 - fm.last
		w = &fm.wins[fm.last]
		if w.k != k {
			end := n
			if k+1 < len(fm.ckS) {
				end = int(fm.ckS[k+1])
			}
			w.buf, w.idx = fm.foldPart(w.buf[:0], w.idx[:0], s, b, int(fm.ckS[k]), end, true)
			w.k = k
		}
	}
	return int(fm.ckS[k]) + int(w.idx[a-int(fm.ckF[k])])
}

// foldPart folds text[i:j] into dst, with idx when withIdx.
func (fm *foldMap) foldPart(dst []byte, idx []int32, s string, b []byte, i, j int, withIdx bool) ([]byte, []int32) {
	if len(s) > 0 {
		return fold(dst, idx, s[i:j], withIdx)
	}
	return foldBytes(dst, idx, b[i:j], withIdx)
}

// boundary returns j, or the start of the rune j is inside as fold reads
// the text (a byte that does not begin a valid rune is one).
func (fm *foldMap) boundary(s string, b []byte, j int) int {
	for k := j - 1; k >= 0 && k >= j-(utf8.UTFMax-1); k-- {
		var c byte
		if len(s) > 0 {
			c = s[k]
		} else {
			c = b[k]
		}
		if !utf8.RuneStart(c) {
			continue
		}
		var w int
		if len(s) > 0 {
			_, w = utf8.DecodeRuneInString(s[k:])
		} else {
			_, w = utf8.DecodeRune(b[k:])
		}
		if k+w > j {
			return k
		}
		return j
	}
	return j
}
