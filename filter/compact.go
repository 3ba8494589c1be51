package filter

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/codecell/codecell/tools/jsonstr"
)

// Compact renders a JSON document as compact text for a model to read, in
// a TOON-like layout, when the document holds a uniform array of objects
// (two rows or more, every row an object of scalars with the same keys)
// and the text is smaller than the JSON. ok is false otherwise.
//
// The layout, two spaces per level:
//
//	key: value                 a scalar field
//	key:                       an object field, its fields indented below
//	key[3]: a,b,c              an array of scalars
//	key[2]{id,name,email}:     a uniform array of objects: a header of
//	  1,Ada,⟦email:7f3a9c21⟧   keys, then one line of cells per row
//	  2,Bob,
//	  … 950 more items         the limiter's marker, if any
//	key[2]:                    any other array, one item a line, objects
//	  - {"a":1}                and arrays as one-line JSON
//
// Fields that are null, "", {} or [] are dropped; in a table a null or
// empty cell is left empty, and a column empty in every row is dropped.
// A string is quoted, JSON-style, when it is empty, has surrounding white
// space, contains a comma, colon (outside a token), quote, backslash or
// control character, starts with - # [ or {, or starts like a number, or
// is true, false or null. Keys are quoted unless they are identifiers.
func Compact(doc json.RawMessage) (text string, ok bool, err error) {
	root, err := parseJSON(doc)
	if err != nil {
		return "", false, err
	}
	measure(&root)
	text, ok = compactTree(&root)
	return text, ok, nil
}

// compactTree renders n when it holds a table and the text is smaller
// than n.size, which must be measured.
func compactTree(n *node) (string, bool) {
	if n.kind != kindObject && n.kind != kindArray {
		return "", false
	}
	c := compacter{}
	if n.kind == kindObject {
		c.object(n, 0)
	} else {
		c.array("", n, 0)
	}
	if c.tables == 0 || len(c.b) >= n.size {
		return "", false
	}
	return strings.TrimSuffix(string(c.b), "\n"), true
}

type compacter struct {
	b      []byte
	tables int
}

func (c *compacter) indent(level int) {
	for range level {
		c.b = append(c.b, ' ', ' ')
	}
}

func emptyNode(n *node) bool {
	switch n.kind {
	case kindNull:
		return true
	case kindString:
		return n.str == ""
	case kindArray, kindObject:
		return len(n.kids) == 0
	}
	return false
}

func scalar(n *node) bool { return n.kind != kindArray && n.kind != kindObject }

func (c *compacter) object(n *node, level int) {
	for i := range n.kids {
		v := &n.kids[i]
		if emptyNode(v) {
			continue
		}
		switch v.kind {
		case kindObject:
			c.indent(level)
			c.key(v.key)
			c.b = append(c.b, ":\n"...)
			c.object(v, level+1)
		case kindArray:
			c.array(v.key, v, level)
		default:
			c.indent(level)
			c.key(v.key)
			c.b = append(c.b, ": "...)
			c.scalar(v)
			c.b = append(c.b, '\n')
		}
	}
}

// isMarker reports the limiter's "… N more items" element.
func isMarker(n *node) bool {
	return n.kind == kindString && strings.HasPrefix(n.str, "… ") && strings.HasSuffix(n.str, " more items")
}

func (c *compacter) array(key string, n *node, level int) {
	items := n.kids
	var marker *node
	if len(items) > 0 && isMarker(&items[len(items)-1]) {
		marker = &items[len(items)-1]
		items = items[:len(items)-1]
	}
	c.indent(level)
	if key != "" {
		c.key(key)
	}
	c.b = append(c.b, '[')
	c.b = appendInt(c.b, len(items))
	c.b = append(c.b, ']')

	if cols, ok := tableColumns(items); ok {
		c.tables++
		c.b = append(c.b, '{')
		for i, col := range cols {
			if i > 0 {
				c.b = append(c.b, ',')
			}
			c.key(col)
		}
		c.b = append(c.b, "}:\n"...)
		for i := range items {
			row := &items[i]
			c.indent(level + 1)
			for j, col := range cols {
				if j > 0 {
					c.b = append(c.b, ',')
				}
				if v := field(row, col); v != nil && !emptyNode(v) {
					c.scalar(v)
				}
			}
			c.b = append(c.b, '\n')
		}
		c.marker(marker, level+1)
		return
	}
	allScalar := true
	for i := range items {
		if !scalar(&items[i]) {
			allScalar = false
			break
		}
	}
	if allScalar {
		c.b = append(c.b, ':')
		for i := range items {
			if i == 0 {
				c.b = append(c.b, ' ')
			} else {
				c.b = append(c.b, ',')
			}
			c.scalar(&items[i])
		}
		if marker != nil {
			c.b = append(c.b, ',')
			c.b = append(c.b, marker.str...)
		}
		c.b = append(c.b, '\n')
		return
	}
	c.b = append(c.b, ":\n"...)
	for i := range items {
		c.indent(level + 1)
		c.b = append(c.b, '-', ' ')
		if it := &items[i]; scalar(it) {
			c.scalar(it)
		} else {
			c.b = appendJSON(c.b, it)
		}
		c.b = append(c.b, '\n')
	}
	c.marker(marker, level+1)
}

