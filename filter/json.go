package filter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The filter works on its own JSON tree rather than on map[string]any: it
// keeps the order of object keys (a model reads them in the order the
// program wrote them), keeps numbers as their exact literals, and lets the
// limiter know the encoded size of every subtree. encoding/json/v2's
// jsontext would fit but is still behind GOEXPERIMENT in Go 1.26.

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one JSON value. For kindBool str is "true" or "false"; for
// kindNumber it is the literal as written; for kindString the unescaped
// text. Arrays and objects keep their members in kids, in order; a member
// of an object has its key in key.
type node struct {
	str  string
	key  string
	kids []node
	// size is the length of the compact encoding (without the key) and
	// height the number of nested containers below (0 for a scalar);
	// both set by measure.
	size   int
	height int16
	kind   kind
}

// maxNesting bounds the depth of documents the parser accepts, as
// encoding/json does.
const maxNesting = 10000

// SyntaxError is malformed JSON given to the filter. It names the byte
// offset, never the content, which may be sensitive.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

type parser struct {
	s     string
	i     int
	depth int
	// stack holds the children of the open containers, so that each
	// container gets one exactly sized slice when it closes.
	stack []node
	// slab is carved into the children of closed containers: one
	// allocation for many small slices.
	slab []node
}

const slabSize = 1024

// slabNext is the size of the next slab: at first about one node per 12
// bytes of input (a guess of what the document needs), then doubling, up
// to slabSize.
func (p *parser) slabNext(prev, need int) int {
	first := len(p.s) / 12
	return max(need, min(slabSize, max(16, first, 2*prev)))
}

// kids returns an exactly sized slice holding stack[base:].
func (p *parser) kids(base int) []node {
	n := len(p.stack) - base
	var out []node
	if n > slabSize/4 {
		out = make([]node, n)
	} else {
		if len(p.slab)+n > cap(p.slab) {
			p.slab = make([]node, 0, p.slabNext(cap(p.slab), n))
		}
		out = p.slab[len(p.slab) : len(p.slab)+n : len(p.slab)+n]
		p.slab = p.slab[:len(p.slab)+n]
	}
	copy(out, p.stack[base:])
	clear(p.stack[base:])
	p.stack = p.stack[:base]
	return out
}

// parseJSON parses one JSON document into a tree.
func parseJSON(data []byte) (node, error) {
	p := parser{s: string(data)}
	return p.document()
}

func parseJSONString(s string) (node, error) {
	p := parser{s: s}
	return p.document()
}

func (p *parser) document() (node, error) {
	p.space()
	n, err := p.value()
	if err != nil {
		return node{}, err
	}
	p.space()
	if p.i < len(p.s) {
		return node{}, p.fail("unexpected data after the top-level value")
	}
	return n, nil
}

func (p *parser) fail(msg string) error {
	return &SyntaxError{Offset: p.i, Msg: msg}
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (node, error) {
	if p.i >= len(p.s) {
		return node{}, p.fail("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return node{kind: kindString, str: s}, err
	case c == 't':
		return p.literal("true", kindBool)
	case c == 'f':
		return p.literal("false", kindBool)
	case c == 'n':
		return p.literal("null", kindNull)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return node{}, p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (p *parser) literal(word string, k kind) (node, error) {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return node{}, p.fail("invalid literal")
	}
	p.i += len(word)
	n := node{kind: k}
	if k == kindBool {
		n.str = word
	}
	return n, nil
}

func (p *parser) number() (node, error) {
	start := p.i
	s := p.s
	if s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(s) && s[p.i] == '0':
		p.i++
	case p.i < len(s) && s[p.i] >= '1' && s[p.i] <= '9':
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
	default:
		return node{}, p.fail("invalid number")
	}
	if p.i < len(s) && s[p.i] == '.' {
		p.i++
		d := p.i
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
		if p.i == d {
			return node{}, p.fail("invalid number")
		}
	}
	if p.i < len(s) && (s[p.i] == 'e' || s[p.i] == 'E') {
		p.i++
		if p.i < len(s) && (s[p.i] == '+' || s[p.i] == '-') {
			p.i++
		}
		d := p.i
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
		if p.i == d {
			return node{}, p.fail("invalid number")
		}
	}
	return node{kind: kindNumber, str: s[start:p.i]}, nil
}

// string parses a string literal at p.i and returns its unescaped text.
// Bytes that are not valid UTF-8 are kept as they are; the encoder replaces
// them with U+FFFD.
func (p *parser) string() (string, error) {
	p.i++ // opening quote
	start := p.i
	s := p.s
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == '"':
			out := s[start:p.i]
			p.i++
			return out, nil
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return "", p.fail("control character in string")
		}
		p.i++
	}
	return "", p.fail("unterminated string")
}

