package filter

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Match is one sensitive value found in a string.
type Match struct {
	Class Class
	// Detector names the rule that found it, such as "email" or
	// "card_luhn".
	Detector string
	// Confidence is between 0 and 1: how sure the detector is that the
	// value is what Class says.
	Confidence float64
	// Start and End are byte offsets of the value in the scanned string.
	Start, End int
}

// Detectors lists the names of the value detectors, in the order they run.
var Detectors = []string{
	"email", "phone_e164", "phone_national", "card_luhn", "ssn", "iban",
	"ipv4", "ipv6", "jwt", "private_key_pem", "aws_access_key",
	"gcp_api_key", "azure_key", "github_token", "slack_token",
	"stripe_key", "openai_key", "saas_token", "bearer_credentials",
	"url_password", "key_assignment", "keyword_entropy",
}

// ScanString returns the sensitive values in s, whatever field it came
// from: non-overlapping matches ordered by Start. Where detectors overlap,
// the more confident match wins, then the longer one.
func ScanString(s string) []Match {
	var sc scanner
	return sc.scan(s, nil)
}

// scanner holds what the detectors share from one string to the next.
// Its zero value is ready to use.
type scanner struct {
	fields *fieldCache // nil: no cache
	// room, when set, is asked before a string's matches grow past what
	// it last allowed: given the number of matches about to be held, it
	// returns how many may be held in all, or fewer to refuse (hold.go).
	// Nil lets them grow.
	room func(n int) int
}

// field matches a field name.
func (sc *scanner) field(name string) (FieldMatch, bool) {
	if sc.fields == nil {
		return MatchField(name)
	}
	return sc.fields.match(name)
}

type fieldResult struct {
	m  FieldMatch
	ok bool
}

// fieldCache remembers MatchField's answers; names repeat across results.
// It is safe for concurrent use and stops growing at maxFieldCache names.
type fieldCache struct {
	m sync.Map // string → fieldResult
	n atomic.Int64
}

const maxFieldCache = 1 << 14

func (c *fieldCache) match(name string) (FieldMatch, bool) {
	if v, ok := c.m.Load(name); ok {
		r := v.(fieldResult)
		return r.m, r.ok
	}
	m, ok := MatchField(name)
	if len(name) <= 64 && c.n.Load() < maxFieldCache {
		// Clone: name may be a slice of a large document.
		if _, loaded := c.m.LoadOrStore(strings.Clone(name), fieldResult{m, ok}); !loaded {
			c.n.Add(1)
		}
	}
	return m, ok
}

// features are cheap facts about a string that tell which detectors can
// possibly match.
type features struct {
	digits, colons, eqs               int
	at, dot, dash, upper, plus, slash bool
}

func featuresOf(s string) features {
	var f features
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			f.digits++
		case c >= 'A' && c <= 'Z':
			f.upper = true
		case c == '@':
			f.at = true
		case c == ':':
			f.colons++
		case c == '=':
			f.eqs++
		case c == '.':
			f.dot = true
		case c == '-':
			f.dash = true
		case c == '+':
			f.plus = true
		case c == '/':
			f.slash = true
		}
	}
	return f
}

// minScanLen is the length under which no detector can match.
const minScanLen = 6

// scan appends the matches in s to out and returns them resolved.
// Before it keeps more matches than room last allowed, it asks room
// again (see scanner.room); once refused, it keeps no more and returns
// those it kept, unresolved.
func (sc *scanner) scan(s string, out []Match) []Match {
	fd := detected{ms: out[:0], room: sc.room, upto: math.MaxInt}
	if sc.room != nil {
		fd.upto = 0
	}
	sc.find(s, &fd)
	if fd.full {
		return fd.ms
	}
	return resolve(fd.ms)
}

// detected collects what the detectors find in one string, asking room
// (scanner.room) as it grows.
type detected struct {
	ms   []Match
	room func(n int) int
	// upto is how many matches ms may hold before room is asked again;
	// full says room refused, and later matches are dropped.
	upto int
	full bool
}

// add keeps m, unless room refuses to let the matches grow.
func (fd *detected) add(m Match) {
	if len(fd.ms) >= fd.upto {
		if fd.full {
			return
		}
		if fd.upto = fd.room(len(fd.ms) + 1); fd.upto <= len(fd.ms) {
			fd.full = true
			return
		}
	}
	fd.ms = append(fd.ms, m)
}

// find appends what every detector finds in s to fd, overlaps and all.
func (sc *scanner) find(s string, fd *detected) {
	if len(s) < minScanLen {
		return
	}
	f := featuresOf(s)
	// Each detector runs unless the matches were refused room.
	if f.at {
		findEmails(s, fd)
	}
	if f.digits >= 8 && !fd.full {
		if f.plus {
			findPhonesE164(s, fd)
		}
		if f.digits >= 10 && !fd.full {
			findPhonesNational(s, fd)
		}
	}
	if f.digits >= 13 && !fd.full {
		findCards(s, fd)
	}
	if f.digits >= 9 && !fd.full {
		findSSNs(s, fd)
	}
	if f.digits >= 8 && f.upper && len(s) >= 15 && !fd.full {
		findIBANs(s, fd)
	}
	if f.digits >= 4 && f.dot && !fd.full {
		findIPv4(s, fd)
	}
	if f.colons >= 2 && !fd.full {
		findIPv6(s, fd)
	}
	if len(s) >= 30 && f.dot && !fd.full {
		findJWTs(s, fd)
	}
	if f.dash && !fd.full {
		findPEM(s, fd)
	}
	if len(s) >= 12 && !fd.full {
		findPrefixed(s, fd)
		findBearer(s, fd)
	}
	if f.at && f.colons > 0 && f.slash && !fd.full {
		findURLPasswords(s, fd)
	}
	if (f.eqs > 0 || f.colons > 0) && !fd.full {
		sc.findAssignments(s, fd)
	}
	if len(s) >= 20 && f.digits > 0 && !fd.full {
		findKeywordEntropy(s, fd)
	}
}

