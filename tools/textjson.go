package tools

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// TextJSON returns text as a JSON string, for a tool whose result is text
// read from outside (an API's text/plain body, an upstream's text
// content, a file). The string's size is worked out first and held in
// the call's results in flight (HoldDecoded) before it is built, in one
// allocation of that size: json.Marshal of a string grows a buffer as it
// escapes — six bytes for each of < > & and control characters — and
// copies it out, about ten times the text at once for eight 15 MiB texts
// of one run, which the results in flight counted once (issue 19).
//
// It escapes what JSON requires, as encoding/json does (invalid UTF-8
// becomes U+FFFD; U+2028 and U+2029 are escaped), but not HTML's < > &:
// the result is a program's value, never HTML.
func TextJSON[T ~string | ~[]byte](ctx context.Context, text T) (json.RawMessage, error) {
	n := textJSONSize(text)
	if err := HoldDecoded(ctx, int64(n)*ResultCopies, 1); err != nil {
		return nil, err
	}
	return appendTextJSON(make([]byte, 0, n), text), nil
}

const hexDigits = "0123456789abcdef"

// asciiJSON is the size of each ASCII byte in a JSON string.
var asciiJSON = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		case c < 0x20:
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// textJSONSize is the size of text as a JSON string, quotes included.
func textJSONSize[T ~string | ~[]byte](text T) int {
	n := 2
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			n += int(asciiJSON[c])
			i++
			continue
		}
		r, size := decodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// appendTextJSON appends text as a JSON string to b.
func appendTextJSON[T ~string | ~[]byte](b []byte, text T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if asciiJSON[c] == 1 {
				i++
				continue
			}
			b = append(b, text[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(text[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, text[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, text[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, text[start:]...)
	return append(b, '"')
}

// decodeRune decodes the first rune of s: a conversion of at most
// utf8.UTFMax bytes, on the stack for a string.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	return utf8.DecodeRune([]byte(s[:min(len(s), utf8.UTFMax)]))
}