func (c *compacter) marker(m *node, level int) {
	if m == nil {
		return
	}
	c.indent(level)
	c.b = append(c.b, m.str...)
	c.b = append(c.b, '\n')
}

// tableColumns returns the columns of a uniform array of objects: at
// least two rows, each an object of scalars with the same set of keys
// (and no key twice); columns empty in every row are left out.
func tableColumns(items []node) ([]string, bool) {
	if len(items) < 2 || items[0].kind != kindObject || len(items[0].kids) == 0 {
		return nil, false
	}
	first := &items[0]
	index := make(map[string]int, len(first.kids))
	for i := range first.kids {
		k := first.kids[i].key
		if _, dup := index[k]; dup {
			return nil, false
		}
		index[k] = i
	}
	used := make([]bool, len(first.kids))
	for r := range items {
		row := &items[r]
		if row.kind != kindObject || len(row.kids) != len(first.kids) {
			return nil, false
		}
		for i := range row.kids {
			j, ok := index[row.kids[i].key]
			if !ok || !scalar(&row.kids[i]) {
				return nil, false
			}
			if !emptyNode(&row.kids[i]) {
				used[j] = true
			}
		}
		// Same count, every key known: the sets are equal unless a key
		// repeats.
		if hasDuplicateKeys(row.kids) {
			return nil, false
		}
	}
	var cols []string
	for i := range first.kids {
		if used[i] {
			cols = append(cols, first.kids[i].key)
		}
	}
	return cols, len(cols) > 0
}

func hasDuplicateKeys(kids []node) bool {
	if len(kids) < 2 {
		return false
	}
	seen := make(map[string]struct{}, len(kids))
	for i := range kids {
		if _, ok := seen[kids[i].key]; ok {
			return true
		}
		seen[kids[i].key] = struct{}{}
	}
	return false
}

func field(obj *node, key string) *node {
	for i := range obj.kids {
		if obj.kids[i].key == key {
			return &obj.kids[i]
		}
	}
	return nil
}

func (c *compacter) key(k string) {
	if identifier(k) {
		c.b = append(c.b, k...)
		return
	}
	c.b = jsonstr.Append(c.b, k)
}

func identifier(k string) bool {
	if k == "" || !(isAlpha(k[0]) || k[0] == '_') {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !(isAlnum(c) || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (c *compacter) scalar(n *node) {
	switch n.kind {
	case kindNull:
		c.b = append(c.b, "null"...)
	case kindBool, kindNumber:
		c.b = append(c.b, n.str...)
	default:
		if needsQuotes(n.str) {
			c.b = jsonstr.Append(c.b, n.str)
		} else {
			c.b = append(c.b, n.str...)
		}
	}
}

func needsQuotes(s string) bool {
	if s == "" || s != strings.TrimSpace(s) {
		return true
	}
	switch s {
	case "true", "false", "null":
		return true
	}
	switch s[0] {
	case '-', '#', '[', '{':
		return true
	}
	if isDigit(s[0]) || (s[0] == '.' && len(s) > 1 && isDigit(s[1])) {
		return true
	}
	var refs []tokenRef
	if strings.Contains(s, tokenOpen) {
		refs = findTokenRefs(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		for len(refs) > 0 && refs[0].end <= i {
			refs = refs[1:]
		}
		if c == ':' && len(refs) > 0 && refs[0].start <= i {
			continue // the colon of a token
		}
		if c < 0x20 || c == ',' || c == ':' || c == '"' || c == '\\' || c == 0x7f {
			return true
		}
	}
	return strings.ContainsAny(s, "\u2028\u2029") || !utf8.ValidString(s)
}

func appendInt(b []byte, n int) []byte {
	if n == 0 {
		return append(b, '0')
	}
	var d [20]byte
	i := len(d)
	for n > 0 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[i:]...)
}
