package filter

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strings"
	"unicode/utf8"
)

// Tokens and markers.
//
// A token is ⟦class:hex⟧ where hex is the first 8 hex digits of
// HMAC-SHA256(key, class || 0x00 || value) — 16 or 64 digits in the rare
// case where 8 collide with another value of the same session. A
// redaction marker is ⟦class:redacted⟧. The brackets are U+27E6 and
// U+27E7, which JSON leaves unescaped and programs rarely produce.

const (
	tokenOpen    = "⟦"
	tokenClose   = "⟧"
	redactedWord = "redacted"
	tokenHexLen  = 8
)

// tokenHexLens are the lengths a token's digest may have, shortest first.
var tokenHexLens = []int{tokenHexLen, 16, 64}

func formatToken(c Class, digest string) string {
	return tokenOpen + string(c) + ":" + digest + tokenClose
}

// RedactionMarker returns the text that replaces a redacted value of
// class c, such as ⟦password:redacted⟧.
func RedactionMarker(c Class) string {
	return tokenOpen + string(c) + ":" + redactedWord + tokenClose
}

// tokenDigest returns HMAC-SHA256(key, class || 0 || value) in hex; mac
// is an HMAC-SHA256 under the key.
func tokenDigest(mac hash.Hash, c Class, value string) string {
	mac.Reset()
	io.WriteString(mac, string(c))
	mac.Write([]byte{0})
	io.WriteString(mac, value)
	var sum [sha256.Size]byte
	return hex.EncodeToString(mac.Sum(sum[:0]))
}

// tokenRef is a token or marker found in a string.
type tokenRef struct {
	start, end int
	class      Class
	id         string // hex digest, or "redacted"
}

func (t tokenRef) redacted() bool { return t.id == redactedWord }

// parseTokenAt parses a token or marker starting at s[i], which must be
// the first byte of tokenOpen.
func parseTokenAt(s string, i int) (tokenRef, bool) {
	j := i + len(tokenOpen)
	if !strings.HasPrefix(s[i:], tokenOpen) {
		return tokenRef{}, false
	}
	cs := j
	for j < len(s) && j-cs <= 32 && ((s[j] >= 'a' && s[j] <= 'z') || s[j] == '_' || (j > cs && isDigit(s[j]))) {
		j++
	}
	if j == cs || j >= len(s) || s[j] != ':' {
		return tokenRef{}, false
	}
	class := Class(s[cs:j])
	j++
	ds := j
	if strings.HasPrefix(s[j:], redactedWord) {
		j += len(redactedWord)
	} else {
		for j < len(s) && j-ds <= 64 && (isDigit(s[j]) || (s[j] >= 'a' && s[j] <= 'f')) {
			j++
		}
		switch j - ds {
		case 8, 16, 64:
		default:
			return tokenRef{}, false
		}
	}
	if !strings.HasPrefix(s[j:], tokenClose) {
		return tokenRef{}, false
	}
	return tokenRef{start: i, end: j + len(tokenClose), class: class, id: s[ds:j]}, true
}

// findTokenRefs returns the tokens and markers in s, in order.
func findTokenRefs(s string) []tokenRef { return appendTokenRefs(nil, s) }

// appendTokenRefs appends the tokens and markers in s to refs.
func appendTokenRefs(refs []tokenRef, s string) []tokenRef {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], tokenOpen)
		if j < 0 {
			break
		}
		if t, ok := parseTokenAt(s, i+j); ok {
			refs = append(refs, t)
			i = t.end
			continue
		}
		i += j + len(tokenOpen)
	}
	return refs
}

// maskValue keeps the last 4 letters and digits of a value that has at
// least 12 and replaces the other letters and digits (and every other
// non-ASCII rune) with '*'; punctuation and spaces stay.
func maskValue(v string) string {
	alnum := 0
	for i := 0; i < len(v); i++ {
		if isAlnum(v[i]) {
			alnum++
		}
	}
	keep := 0
	if alnum >= 12 {
		keep = 4
	}
	var b strings.Builder
	b.Grow(len(v))
	seen := 0
	for _, r := range v {
		switch {
		case r < utf8.RuneSelf && isAlnum(byte(r)):
			seen++
			if seen > alnum-keep {
				b.WriteRune(r)
			} else {
				b.WriteByte('*')
			}
		case r >= utf8.RuneSelf:
			b.WriteByte('*')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FindTokens returns the tokens in s, in order, without the redaction
// markers: what Vault.Resolve would replace.
func FindTokens(s string) []string {
	var out []string
	for _, r := range findTokenRefs(s) {
		if !r.redacted() {
			out = append(out, s[r.start:r.end])
		}
	}
	return out
}

// TokenClass returns the class a token or marker names, and false for
// text that is not one.
func TokenClass(token string) (Class, bool) {
	r, ok := parseTokenAt(token, 0)
	if !ok || r.end != len(token) {
		return "", false
	}
	return r.class, true
}
