package vfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// object is a JSON object that remembers the order of its keys, so that
// declarations list properties in the order the schema author chose.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) str(k string) string {
	s, _ := o.vals[k].(string)
	return s
}

func (o *object) has(k string) bool {
	_, ok := o.vals[k]
	return ok
}

// parseJSON decodes a JSON document into nil, bool, json.Number, string,
// []any and *object values.
func parseJSON(data []byte) (any, error) {
	p := parser{data: data}
	if v, ok := p.value(0); ok {
		if p.skipSpace(); p.i == len(data) {
			return v, nil
		}
	}
	// Not well formed, or a case the quick parser leaves alone: the
	// decoder says what is wrong.
	return decodeJSON(data)
}

// decodeJSON is parseJSON by encoding/json's tokens, slower.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// parser parses what decodeJSON does, as decodeJSON does, in one pass
// over the bytes without a decoder's tokens (a large schema's page was
// mostly tokens). A string with an escape or a byte outside printable
// ASCII is unquoted by encoding/json; anything not well formed, or
// nested deeper than maxParseDepth, is given back to decodeJSON (ok
// false).
type parser struct {
	data []byte
	i    int
}

// maxParseDepth is the deepest nesting the parser follows.
const maxParseDepth = 1000

func (p *parser) skipSpace() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	if depth > maxParseDepth {
		return nil, false
	}
	p.skipSpace()
	if p.i >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		p.i++
		o := &object{vals: map[string]any{}}
		p.skipSpace()
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.i++
			return o, true
		}
		for {
			p.skipSpace()
			if p.i >= len(p.data) || p.data[p.i] != '"' {
				return nil, false
			}
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.skipSpace()
			if p.i >= len(p.data) || p.data[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
			p.skipSpace()
			if p.i >= len(p.data) {
				return nil, false
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case '}':
				p.i++
				return o, true
			default:
				return nil, false
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.skipSpace()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.skipSpace()
			if p.i >= len(p.data) {
				return nil, false
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if bytes.HasPrefix(p.data[p.i:], []byte(lit.text)) {
				p.i += len(lit.text)
				return lit.v, true
			}
		}
		return nil, false
	}
}

// str reads the string at p.i.
func (p *parser) str() (string, bool) {
	start := p.i
	p.i++
	plain := true
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			p.i++
			if plain {
				return string(p.data[start+1 : p.i-1]), true
			}
			var s string
			if json.Unmarshal(p.data[start:p.i], &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			p.i += 2
			continue
		case c < 0x20 || c > 0x7e:
			plain = false
		}
		p.i++
	}
	return "", false
}

// number reads the number at p.i, as its text (json.Number), checking
// JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (any, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(p.data[start:p.i]), true
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, errors.New("unexpected delimiter")
	default:
		return tok, nil
	}
}

// encodeJSON writes v compactly, keeping object key order.
func encodeJSON(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(v.String())
	case string:
		b.WriteString(quote(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeJSON(b, e)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			encodeJSON(b, v.vals[k])
		}
		b.WriteByte('}')
	}
}

func compactJSON(v any) string {
	var b strings.Builder
	encodeJSON(&b, v)
	return b.String()
}

// quote returns s as a JSON string literal, which is also a valid
// JavaScript and TypeScript string literal. HTML characters are not
// escaped.
func quote(s string) string {
	if plainASCII(s) {
		// What the encoder below gives such a string, without making one.
		return `"` + s + `"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: a string that JSON quotes as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
