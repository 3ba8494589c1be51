package tools

import (
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether b is one JSON document, exactly as json.Valid
// does: the same grammar, the same nesting bound (maxJSONNesting), bytes
// of a string taken as they are (json.Valid does not check UTF-8 either).
// Every tool result passes through it (call); encoding/json's scanner
// calls a function per byte and checked a 1 MB result at about 100 MB/s,
// while this one walks the contents of strings, which are most of a
// result's bytes, eight at a time. FuzzValidJSON compares the two.
// It counts the document's values on the way, objects and arrays
// included (as JSONValues does, for valid JSON), since what a result
// decodes into later is in proportion to them, not to its bytes.
func validJSON(b []byte) (values int, valid bool) {
	var (
		stack []byte // '{' or '[' for each open container
		i     = skipSpace(b, 0)
		ok    bool
	)
	for {
		// A value starts at i.
		values++
		if i >= len(b) {
			return values, false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxJSONNesting {
				return values, false
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, ok = member(b, i); !ok {
					return values, false
				}
			}
			continue
		case c == '"':
			if i, ok = scanString(b, i); !ok {
				return values, false
			}
		case c == 't':
			if i, ok = literal(b, i, "true"); !ok {
				return values, false
			}
		case c == 'f':
			if i, ok = literal(b, i, "false"); !ok {
				return values, false
			}
		case c == 'n':
			if i, ok = literal(b, i, "null"); !ok {
				return values, false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = number(b, i); !ok {
				return values, false
			}
		default:
			return values, false
		}
		// A value ended at i: close what it closes, then find the next.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return values, i == len(b)
			}
			if i >= len(b) {
				return values, false
			}
			top := stack[len(stack)-1]
			c := b[i]
			if c == ',' {
				i = skipSpace(b, i+1)
				if top == '{' {
					if i, ok = member(b, i); !ok {
						return values, false
					}
				}
				break
			}
			if c == '}' && top == '{' || c == ']' && top == '[' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return values, false
		}
	}
}

// maxJSONNesting is encoding/json's bound on nested arrays and objects.
const maxJSONNesting = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// member checks the key and the colon of an object's member at i and
// returns where its value starts (spaces skipped).
func member(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanString checks the string whose opening quote is at i and returns
// the index after its closing quote.
func scanString(b []byte, i int) (int, bool) {
	i++
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ ('"' * ones)
			s := w ^ ('\\' * ones)
			// A byte's high bit in m is set where the byte is 0 in q or
			// s, or below 0x20 in w (bytes of 0x80 and more excluded).
			m := ((q - ones) &^ q) | ((s - ones) &^ s) | ((w - 0x20*ones) &^ w)
			m &= highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
			break
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
}

// number checks the number at i and returns the index after it.
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		i = digits(b, i+1)
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
