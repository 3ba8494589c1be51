// Package jsonstr writes JSON strings: the one encoder of the output
// filter and of the tools that return text read from outside, so that a
// string reads the same wherever codecell writes it. It escapes what JSON
// requires as encoding/json does (control characters, \b and \f in their
// short forms, U+2028 and U+2029; invalid UTF-8 becomes U+FFFD), but not
// HTML's <, > and &: what codecell writes is a program's value, never
// HTML. It imports only the standard library, and any codecell package
// may import it.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// ascii is the size of each ASCII byte in a JSON string: 1 for a byte
// copied as it is.
var ascii = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			t[c] = 2
		case c < 0x20:
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// Append appends s as a JSON string, quotes included, to b.
func Append[T ~string | ~[]byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if ascii[c] == 1 {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Size returns len(Append(nil, s)) without encoding.
func Size[T ~string | ~[]byte](s T) int {
	n := 2
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			n += int(ascii[c])
			i++
			continue
		}
		enc, width := runeSize(s[i:])
		n += enc
		i += width
	}
	return n
}

// RuneSize returns the size in a JSON string of the rune that starts at
// s[i], and the number of bytes it spans in s.
func RuneSize[T ~string | ~[]byte](s T, i int) (enc, width int) {
	if c := s[i]; c < utf8.RuneSelf {
		return int(ascii[c]), 1
	}
	return runeSize(s[i:])
}

// runeSize is RuneSize of the non-ASCII rune s starts with.
func runeSize[T ~string | ~[]byte](s T) (enc, width int) {
	r, size := decodeRune(s)
	if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
		return 6, size
	}
	return size, size
}

// decodeRune decodes the first rune of s: a conversion of at most
// utf8.UTFMax bytes, on the stack for a string.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	return utf8.DecodeRune([]byte(s[:min(len(s), utf8.UTFMax)]))
}
