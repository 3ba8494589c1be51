package filter

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/codecell/codecell/tools/jsonstr"
)

// Limits.
const (
	// DefaultBudget is the response budget when none is given: 16 KiB.
	DefaultBudget = 16 << 10
	// MinBudget is the smallest budget; smaller ones are raised to it.
	MinBudget = 64
	// DefaultMaxDepth is the nesting depth beyond which containers are
	// summarized.
	DefaultMaxDepth = 16
)

// Cut kinds.
const (
	CutArray  = "array"  // trailing items left out
	CutObject = "object" // trailing fields left out
	CutString = "string" // a string shortened
	CutNumber = "number" // a number literal too long for its share, shown as a cut string
	CutKey    = "key"    // an object key shortened
	CutDepth  = "depth"  // a container nested too deep, summarized
)

// Cut is one place where Limit shortened the document.
type Cut struct {
	// Path is the JSON Pointer (RFC 6901) of the shortened value in the
	// original document; "" is the whole document.
	Path string `json:"path"`
	// Kind is one of the Cut* constants.
	Kind string `json:"kind"`
	// Total and Kept count items (array), fields (object, depth) or bytes
	// (string, number, key) in the original and in the output.
	Total int `json:"total"`
	Kept  int `json:"kept"`
}

// LimitOptions configure Limit.
type LimitOptions struct {
	// Budget is the largest output in bytes. 0 means DefaultBudget;
	// smaller than MinBudget means MinBudget.
	Budget int
	// MaxDepth is the deepest container shown; deeper ones are
	// summarized. 0 means DefaultMaxDepth.
	MaxDepth int
}