// resolve drops matches that overlap a better one and orders the rest by
// position. Matches are taken best first (more confident, then longer,
// then earlier) and each is kept unless it overlaps one kept before it:
// O(k log k) for k matches, as a string may hold a finding every few
// bytes (attack14 I1: comparing each with every kept one cost 15 s of CPU
// for 2 MB of e-mail addresses).
func resolve(ms []Match) []Match {
	// An empty match holds no value (no detector makes one).
	ms = slices.DeleteFunc(ms, func(m Match) bool { return m.End <= m.Start })
	if len(ms) < 2 {
		return ms
	}
	slices.SortStableFunc(ms, betterMatch)
	if len(ms) <= resolveLinear {
		kept := ms[:0]
		for _, m := range ms {
			if !overlapsAny(kept, m) {
				kept = append(kept, m)
			}
		}
		slices.SortFunc(kept, func(a, b Match) int { return a.Start - b.Start })
		return kept
	}
	// byStart orders the matches by start; the kept ones, which do not
	// overlap each other, are marked in a Fenwick tree over that order.
	// A match overlaps a kept one if a kept one starts inside it, or if
	// the last kept one to start before it reaches into it.
	byStart := make([]int32, len(ms))
	for i := range byStart {
		byStart[i] = int32(i)
	}
	slices.SortStableFunc(byStart, func(a, b int32) int { return ms[a].Start - ms[b].Start })
	rank := make([]int32, len(ms))
	for r, i := range byStart {
		rank[i] = int32(r)
	}
	kept := newFenwick(len(ms))
	keep := make([]bool, len(ms))
	for i, m := range ms {
		// The ranks of the matches that start inside m: lo to hi.
		lo, _ := slices.BinarySearchFunc(byStart, m.Start, func(j int32, at int) int { return ms[j].Start - at })
		hi, _ := slices.BinarySearchFunc(byStart[lo:], m.End, func(j int32, at int) int { return ms[j].Start - at })
		hi += lo
		if kept.sum(hi)-kept.sum(lo) > 0 {
			continue
		}
		if n := kept.sum(lo); n > 0 && ms[byStart[kept.find(n)]].End > m.Start {
			continue
		}
		kept.add(int(rank[i]))
		keep[i] = true
	}
	out := make([]Match, 0, len(ms))
	for _, i := range byStart {
		if keep[i] {
			out = append(out, ms[i])
		}
	}
	return append(ms[:0], out...)
}

// resolveLinear is the number of matches up to which resolve compares
// each match with every kept one: fewer than that, it is the faster.
const resolveLinear = 32

// betterMatch orders matches best first: more confident, then longer,
// then earlier.
func betterMatch(a, b Match) int {
	switch {
	case a.Confidence != b.Confidence:
		if a.Confidence > b.Confidence {
			return -1
		}
		return 1
	case a.End-a.Start != b.End-b.Start:
		return (b.End - b.Start) - (a.End - a.Start)
	default:
		return a.Start - b.Start
	}
}

func overlapsAny(kept []Match, m Match) bool {
	for _, k := range kept {
		if m.Start < k.End && k.Start < m.End {
			return true
		}
	}
	return false
}

// fenwick counts marked positions 0..n-1: mark one, count those before a
// position, find the n-th, each in O(log n).
type fenwick []int32

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

// add marks position i.
func (f fenwick) add(i int) {
	for i++; i < len(f); i += i & -i {
		f[i]++
	}
}

// sum counts the marked positions before i.
func (f fenwick) sum(i int) int {
	n := 0
	for ; i > 0; i -= i & -i {
		n += int(f[i])
	}
	return n
}

// find returns the n-th marked position (n ≥ 1, at most sum(len)).
func (f fenwick) find(n int) int {
	pos := 0
	for step := 1 << bits.Len(uint(len(f)-1)); step > 0; step >>= 1 {
		if next := pos + step; next < len(f) && int(f[next]) < n {
			pos = next
			n -= int(f[next])
		}
	}
	return pos // 1-based pos+1 holds it: position pos
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isHex(c byte) bool   { return isDigit(c) || ((c|0x20) >= 'a' && (c|0x20) <= 'f') }

// isB64URL reports the characters of unpadded base64url.
func isB64URL(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

// wordBefore reports whether position i starts a word: it is the start of
// s or follows a character that is not a letter or digit.
func wordBefore(s string, i int) bool { return i == 0 || !isAlnum(s[i-1]) }

// wordAfter reports whether position i ends a word.
func wordAfter(s string, i int) bool { return i >= len(s) || !isAlnum(s[i]) }

// hasPrefixFold is strings.HasPrefix ignoring ASCII case of prefix, which
// must be lower case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if s[i]|0x20 != prefix[i] && s[i] != prefix[i] {
			return false
		}
	}
	return true
}

// indexFold is strings.Index ignoring ASCII case; word must be lower case
// letters.
func indexFold(s, word string) int {
	if len(word) == 0 {
		return 0
	}
	first := word[0]
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == first && hasPrefixFold(s[i:], word) {
			return i
		}
	}
	return -1
}

// entropy returns the Shannon entropy of s in bits per byte; s is at most
// 65535 bytes.
func entropy(s string) float64 {
	var counts [256]uint16
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
