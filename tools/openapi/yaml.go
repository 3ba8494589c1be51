package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	yaml3 "github.com/oasdiff/yaml3"
)

// A YAML alias is one value in the document's text and a whole copy of
// its anchor's value in the JSON the document becomes: 1 MB of YAML
// holding a 1 MiB string and a hundred aliases of it (4 bytes each)
// became 100 MiB of JSON, and took the server's memory to 479 MiB
// (issue 19, attack15 I1). yaml.v3's guard against "excessive aliasing"
// counts nodes, and a string is one node whatever its length. So every
// YAML document is parsed once into a node tree, the JSON it becomes is
// sized on that tree — aliases, escapes and all — and only then decoded
// and encoded: the bytes aliases add at most maxAliasBytes(len(data)),
// the whole JSON at most MaxDocumentBytes, its values at most
// MaxDocumentValues, as a JSON document's are.
//
// The check once ran only on text that could hold an anchor, judged from
// its bytes (a '&' that starts a token). That guess was wrong twice:
// after a JSON-like key's colon (attack17 K4), and in UTF-16, where the
// byte before every '&' is a NUL (attack22 P1: 400 aliases in a 2 MB
// description took the server to 1.5 GiB). Sizing the tree the
// conversion decodes anyway costs no second parse, and does not depend
// on how the text is written.

// aliasFactor and aliasFloor bound the bytes a YAML document's aliases
// may add to the JSON it becomes: aliasFactor times the document's own
// bytes, at least aliasFloor. A description that shares its repeated
// parts through anchors (responses, parameters) stays far below.
const (
	aliasFactor = 4
	aliasFloor  = 4 << 20
)

func maxAliasBytes(docBytes int) int64 {
	return max(int64(docBytes)*aliasFactor, aliasFloor)
}

// utf8Text returns a description's text as UTF-8, its byte order mark
// left out. UTF-16 with a byte order mark, which YAML parsers read, is
// converted. Any other text with a NUL byte is refused, naming the
// encoding it likely is: JSON and YAML text hold no NUL, and a NUL beside
// every ASCII character is UTF-16 or UTF-32 — which a YAML parser either
// refuses or reads unlike every check made on the bytes.
func utf8Text(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return nil, fmt.Errorf("%w: it is UTF-32 (it starts with a UTF-32 byte order mark); descriptions are read in UTF-8 or UTF-16: convert it to UTF-8 (e.g. iconv -f UTF-32 -t UTF-8)", ErrDocument)
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return fromUTF16(data[2:], false)
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return fromUTF16(data[2:], true)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, fmt.Errorf("%w: it holds a NUL byte (at byte %d), which JSON and YAML text never do: it is not UTF-8 but likely UTF-16 or UTF-32 without a byte order mark; convert it to UTF-8 (e.g. iconv -f UTF-16LE -t UTF-8)", ErrDocument, i)
	}
	return data, nil
}

