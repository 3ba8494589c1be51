package filter

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/codecell/codecell/tools/jsonstr"
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

// The parser makes two passes. The first counts the members of every
// container, in the order they open; the second parses and validates,
// writing each container's members in place into one slab sized for the
// whole document. Nothing is copied and there is one allocation for all
// nodes. For valid JSON the counts are exact; for invalid JSON they may
// be wrong, and the second pass fails before using them wrongly.
type parser struct {
	s      string
	i      int
	depth  int
	counts []int32 // members of each container, in opening order
	ci     int     // next container
	slab   []node
}

// parseJSON parses one JSON document into a tree.
func parseJSON(data []byte) (node, error) {
	return parseJSONString(string(data))
}

func parseJSONString(s string) (node, error) {
	root, _, err := parseJSONNodes(s)
	return root, err
}

// parseJSONNodes is parseJSONString that also returns the nodes the tree
// holds, its root's included: the tree takes its text and nodeBytes a
// node.
func parseJSONNodes(s string) (node, int, error) {
	p := parser{s: s}
	if err := p.count(); err != nil {
		return node{}, 0, err
	}
	var root node
	if err := p.document(&root); err != nil {
		return node{}, 0, err
	}
	return root, cap(p.slab) + 1, nil
}

// nodeBytes is the memory of one node of a tree, beside its strings.
const nodeBytes = int(unsafe.Sizeof(node{}))

// count is the first pass: it fills p.counts and sizes p.slab. It fails
// only for nesting deeper than maxNesting.
func (p *parser) count() error {
	type open struct {
		index    int
		nonEmpty bool
	}
	var (
		stack []open
		total int
		s     = p.s
	)
	p.counts = make([]int32, 0, len(s)/64+1)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			if len(stack) > 0 {
				stack[len(stack)-1].nonEmpty = true
			}
			for i++; ; {
				i = stringStop(s, i)
				if i >= len(s) || s[i] == '"' {
					break
				}
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case '[', '{':
			if len(stack) > 0 {
				stack[len(stack)-1].nonEmpty = true
			}
			if len(stack) >= maxNesting {
				return &SyntaxError{Offset: i, Msg: "exceeded max depth"}
			}
			stack = append(stack, open{index: len(p.counts)})
			p.counts = append(p.counts, 0)
		case ']', '}':
			if len(stack) == 0 {
				continue // the second pass reports it
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.nonEmpty {
				p.counts[top.index]++
			}
			total += int(p.counts[top.index])
		case ',':
			if len(stack) > 0 {
				p.counts[stack[len(stack)-1].index]++
			}
		default:
			if len(stack) > 0 {
				stack[len(stack)-1].nonEmpty = true
			}
		}
	}
	p.slab = make([]node, 0, total)
	return nil
}

// members returns the slice for the members of the next container.
func (p *parser) members() ([]node, error) {
	if p.ci >= len(p.counts) {
		return nil, p.fail("malformed container")
	}
	n := int(p.counts[p.ci])
	p.ci++
	if n == 0 {
		return nil, nil
	}
	if len(p.slab)+n > cap(p.slab) {
		return nil, p.fail("malformed container")
	}
	m := p.slab[len(p.slab) : len(p.slab)+n : len(p.slab)+n]
	p.slab = p.slab[:len(p.slab)+n]
	return m, nil
}

func (p *parser) document(dst *node) error {
	p.space()
	if err := p.value(dst); err != nil {
		return err
	}
	p.space()
	if p.i < len(p.s) {
		return p.fail("unexpected data after the top-level value")
	}
	return nil
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

func (p *parser) value(dst *node) error {
	if p.i >= len(p.s) {
		return p.fail("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(dst)
	case c == '[':
		return p.array(dst)
	case c == '"':
		s, err := p.string()
		dst.kind, dst.str = kindString, s
		return err
	case c == 't':
		return p.literal(dst, "true", kindBool)
	case c == 'f':
		return p.literal(dst, "false", kindBool)
	case c == 'n':
		return p.literal(dst, "null", kindNull)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(dst)
	default:
		return p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (p *parser) literal(dst *node, word string, k kind) error {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return p.fail("invalid literal")
	}
	p.i += len(word)
	dst.kind = k
	if k == kindBool {
		dst.str = word
	}
	return nil
}

func (p *parser) number(dst *node) error {
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
		return p.fail("invalid number")
	}
	if p.i < len(s) && s[p.i] == '.' {
		p.i++
		d := p.i
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
		if p.i == d {
			return p.fail("invalid number")
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
			return p.fail("invalid number")
		}
	}
	dst.kind, dst.str = kindNumber, s[start:p.i]
	return nil
}

// string parses a string literal at p.i and returns its unescaped text.
// Bytes that are not valid UTF-8 are kept as they are; the encoder replaces
// them with U+FFFD.
func (p *parser) string() (string, error) {
	p.i++ // opening quote
	start := p.i
	s := p.s
	for p.i < len(s) {
		p.i = stringStop(s, p.i)
		if p.i >= len(s) {
			break
		}
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

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stringStop returns the index of the first quote, backslash or control
// character in s from i on, or len(s): a string's plain bytes are passed
// eight at a time.
func stringStop(s string, i int) int {
	b8 := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	for i+8 <= len(s) {
		w := binary.LittleEndian.Uint64(b8[i:])
		q := w ^ ('"' * ones)
		b := w ^ ('\\' * ones)
		if m := (((q - ones) &^ q) | ((b - ones) &^ b) | ((w - 0x20*ones) &^ w)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
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

func (p *parser) array(dst *node) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.i++
	dst.kind = kindArray
	kids, err := p.members()
	if err != nil {
		return err
	}
	dst.kids = kids
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		if len(kids) != 0 {
			return p.fail("malformed container")
		}
		return nil
	}
	for n := 0; ; n++ {
		if n >= len(kids) {
			return p.fail("malformed array")
		}
		p.space()
		if err := p.value(&kids[n]); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.s) {
			return p.fail("unterminated array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			if n+1 != len(kids) {
				return p.fail("malformed array")
			}
			return nil
		default:
			return p.fail("expected ',' or ']' in array")
		}
	}
}

func (p *parser) object(dst *node) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.i++
	dst.kind = kindObject
	kids, err := p.members()
	if err != nil {
		return err
	}
	dst.kids = kids
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		if len(kids) != 0 {
			return p.fail("malformed container")
		}
		return nil
	}
	for n := 0; ; n++ {
		if n >= len(kids) {
			return p.fail("malformed object")
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return p.fail("expected a string key in object")
		}
		k, err := p.string()
		if err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return p.fail("expected ':' after object key")
		}
		p.i++
		p.space()
		if err := p.value(&kids[n]); err != nil {
			return err
		}
		kids[n].key = k
		p.space()
		if p.i >= len(p.s) {
			return p.fail("unterminated object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			if n+1 != len(kids) {
				return p.fail("malformed object")
			}
			return nil
		default:
			return p.fail("expected ',' or '}' in object")
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
		return jsonstr.Append(dst, n.str)
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
			dst = jsonstr.Append(dst, n.kids[i].key)
			dst = append(dst, ':')
			dst = appendJSON(dst, &n.kids[i])
		}
		return append(dst, '}')
	}
}

// measure sets size and height on n and every node below it.
func measure(n *node) {
	switch n.kind {
	case kindNull:
		n.size = 4
	case kindBool, kindNumber:
		n.size = len(n.str)
	case kindString:
		n.size = jsonstr.Size(n.str)
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
				size += jsonstr.Size(k.key) + 1
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