func (p *parser) escapedString(start int) (string, error) {
	s := p.s
	var b strings.Builder
	b.Grow(p.i - start + 16)
	b.WriteString(s[start:p.i])
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(s) {
			break
		}
		e := s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if strings.HasPrefix(s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					var ok2 bool
					r2, ok2 = p.hex4()
					if !ok2 {
						return "", p.fail("invalid \\u escape")
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						b.WriteRune(d)
						continue
					}
					p.i = save
				}
				b.WriteRune(utf8.RuneError)
				continue
			}
			b.WriteRune(r)
		default:
			return "", p.fail("invalid escape")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	p.i += 4
	return r, true
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return p.fail("exceeded max depth")
	}
	return nil
}

func (p *parser) array() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	p.i++
	n := node{kind: kindArray}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return n, nil
	}
	base := len(p.stack)
	for {
		p.space()
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		p.stack = append(p.stack, v)
		p.space()
		if p.i >= len(p.s) {
			return node{}, p.fail("unterminated array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			n.kids = p.kids(base)
			return n, nil
		default:
			return node{}, p.fail("expected ',' or ']' in array")
		}
	}
}

func (p *parser) object() (node, error) {
	if err := p.enter(); err != nil {
		return node{}, err
	}
	p.i++
	n := node{kind: kindObject}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return n, nil
	}
	base := len(p.stack)
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return node{}, p.fail("expected a string key in object")
		}
		k, err := p.string()
		if err != nil {
			return node{}, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return node{}, p.fail("expected ':' after object key")
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return node{}, err
		}
		v.key = k
		p.stack = append(p.stack, v)
		p.space()
		if p.i >= len(p.s) {
			return node{}, p.fail("unterminated object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			n.kids = p.kids(base)
			return n, nil
		default:
			return node{}, p.fail("expected ',' or '}' in object")
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// appendJSON appends the compact encoding of n to dst.
func appendJSON(dst []byte, n *node) []byte {
	switch n.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindBool, kindNumber:
		return append(dst, n.str...)
	case kindString:
		return appendString(dst, n.str)
	case kindArray:
		dst = append(dst, '[')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, &n.kids[i])
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, n.kids[i].key)
			dst = append(dst, ':')
			dst = appendJSON(dst, &n.kids[i])
		}
		return append(dst, '}')
	}
}

// safe reports the bytes that appendString copies as they are.
var safe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like encoding/json it escapes
// control characters, U+2028 and U+2029, and replaces invalid UTF-8 with
// U+FFFD; unlike it, it leaves <, > and & alone.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// stringSize returns len(appendString(nil, s)) without encoding.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += escapedByteSize(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

func escapedByteSize(c byte) int {
	if safe[c] {
		return 1
	}
	switch c {
	case '"', '\\', '\n', '\r', '\t', '\b', '\f':
		return 2
	}
	return 6
}

// runeEncodedSize is the encoded size of the rune starting at s[i] and the
// number of bytes it spans in s.
func runeEncodedSize(s string, i int) (enc, width int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return escapedByteSize(c), 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
		return 6, size
	}
	return size, size
}

// measure sets size and height on n and every node below it.
func measure(n *node) {
	switch n.kind {
	case kindNull:
		n.size = 4
	case kindBool, kindNumber:
		n.size = len(n.str)
	case kindString:
		n.size = stringSize(n.str)
	case kindArray, kindObject:
		size, height := 2, int16(0)
		for i := range n.kids {
			k := &n.kids[i]
			measure(k)
			size += k.size
			if i > 0 {
				size++
			}
			if n.kind == kindObject {
				size += stringSize(k.key) + 1
			}
			height = max(height, k.height)
		}
		n.size = size
		if len(n.kids) > 0 {
			height++
		}
		n.height = int16(min(height, maxNesting+1))
	}
}

// appendPointer appends a JSON Pointer (RFC 6901) reference token.
func appendPointer(path, token string) string {
	if !strings.ContainsAny(token, "~/") {
		return path + "/" + token
	}
	token = strings.ReplaceAll(token, "~", "~0")
	token = strings.ReplaceAll(token, "/", "~1")
	return path + "/" + token
}

// lookupPointer returns the node at a JSON Pointer.
func lookupPointer(root *node, ptr string) (*node, error) {
	if ptr == "" {
		return root, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("json pointer %q does not start with /", ptr)
	}
	n := root
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n.kind {
		case kindArray:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.kids) || (len(tok) > 1 && tok[0] == '0') {
				return nil, fmt.Errorf("json pointer %q: no item %q", ptr, tok)
			}
			n = &n.kids[i]
		case kindObject:
			found := -1
			for i := range n.kids {
				if n.kids[i].key == tok {
					found = i // the last of duplicate keys wins, as in JSON.parse
				}
			}
			if found < 0 {
				return nil, fmt.Errorf("json pointer %q: no field %q", ptr, tok)
			}
			n = &n.kids[found]
		default:
			return nil, fmt.Errorf("json pointer %q: %q is inside a scalar", ptr, tok)
		}
	}
	return n, nil
}