// fromUTF16 converts UTF-16 text, its byte order mark left out, to UTF-8.
// An unpaired surrogate becomes U+FFFD.
func fromUTF16(data []byte, bigEndian bool) ([]byte, error) {
	if len(data)%2 != 0 {
		return nil, fmt.Errorf("%w: it starts with a UTF-16 byte order mark but is an odd number of bytes; convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)", ErrDocument)
	}
	unit := func(i int) rune {
		if bigEndian {
			return rune(data[i])<<8 | rune(data[i+1])
		}
		return rune(data[i+1])<<8 | rune(data[i])
	}
	out := make([]byte, 0, len(data)/2)
	for i := 0; i < len(data); i += 2 {
		r := unit(i)
		if utf16.IsSurrogate(r) && i+3 < len(data) {
			if p := utf16.DecodeRune(r, unit(i+2)); p != utf8.RuneError {
				r = p
				i += 2
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return utf8Text(out)
}

// yamlToJSON converts a YAML document to JSON as oasdiff/yaml's
// YAMLToJSON does (the first document of the text; mapping keys that are
// numbers or booleans written as strings; keys sorted), parsing it once,
// and refuses it before it is converted when the JSON would pass a bound,
// or when a mapping holds a key twice.
func yamlToJSON(data []byte) ([]byte, error) {
	var root yaml3.Node
	if err := yaml3.Unmarshal(data, &root); err != nil {
		return nil, yamlProblem(err)
	}
	m := &jsonMeter{sizes: map[*yaml3.Node]jsonSize{}, visiting: map[*yaml3.Node]bool{}}
	whole := m.size(&root)
	switch {
	case m.cycle != "":
		return nil, fmt.Errorf("%w: YAML anchor %q holds an alias of itself, which has no JSON form", ErrDocument, m.cycle)
	case m.added > maxAliasBytes(len(data)):
		return nil, fmt.Errorf("%w: its YAML aliases (%d of them) would add more than %d bytes to the JSON it becomes (%d times the document's %d bytes, at least %d): each alias is a whole copy of its anchor's value; write what they repeat once, under components, and refer to it with $ref", ErrDocument, m.aliases, maxAliasBytes(len(data)), aliasFactor, len(data), aliasFloor)
	case whole.bytes > MaxDocumentBytes:
		return nil, fmt.Errorf("%w: as JSON it is more than %d bytes, more than the %d this reads", ErrDocument, whole.bytes, MaxDocumentBytes)
	case whole.values > MaxDocumentValues:
		return nil, tooManyValues()
	}
	c := &jsonConverter{anchored: map[*yaml3.Node]any{}}
	v, err := c.value(&root)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: neither JSON nor YAML: %s", ErrDocument, strings.TrimPrefix(err.Error(), "json: "))
	}
	return j, nil
}

func yamlProblem(err error) error {
	return fmt.Errorf("%w: neither JSON nor YAML: %s", ErrDocument, strings.TrimPrefix(err.Error(), "yaml: "))
}

// A sized node tree is converted to what encoding/json encodes by
// jsonConverter, not by yaml.v3's Node.Decode: the decoder compares each
// key of a mapping with every later one, and keeps an error string for
// each pair that is equal — 8,000 copies of one key (64 KB) made 32
// million strings, 2 GiB, and 20,000 would have made 16 GiB (issue 19,
// attack26 T1); a mapping of distinct keys costs as many comparisons. The
// converter finds a key written twice in the map it fills, and refuses
// the document at the first, naming the key and both lines: YAML 1.2
// requires a mapping's keys to be unique, and yaml.v3 refused the same
// documents. Scalars are still resolved by yaml.v3 (Node.Decode on a
// scalar node alone: a null, a number, a boolean, a timestamp, !!binary),
// so the JSON is what YAMLToJSON makes of the document, byte for byte.
// Merge keys ("<<") are applied as yaml.v3 applies them: a mapping's own
// keys first, then those of each merged mapping, in order, that are not
// there yet — a key a merge brings again is not a duplicate, and costs a
// lookup.

// jsonConverter converts a YAML node tree, sized by jsonMeter and free of
// cycles, to the maps, slices and scalars encoding/json encodes.
type jsonConverter struct {
	anchored map[*yaml3.Node]any // each anchored node's value, converted once
}

func (c *jsonConverter) value(n *yaml3.Node) (any, error) {
	if n.Anchor != "" {
		if v, ok := c.anchored[n]; ok {
			return v, nil
		}
	}
	var v any
	var err error
	switch n.Kind {
	case 0: // a text of comments only: null, as YAMLToJSON makes it
	case yaml3.DocumentNode:
		if len(n.Content) > 0 {
			v, err = c.value(n.Content[0])
		}
	case yaml3.AliasNode:
		v, err = c.value(n.Alias)
	case yaml3.ScalarNode:
		v, err = scalarValue(n)
	case yaml3.SequenceNode:
		a := make([]any, len(n.Content))
		for i, e := range n.Content {
			if a[i], err = c.value(e); err != nil {
				break
			}
		}
		v = a
	case yaml3.MappingNode:
		v, err = c.mapping(n)
	default:
		err = fmt.Errorf("%w: neither JSON nor YAML: line %d: a node of unknown kind %d", ErrDocument, n.Line, n.Kind)
	}
	if err != nil {
		return nil, err
	}
	if n.Anchor != "" {
		c.anchored[n] = v
	}
	return v, nil
}

// mapping converts a mapping node: its keys as JSON strings, each once,
// then what its merge key ("<<") brings.
func (c *jsonConverter) mapping(n *yaml3.Node) (map[string]any, error) {
	m := make(map[string]any, len(n.Content)/2)
	var merge *yaml3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, err := c.key(n.Content[i])
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup || isMerge(n.Content[i]) && merge != nil {
			return nil, duplicateKey(n, i, key)
		}
		if isMerge(n.Content[i]) {
			merge = n.Content[i+1]
			continue
		}
		if m[key], err = c.value(n.Content[i+1]); err != nil {
			return nil, err
		}
	}
	if merge == nil {
		return m, nil
	}
	merged := []*yaml3.Node{merge}
	if merge.Kind == yaml3.SequenceNode {
		merged = merge.Content
	}
	for _, e := range merged {
		if t := e; t.Kind == yaml3.MappingNode || t.Kind == yaml3.AliasNode && t.Alias != nil && t.Alias.Kind == yaml3.MappingNode {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			for k, e := range v.(map[string]any) {
				if _, ok := m[k]; !ok {
					m[k] = e
				}
			}
			continue
		}
		return nil, fmt.Errorf("%w: neither JSON nor YAML: line %d: map merge requires map or sequence of maps as the value", ErrDocument, e.Line)
	}
	return m, nil
}

// isMerge reports whether a key is YAML's merge key, as yaml.v3 reads it.
func isMerge(k *yaml3.Node) bool {
	return k.Kind == yaml3.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// duplicateKey is the error of the i-th node of mapping n, a key whose
// JSON form, key, an earlier key of n has too.
func duplicateKey(n *yaml3.Node, i int, key string) error {
	first := n.Content[i]
	c := &jsonConverter{anchored: map[*yaml3.Node]any{}}
	for j := 0; j < i; j += 2 {
		if k, err := c.key(n.Content[j]); err == nil && k == key {
			first = n.Content[j]
			break
		}
	}
	return fmt.Errorf("%w: line %d, column %d: mapping key %.200q is already defined at line %d: a YAML mapping's keys, as a JSON object's, must be unique; keep one of them", ErrDocument, n.Content[i].Line, n.Content[i].Column, key, first.Line)
}

// key is a mapping key as JSON writes it: a string, or a number or a
// boolean written as a string, as oasdiff/yaml writes it. Any other key
// has no JSON form.
func (c *jsonConverter) key(n *yaml3.Node) (string, error) {
	k := n
	if k.Kind == yaml3.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml3.ScalarNode {
		return "", fmt.Errorf("%w: neither JSON nor YAML: line %d: a mapping key that is a %s, which has no JSON form", ErrDocument, n.Line, kindName(k.Kind))
	}
	v, err := scalarValue(k)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", fmt.Errorf("%w: neither JSON nor YAML: line %d: a mapping key of type %v, which has no JSON form: %.100v", ErrDocument, n.Line, reflect.TypeOf(v), v)
}

func kindName(k yaml3.Kind) string {
	switch k {
	case yaml3.MappingNode:
		return "mapping"
	case yaml3.SequenceNode:
		return "sequence"
	}
	return "node of kind " + strconv.Itoa(int(k))
}

// scalarValue is what yaml.v3 decodes a scalar node into: a string
// without asking it, the rest as it resolves them.
func scalarValue(n *yaml3.Node) (any, error) {
	if n.ShortTag() == "!!str" {
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, yamlProblem(err)
	}
	return v, nil
}

// jsonSize is what a YAML node becomes in JSON: at most bytes, and
// values values as tools.JSONValues counts them (a mapping's keys aside).
type jsonSize struct {
	bytes, values int64
}

// jsonMeter sizes the JSON a YAML node tree becomes, each anchor's value
// once, and counts what aliases add.
type jsonMeter struct {
	sizes    map[*yaml3.Node]jsonSize // each anchored node's
	visiting map[*yaml3.Node]bool     // anchored nodes being sized
	added    int64                    // bytes aliases add
	aliases  int
	cycle    string // the anchor of a value that holds an alias of itself
}

// meterCap is where sizes stop growing: past it every bound has failed,
// and sums stay far from overflowing.
const meterCap = 1 << 50

func (m *jsonMeter) size(n *yaml3.Node) jsonSize {
	if n == nil || m.cycle != "" {
		return jsonSize{}
	}
	if n.Anchor != "" {
		if s, ok := m.sizes[n]; ok {
			return s
		}
		if m.visiting[n] {
			m.cycle = n.Anchor
			return jsonSize{}
		}
		m.visiting[n] = true
		defer delete(m.visiting, n)
	}
	var s jsonSize
	switch n.Kind {
	case yaml3.AliasNode:
		m.aliases++
		s = m.size(n.Alias)
		m.added = min(m.added+s.bytes, meterCap)
	case yaml3.ScalarNode:
		s = jsonSize{scalarBytes(n), 1}
	case 0: // no document: null
		s = jsonSize{4, 1}
	case yaml3.DocumentNode:
		for _, c := range n.Content {
			s = m.size(c)
		}
	default: // mappings and sequences
		s = jsonSize{2, 1}
		for i, c := range n.Content {
			cs := m.size(c)
			s.bytes = min(s.bytes+1+cs.bytes, meterCap)
			if n.Kind == yaml3.SequenceNode || i%2 == 1 {
				s.values = min(s.values+cs.values, meterCap)
			}
		}
	}
	if n.Anchor != "" {
		m.sizes[n] = s
	}
	return s
}

// scalarBytes is at most the bytes a YAML scalar is as JSON, the quotes
// of a string counted. A quoted or block scalar is a string. A plain
// one may be null ("~" is "null"), or a number or a timestamp if it
// starts with a digit, a sign or a point, which encoding/json may write
// longer than YAML does ("1e20" is 21 digits; "2001-12-14" is
// "2001-12-14T00:00:00Z"): at most 28 bytes, or its own. One with an
// explicit tag may be any of these, or !!binary: base64 of bytes that
// each become at most a six-byte escape.
func scalarBytes(n *yaml3.Node) int64 {
	s := 2 + escapedLen(n.Value)
	const number = 28
	switch {
	case n.Tag != "" && n.Tag != "!":
		if n.ShortTag() == "!!binary" {
			return 2 + 6*int64(len(n.Value))
		}
		return max(s, number)
	case n.Style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle) != 0:
		return s
	case n.Value == "":
		return 4
	}
	switch c := n.Value[0]; {
	case c >= '0' && c <= '9', c == '-', c == '+', c == '.':
		return max(s, number)
	}
	return max(s, 4)
}

// escapedLen is the length of s as a JSON string's content as
// encoding/json writes it: HTML characters, control characters and the
// Unicode line and paragraph separators escaped. (yaml.v3 refuses text
// that is not UTF-8, and !!binary is counted apart.)
func escapedLen(s string) int64 {
	n := int64(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n', '\r', '\t', '\b', '\f':
			n++
		case '<', '>', '&':
			n += 5
		case 0xe2: // U+2028 and U+2029, 3 bytes, are written as 6
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
				n += 3
			}
		default:
			if c < 0x20 {
				n += 5
			}
		}
	}
	return n
}