func (o LimitOptions) normalized() LimitOptions {
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	o.Budget = max(o.Budget, MinBudget)
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// Limit returns doc cut to fit the budget, and where it was cut. The
// output is always valid JSON no larger than the budget, and the same
// input and options always give the same output. How it cuts:
//
//   - An array keeps its first items and ends with a marker string
//     "… 950 more items".
//   - An object keeps its first fields and ends with a marker field
//     "…": "120 more fields".
//   - A string keeps its head and ends with "… [cut: 12345 bytes total]".
//     A token (⟦class:hex⟧) is never split.
//   - A container deeper than MaxDepth becomes "[… 12 items]" or
//     "{… 3 fields}".
//   - A key longer than an eighth of its share keeps its head, "…" and
//     the field's index: "very_long_key…#3".
//
// Space is shared out fairly: every kept value gets either its full size
// or an equal share of what is left. An array keeps as many leading items
// as it can while each gets its full size or at least 1/8 of the array's
// space (64 bytes or more); an object keeps as many leading fields as it
// can while each gets its full size or 1/32 of the object's space (32
// bytes or more). Space a value leaves unused passes to later siblings.
func Limit(doc json.RawMessage, opts LimitOptions) (json.RawMessage, []Cut, error) {
	root, err := parseJSON(doc)
	if err != nil {
		return nil, nil, err
	}
	measure(&root)
	out, _, lim := limitTree(&root, opts.normalized(), maxCutsListed)
	return out, lim.cuts, nil
}

// limitTree returns the limited encoding of root, which must be measured,
// the limited tree and the limiter's record of cuts, of which it lists
// up to maxCuts.
func limitTree(root *node, opts LimitOptions, maxCuts int) ([]byte, node, *limiter) {
	out, fitted, l := fitTree(root, opts, maxCuts)
	if len(out) > opts.Budget {
		// Not reached unless the size accounting is wrong; the fuzz tests
		// check fitTree without this net.
		fitted = stringNode("… result too large to show")
		out = appendJSON(out[:0], &fitted)
	}
	return out, fitted, l
}

// fitTree fits root, which must be measured, to the budget and encodes
// it.
func fitTree(root *node, opts LimitOptions, maxCuts int) ([]byte, node, *limiter) {
	l := &limiter{maxDepth: opts.MaxDepth, maxCuts: maxCuts}
	fitted := l.fit(root, opts.Budget, 0, nil)
	out := appendJSON(make([]byte, 0, min(fitted.size, opts.Budget)), &fitted)
	return out, fitted, l
}

// pathElem is a JSON Pointer built only when a cut needs it.
type pathElem struct {
	parent *pathElem
	key    string
	index  int
	isKey  bool
}

func (p *pathElem) String() string {
	var toks []string
	for ; p != nil; p = p.parent {
		tok := p.key
		if !p.isKey {
			tok = strconv.Itoa(p.index)
		}
		toks = append(toks, tok)
	}
	slices.Reverse(toks)
	return reportPointer(toks)
}

type limiter struct {
	maxDepth  int
	maxCuts   int
	cuts      []Cut
	cutsTotal int
}

func (l *limiter) cut(p *pathElem, kind string, total, kept int) {
	l.cutsTotal++
	if len(l.cuts) < l.maxCuts {
		l.cuts = append(l.cuts, Cut{Path: p.String(), Kind: kind, Total: total, Kept: kept})
	}
}

// minSize is the smallest output fit can make of a node of size s.
func minSize(s int) int { return min(s, len(ellipsisJSON)) }

const (
	ellipsis     = "…"
	ellipsisJSON = `"…"`
)

func stringNode(s string) node {
	return node{kind: kindString, str: s, size: jsonstr.Size(s)}
}

// fit returns n, shortened if needed so that its encoding is at most b
// bytes. It requires b ≥ minSize(n.size); the result has size set.
func (l *limiter) fit(n *node, b, depth int, p *pathElem) node {
	if n.size <= b && depth+int(n.height) <= l.maxDepth {
		return *n
	}
	switch n.kind {
	case kindString:
		return l.cutString(n.str, b, p, CutString)
	case kindNumber:
		return l.cutString(n.str, b, p, CutNumber)
	case kindArray:
		return l.fitArray(n, b, depth, p)
	case kindObject:
		return l.fitObject(n, b, depth, p)
	}
	return *n // null and booleans are never larger than minSize
}

func cutNote(total int) string {
	return "… [cut: " + strconv.Itoa(total) + " bytes total]"
}

// cutString returns s cut to at most b encoded bytes with a note of its
// full length.
func (l *limiter) cutString(s string, b int, p *pathElem, kind string) node {
	note := cutNote(len(s))
	avail := b - 2 - len(note) // the note needs no escaping
	if avail <= 0 {
		l.cut(p, kind, len(s), 0)
		return stringNode(ellipsis)
	}
	head := headWithin(s, avail)
	l.cut(p, kind, len(s), len(head))
	return stringNode(head + note)
}

// headWithin returns the longest prefix of s, ending on a rune boundary
// and outside any token, whose encoding takes at most avail bytes
// (without quotes).
func headWithin(s string, avail int) string {
	used, i := 0, 0
	for i < len(s) {
		enc, w := jsonstr.RuneSize(s, i)
		if used+enc > avail {
			break
		}
		used += enc
		i += w
	}
	head := s[:i]
	// Do not leave half a token: cut before an unclosed opening bracket.
	if o := strings.LastIndex(head, tokenOpen); o >= 0 && !strings.Contains(head[o:], tokenClose) {
		head = head[:o]
	}
	return head
}

// summary returns the text a too-deep container becomes, or the bare
// ellipsis if b is too small for it. A container smaller than its summary
// stays as it is.
func (l *limiter) summary(n *node, b int, p *pathElem) node {
	var s string
	if n.kind == kindArray {
		s = "[… " + countNoun(len(n.kids), "item") + "]"
	} else {
		s = "{… " + countNoun(len(n.kids), "field") + "}"
	}
	sum := stringNode(s)
	if n.size <= b && n.size <= sum.size {
		return *n
	}
	l.cut(p, CutDepth, len(n.kids), 0)
	if sum.size > b {
		return stringNode(ellipsis)
	}
	return sum
}

func countNoun(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

func moreItems(n int) string  { return "… " + strconv.Itoa(n) + " more " + plural(n, "item") }
func moreFields(n int) string { return strconv.Itoa(n) + " more " + plural(n, "field") }

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// itemFloor is the least space a kept array item gets when it cannot
// have its full size: 1/8 of the array's space, at least 64 bytes. Items
// are kept whole rather than many shrunk to uselessness.
func itemFloor(b int) int { return max(64, b/8) }

// fieldFloor is the same for object fields: 1/32 of the object's space,
// at least 32 bytes. An object keeps its keys rather than whole values.
func fieldFloor(b int) int { return max(32, b/32) }

// waterLevel returns the largest level L such that Σ min(s_i, L) ≤ avail,
// or math.MaxInt if everything fits in full.
func waterLevel(sizes []int, avail int, scratch []int) int {
	sorted := append(scratch[:0], sizes...)
	slices.Sort(sorted)
	rem := avail
	for i, s := range sorted {
		k := len(sorted) - i
		if s*k <= rem {
			rem -= s
			continue
		}
		if rem < 0 {
			return -1
		}
		return rem / k
	}
	if rem < 0 {
		return -1
	}
	return math.MaxInt
}

// choose returns how many leading elements to keep and the water level
// for them. avail(k) is the space their values may take when k are kept.
// k is good when every kept element gets its full size or at least floor:
// Σ min(size, min(floor, largest)) ≤ avail(k). good holds up to some k and
// fails after, except that keeping everything drops the marker and may be
// good again; the search only ever settles on a good k.
func choose(sizes []int, limitK int, avail func(k int) int, floor int) (int, int) {
	maxPrefix := make([]int, 0, limitK)
	m := 0
	for _, s := range sizes[:limitK] {
		m = max(m, s)
		maxPrefix = append(maxPrefix, m)
	}
	fits := func(k, f int) bool {
		a := avail(k)
		if a < 0 {
			return false
		}
		sum := 0
		for _, s := range sizes[:k] {
			if sum += min(s, f); sum > a {
				return false
			}
		}
		return true
	}
	good := func(k int) bool { return fits(k, min(floor, maxPrefix[k-1])) }
	level := func(k int) int {
		if k == 0 {
			return math.MaxInt
		}
		return waterLevel(sizes[:k], avail(k), nil)
	}
	if limitK > 0 && good(limitK) {
		return limitK, level(limitK)
	}
	lo, hi := 0, limitK-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if good(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	k := lo
	if k == 0 && limitK > 0 && fits(1, minSize(sizes[0])) {
		k = 1
	}
	return k, level(k)
}

func (l *limiter) fitArray(n *node, b, depth int, p *pathElem) node {
	N := len(n.kids)
	if N > 0 && depth >= l.maxDepth {
		return l.summary(n, b, p)
	}
	sizes := make([]int, 0, min(N, b))
	limitK := min(N, (b-2)/2+1)
	for i := range limitK {
		sizes = append(sizes, n.kids[i].size)
	}
	avail := func(k int) int {
		a := b - 2
		if k > 1 {
			a -= k - 1
		}
		if k < N {
			if k > 0 {
				a--
			}
			a -= jsonstr.Size(moreItems(N - k))
		}
		return a
	}
	k, lvl := choose(sizes, limitK, avail, itemFloor(b))
	if k == 0 {
		l.cut(p, CutArray, N, 0)
		marker := stringNode(moreItems(N))
		if marker.size+2 > b {
			return stringNode(ellipsis)
		}
		return node{kind: kindArray, kids: []node{marker}, size: marker.size + 2, height: 1}
	}
	out := node{kind: kindArray, kids: make([]node, 0, k+1)}
	l.fillKids(n, &out, nil, sizes[:k], lvl, avail(k), depth, p)
	size := 2 + k - 1
	for i := range out.kids {
		size += out.kids[i].size
	}
	if k < N {
		l.cut(p, CutArray, N, k)
		marker := stringNode(moreItems(N - k))
		out.kids = append(out.kids, marker)
		size += 1 + marker.size
	}
	out.size = size
	return out
}

// fillKids fits the first len(sizes) children of n into out, sharing rem
// bytes: each gets its planned share min(size, level) plus whatever the
// children before it left unused. keys, for an object, are the keys to
// give them.
func (l *limiter) fillKids(n, out *node, keys []string, sizes []int, level, rem, depth int, p *pathElem) {
	planned := 0
	for _, s := range sizes {
		planned += min(s, level)
	}
	for i, s := range sizes {
		planned -= min(s, level)
		alloc := min(s, rem-planned)
		child := &pathElem{parent: p, index: i}
		if n.kind == kindObject {
			child = &pathElem{parent: p, key: n.kids[i].key, isKey: true}
		}
		k := l.fit(&n.kids[i], alloc, depth+1, child)
		rem -= k.size
		k.key = ""
		if keys != nil {
			k.key = keys[i]
		}
		out.kids = append(out.kids, k)
	}
}

func (l *limiter) fitObject(n *node, b, depth int, p *pathElem) node {
	N := len(n.kids)
	if N > 0 && depth >= l.maxDepth {
		return l.summary(n, b, p)
	}
	// Each field needs its key, a colon and at least a 1-byte value.
	limitK := min(N, (b-2)/4+1)
	keyCap := max(24, b/8)
	keys := make([]string, 0, limitK)
	keyCost := make([]int, 1, limitK+1) // prefix sums of key size + colon
	sizes := make([]int, 0, limitK)
	for i := range limitK {
		k := n.kids[i].key
		if ks := jsonstr.Size(k); ks > keyCap {
			k = headWithin(k, keyCap-2-len(ellipsis)-1-len(strconv.Itoa(i))) + ellipsis + "#" + strconv.Itoa(i)
		}
		keys = append(keys, k)
		keyCost = append(keyCost, keyCost[i]+jsonstr.Size(k)+1)
		sizes = append(sizes, n.kids[i].size)
	}
	markerKey := jsonstr.Size(ellipsis) + 1
	avail := func(k int) int {
		a := b - 2 - keyCost[k]
		if k > 1 {
			a -= k - 1
		}
		if k < N {
			if k > 0 {
				a--
			}
			a -= markerKey + jsonstr.Size(moreFields(N-k))
		}
		return a
	}
	k, lvl := choose(sizes, limitK, avail, fieldFloor(b))
	if k == 0 {
		l.cut(p, CutObject, N, 0)
		marker := stringNode(moreFields(N))
		if size := 2 + markerKey + marker.size; size <= b {
			marker.key = ellipsis
			return node{kind: kindObject, kids: []node{marker}, size: size, height: 1}
		}
		return stringNode(ellipsis)
	}
	for i := range k {
		if orig := n.kids[i].key; keys[i] != orig {
			l.cut(&pathElem{parent: p, key: orig, isKey: true}, CutKey, len(orig), len(keys[i]))
		}
	}
	out := node{kind: kindObject, kids: make([]node, 0, k+1)}
	l.fillKids(n, &out, keys, sizes[:k], lvl, avail(k), depth, p)
	size := 2 + k - 1 + keyCost[k]
	for i := range out.kids {
		size += out.kids[i].size
	}
	if k < N {
		l.cut(p, CutObject, N, k)
		marker := stringNode(moreFields(N - k))
		marker.key = ellipsis
		out.kids = append(out.kids, marker)
		size += 1 + markerKey + marker.size
	}
	out.size = size
	return out
}
