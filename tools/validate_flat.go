package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// flatSchema is an object schema whose properties are each a string, an
// integer or a boolean, with the simple bounds of such values: the shape
// of execute_code's own schema and of many tools'. Arguments it accepts
// are accepted by a scan of their top level, without the validator (which
// decodes them whole and walks the schema: 8 µs of a stdio execute_code's
// 180 µs of server CPU). Arguments it does not accept at once — and those
// it is not sure of (an escaped key, a key twice, a number with a
// fraction) — go to the validator, so the problems reported are the
// validator's own.
type flatSchema struct {
	props    map[string]flatProp
	required []string
	closed   bool // additionalProperties: false
}

// flatProp is one property of a flatSchema.
type flatProp struct {
	kind             byte     // 's' string, 'i' integer, 'b' boolean
	enum             []string // for strings, when set
	minLen, maxLen   int      // for strings; -1 when unbounded
	min, max         int64    // for integers
	hasMin, hasMax   bool
	lengths, bounded bool // minLen or maxLen set; min or max set
}

// flatSchemaOf returns the flatSchema of a schema document, decoded, or
// nil when it is not one.
func flatSchemaOf(doc any) *flatSchema {
	m, ok := doc.(map[string]any)
	if !ok || m["type"] != "object" {
		return nil
	}
	f := &flatSchema{props: map[string]flatProp{}}
	for k, v := range m {
		switch k {
		case "title", "description", "$comment", "type":
		case "properties":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range ps {
				fp, ok := flatPropOf(p)
				if !ok {
					return nil
				}
				f.props[name] = fp
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range rs {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.closed = !b
		default:
			return nil
		}
	}
	if len(f.props) == 0 {
		return nil // fastCheck's, or not worth it
	}
	return f
}

func flatPropOf(doc any) (flatProp, bool) {
	p := flatProp{minLen: -1, maxLen: -1}
	m, ok := doc.(map[string]any)
	if !ok {
		return p, false
	}
	switch m["type"] {
	case "string":
		p.kind = 's'
	case "integer":
		p.kind = 'i'
	case "boolean":
		p.kind = 'b'
	default:
		return p, false
	}
	for k, v := range m {
		switch k {
		case "title", "description", "$comment", "default", "examples", "type":
		case "enum":
			vs, ok := v.([]any)
			if !ok || p.kind != 's' || len(vs) == 0 {
				return p, false
			}
			for _, e := range vs {
				s, ok := e.(string)
				if !ok {
					return p, false
				}
				p.enum = append(p.enum, s)
			}
		case "minLength", "maxLength":
			n, ok := schemaInt(v)
			if !ok || p.kind != 's' || n < 0 || n > math.MaxInt32 {
				return p, false
			}
			if k == "minLength" {
				p.minLen = int(n)
			} else {
				p.maxLen = int(n)
			}
			p.lengths = true
		case "minimum", "maximum":
			n, ok := schemaInt(v)
			if !ok || p.kind != 'i' {
				return p, false
			}
			if k == "minimum" {
				p.min, p.hasMin = n, true
			} else {
				p.max, p.hasMax = n, true
			}
			p.bounded = true
		default:
			return p, false
		}
	}
	return p, true
}

// schemaInt is a number of a decoded schema document that is an int64.
func schemaInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// maxFlatKeys is the most keys arguments may have for the scan to judge
// them: it compares each key with those before it.
const maxFlatKeys = 32

// accepts reports whether doc is valid JSON that the schema accepts;
// false says only that the validator must decide.
func (f *flatSchema) accepts(doc []byte) bool {
	t := bytes.Trim(doc, jsonSpace)
	if len(t) < 2 || t[0] != '{' || !json.Valid(t) {
		return false
	}
	var seen [8][]byte // the keys met, to refuse one twice
	keys := seen[:0]
	i := skipSpace(t, 1)
	if t[i] == '}' {
		return len(f.required) == 0
	}
	for {
		// t is valid JSON: a key, a colon, a value, then ',' or '}'.
		end := stringEnd(t, i)
		key := t[i+1 : end-1]
		// A key with an escape, or not UTF-8 (the validator reads its
		// bytes as U+FFFD, attack11 F2), or one past maxFlatKeys (the
		// check of each against the others is quadratic, attack11 F1),
		// is the validator's to judge.
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) || len(keys) == maxFlatKeys {
			return false
		}
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return false
			}
		}
		keys = append(keys, key)
		i = skipSpace(t, end)
		i = skipSpace(t, i+1) // the colon
		vend := valueEnd(t, i)
		p, known := f.props[string(key)]
		if !known && f.closed || known && !p.accepts(t[i:vend]) {
			return false
		}
		i = skipSpace(t, vend)
		if t[i] == '}' {
			break
		}
		i = skipSpace(t, i+1) // the comma
	}
	for _, r := range f.required {
		found := false
		for _, k := range keys {
			if string(k) == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// accepts reports whether the JSON value v, valid, meets p.
func (p flatProp) accepts(v []byte) bool {
	switch p.kind {
	case 'b':
		return v[0] == 't' || v[0] == 'f'
	case 'i':
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') || bytes.ContainsAny(v, ".eE") {
			return false
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil && (!p.hasMin || n >= p.min) && (!p.hasMax || n <= p.max)
	case 's':
		if v[0] != '"' {
			return false
		}
		raw := v[1 : len(v)-1]
		if len(p.enum) == 0 && p.maxLen < 0 && p.minLen <= 1 {
			// Without decoding: a string whose JSON is not empty holds
			// at least one character.
			return p.minLen < 1 || len(raw) > 0
		}
		s := string(raw)
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			if json.Unmarshal(v, &s) != nil {
				return false
			}
		}
		if p.lengths {
			n := utf8.RuneCountInString(s)
			if p.minLen >= 0 && n < p.minLen || p.maxLen >= 0 && n > p.maxLen {
				return false
			}
		}
		if len(p.enum) > 0 {
			for _, e := range p.enum {
				if e == s {
					return true
				}
			}
			return false
		}
		return true
	}
	return false
}

// stringEnd returns the index just past the string that starts at t[i],
// in valid JSON.
func stringEnd(t []byte, i int) int {
	i++
	for {
		j := bytes.IndexAny(t[i:], `"\`)
		i += j
		if t[i] == '"' {
			return i + 1
		}
		i += 2 // an escape: the backslash and the byte it escapes
	}
}

// valueEnd returns the index just past the value that starts at t[i], in
// valid JSON.
func valueEnd(t []byte, i int) int {
	switch t[i] {
	case '"':
		return stringEnd(t, i)
	case '{', '[':
		depth := 0
		for {
			switch t[i] {
			case '"':
				i = stringEnd(t, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(t) {
		switch t[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}
