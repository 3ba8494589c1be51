package filter

import (
	"hash/maphash"
	"strings"
)

// Scoped observation.
//
// A large tool result is not indexed when it arrives (see Flow.Observe):
// it is parsed and kept, and looked at when something needs it — an
// output to filter, arguments to check against the rules, data to name
// the provenance of — and then only as far as that text needs. A value
// of the result can be found in a text only if its folded form's first
// minKnownLen bytes are a window of one of the text's views (folded;
// URL-, base64- or hex-decoded, then folded: what viewer.search looks
// through). So a scope collects those windows, and the result's strings,
// numbers and keys whose folded form holds none of them are skipped: no
// detectors, no field rules, nothing indexed. What is indexed is exactly
// what a full observation would have indexed of the values that can
// matter, so the text is filtered or checked as it would have been.

// scope is the windows of a text's views, behind a bit filter (a false
// positive only costs a look), and the hashes of its strings, which
// decide whether a result's string gets its seen flags.
type scope struct {
	bits   []uint64
	shift  uint
	hashes map[uint64]struct{}
	buf    []byte
	v      viewer
	seed   maphash.Seed
	n      int // bytes of text added
}

func newScope(seed maphash.Seed) *scope {
	return &scope{bits: make([]uint64, 1<<10), shift: 64 - 16, hashes: map[uint64]struct{}{}, seed: seed}
}

func (sc *scope) hash(k6 uint64) uint64 { return (k6 * 0x9E3779B97F4A7C15) >> sc.shift }

// add takes in a text of the output (a string, a number, a key, a line).
func (sc *scope) add(s string) {
	sc.n += len(s)
	if len(s) >= minScanLen {
		sc.hashes[maphash.String(sc.seed, s)] = struct{}{}
	}
	if len(s) < minKnownLen {
		return
	}
	sc.v.views(s, func(t []byte) {
		for i := 0; i+minKnownLen <= len(t); i++ {
			h := sc.hash(load6(t[i:]))
			sc.bits[h/64] |= 1 << (h % 64)
		}
	})
}

// addNode takes in every string, number and key of n.
func (sc *scope) addNode(n *node) {
	switch n.kind {
	case kindString, kindNumber:
		sc.add(n.str)
	case kindArray, kindObject:
		for i := range n.kids {
			if n.kind == kindObject {
				sc.add(n.kids[i].key)
			}
			sc.addNode(&n.kids[i])
		}
	}
}

// fit sizes the bit filter for the text added, at 32 bits a window or
// more; done before adding.
func (sc *scope) fit(textBytes int) {
	for len(sc.bits)*64 < 32*textBytes*4 && len(sc.bits) < 1<<18 {
		sc.bits = make([]uint64, 2*len(sc.bits))
		sc.shift--
	}
}

// hits reports whether the folded form of s holds a window of the text.
// ASCII is folded on the fly, into a rolling window.
func (sc *scope) hits(s string) bool {
	if len(s) < minKnownLen {
		return false
	}
	var w uint64 // the last 6 folded bytes, as load6 reads them
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return sc.hitsFolded(s)
		}
		if isSpace(c) {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		w = w>>8 | uint64(c)<<40
		if n++; n >= minKnownLen {
			if h := sc.hash(w); sc.bits[h/64]&(1<<(h%64)) != 0 {
				return true
			}
		}
	}
	return false
}

// hitsFolded is hits for text beyond ASCII.
func (sc *scope) hitsFolded(s string) bool {
	sc.buf, _ = fold(sc.buf[:0], nil, s, false)
	t := sc.buf
	for i := 0; i+minKnownLen <= len(t); i++ {
		h := sc.hash(load6(t[i:]))
		if sc.bits[h/64]&(1<<(h%64)) != 0 {
			return true
		}
	}
	return false
}

// holds reports whether s is one of the text's strings.
func (sc *scope) holds(s string) bool {
	if len(s) < minScanLen {
		return false
	}
	_, ok := sc.hashes[maphash.String(sc.seed, s)]
	return ok
}

// views calls fn with the folded form of each view of s that search looks
// through: s itself, its URL decoding, its JSON escapes undone, and its
// base64 and hex runs decoded. It decodes every run, where search may
// skip some: a superset.
func (v *viewer) views(s string, fn func(t []byte)) {
	v.folded, _ = fold(v.folded[:0], nil, s, false)
	fn(v.folded)
	if hasPercentEscape(s) || strings.IndexByte(s, '+') >= 0 {
		v.urlDecode(s, false)
		v.folded, _ = foldBytes(v.folded[:0], nil, v.dec, false)
		fn(v.folded)
	}
	if strings.IndexByte(s, '\\') >= 0 {
		v.jsonUnescape(s, false)
		v.folded, _ = foldBytes(v.folded[:0], nil, v.dec, false)
		fn(v.folded)
	}
	v.dec, v.segs = v.dec[:0], v.segs[:0]
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
		v.decodeRun(s, i, e)
		i = e
	}
	for _, sg := range v.segs {
		d := v.dec[sg.decStart:sg.decEnd]
		if !mayHoldText(d) {
			continue
		}
		v.folded, _ = foldBytes(v.folded[:0], nil, d, false)
		fn(v.folded)
	}
}
