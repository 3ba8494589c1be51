package filter

import (
	"math"
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
func (sc *scanner) scan(s string, out []Match) []Match {
	if len(s) < minScanLen {
		return out[:0]
	}
	out = out[:0]
	f := featuresOf(s)
	if f.at {
		out = findEmails(s, out)
	}
	if f.digits >= 8 {
		if f.plus {
			out = findPhonesE164(s, out)
		}
		if f.digits >= 10 {
			out = findPhonesNational(s, out)
		}
	}
	if f.digits >= 13 {
		out = findCards(s, out)
	}
	if f.digits >= 9 {
		out = findSSNs(s, out)
	}
	if f.digits >= 8 && f.upper && len(s) >= 15 {
		out = findIBANs(s, out)
	}
	if f.digits >= 4 && f.dot {
		out = findIPv4(s, out)
	}
	if f.colons >= 2 {
		out = findIPv6(s, out)
	}
	if len(s) >= 30 && f.dot {
		out = findJWTs(s, out)
	}
	if f.dash {
		out = findPEM(s, out)
	}
	if len(s) >= 12 {
		out = findPrefixed(s, out)
		out = findBearer(s, out)
	}
	if f.at && f.colons > 0 && f.slash {
		out = findURLPasswords(s, out)
	}
	if f.eqs > 0 || f.colons > 0 {
		out = sc.findAssignments(s, out)
	}
	if len(s) >= 20 && f.digits > 0 {
		out = findKeywordEntropy(s, out)
	}
	return resolve(out)
}

// resolve drops matches that overlap a better one and orders the rest by
// position. Matches that overlap no other are kept as they are; the best
// of each run of overlapping ones are chosen among that run alone, which
// keeps what choosing among all of them keeps: a match's fate depends on
// the matches it overlaps. Choosing among all of them compared each with
// every match kept so far, and a text of a million e-mail addresses took
// tens of minutes (issue 19, sec19).
func resolve(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	slices.SortStableFunc(ms, func(a, b Match) int { return a.Start - b.Start })
	kept := ms[:0]
	for i := 0; i < len(ms); {
		j, end := i+1, ms[i].End
		for j < len(ms) && ms[j].Start < end {
			end = max(end, ms[j].End)
			j++
		}
		kept = append(kept, resolveOverlapping(ms[i:j])...)
		i = j
	}
	return kept
}

// resolveOverlapping keeps, of matches ordered by position, the most
// confident (then the longest, then the first) of those that overlap, in
// order of position. It reorders ms, and what it returns shares ms's
// array, at most as long as ms and at its start.
func resolveOverlapping(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	slices.SortStableFunc(ms, func(a, b Match) int {
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
	})
	kept := ms[:0]
	for _, m := range ms {
		overlaps := false
		for _, k := range kept {
			if m.Start < k.End && k.Start < m.End {
				overlaps = true
				break
			}
		}
		if !overlaps {
			kept = append(kept, m)
		}
	}
	slices.SortFunc(kept, func(a, b Match) int { return a.Start - b.Start })
	return kept
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