// maxYAMLNodes bounds yamlNodes: at about 220 bytes a node, the parser's
// tree of a description at the bound takes about what the largest real
// description that loads as YAML takes to parse (Microsoft Graph's v1.0,
// 25 MB, counts 1.2 million; GitHub's 367,000). A description past it is
// refused saying to convert it to JSON, which is counted exactly.
const maxYAMLNodes = MaxDocumentValues * 3 / 4

// yamlNodes is an upper bound, in pairs, of the nodes the parser makes of
// a YAML text apart from its aliases (which the alias meter counts), read
// before it is parsed: the tree takes about 220 bytes a node, so a count
// taken from the tree comes after the cost. Every node but the root
// follows one of ',', '[', '{' (a flow collection's entries), ':' (a
// mapping's value, after a key in any form), '-' (a block sequence's
// entry) and '?' (an explicit key); each of them adds at most a key and
// a value, a pair. A comment ('#') is kept on the node after it, copied
// on the way, and counts as a pair too. Each of these bytes counts,
// wherever it is: quotes are not read, since a '"' in a plain scalar is
// text, and a count that took it for the start of a string skipped the
// values after it; nor are line breaks, of which YAML knows several
// (attack22 P5: 8,000,000 values in 16 MB took the server to 2 GiB;
// attack24 R2, R4: keys, and comments ended by a CR). These bytes are
// ASCII, so no other spelling of them in UTF-8 exists. It stops counting
// past limit.
func yamlNodes(data []byte, limit int) int {
	n := 1
	for _, c := range data {
		switch c {
		case ',', '[', '{', ':', '-', '?', '#':
			n++
			if n > limit {
				return n
			}
		}
	}
	return n
}

// yamlTagDirective reports whether a YAML text may declare a tag handle
// (%TAG): the parser copies a handle's prefix into every node that uses
// it, so 1 MB of text made 2 GiB of tags (attack24 R1). No OpenAPI
// description needs one.
func yamlTagDirective(data []byte) bool {
	return bytes.Contains(data, []byte("%TAG"))
}
