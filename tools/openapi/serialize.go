package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"sort"
	"strings"
)

// This file writes arguments into a request the way the document says:
// parameters per their style and explode, bodies as JSON, forms or
// multipart.

// decoded is a JSON value as a program passed it: string, float64 (as
// json.Number, to keep its digits), bool, nil, []any or map[string]any.
func decodeValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// scalar writes a primitive value as text; objects and arrays nested
// where the style has no form for them are written as JSON.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		if v {
			return "true"
		}
		return "false"
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// kv is one name and value of an object, in the object's key order
// (sorted, since a decoded object has none).
type kv struct{ k, v string }

func pairs(m map[string]any) []kv {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]kv, len(keys))
	for i, k := range keys {
		out[i] = kv{k, scalar(m[k])}
	}
	return out
}

func scalars(a []any) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = scalar(x)
	}
	return out
}

// pathEscape escapes a path parameter's value; with allowReserved the
// reserved characters of RFC 3986 stay as they are.
func pathEscape(s string, reserved bool) string {
	if !reserved {
		return url.PathEscape(s)
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(":/?#[]@!$&'()*+,;=", r) {
			b.WriteRune(r)
			continue
		}
		b.WriteString(url.PathEscape(string(r)))
	}
	return b.String()
}

// pathReserved escapes what a path parameter must not carry even when
// its reserved characters are kept.
var pathReserved = strings.NewReplacer("?", "%3F", "#", "%23")

// pathValue writes a path parameter: simple (a,b / k,v / k=v), label
// (.a.b / .a,b) or matrix (;id=a;id=b / ;id=a,b).
func pathValue(p *param, v any) string {
	esc := func(s string) string {
		if !p.reserved {
			return url.PathEscape(s)
		}
		// allowReserved is for query parameters; in a path, ? and #
		// would end it.
		return pathReserved.Replace(pathEscape(s, true))
	}
	join := func(parts []string, sep string) string {
		for i := range parts {
			parts[i] = esc(parts[i])
		}
		return strings.Join(parts, sep)
	}
	var items []string // the exploded parts, already escaped
	var flat string    // the unexploded form, escaped
	switch v := v.(type) {
	case []any:
		items = scalars(v)
		flat = join(scalars(v), ",")
		for i := range items {
			items[i] = esc(items[i])
		}
	case map[string]any:
		var exp, un []string
		for _, e := range pairs(v) {
			exp = append(exp, esc(e.k)+"="+esc(e.v))
			un = append(un, esc(e.k), esc(e.v))
		}
		items, flat = exp, strings.Join(un, ",")
	default:
		s := esc(scalar(v))
		switch p.style {
		case "label":
			return "." + s
		case "matrix":
			return ";" + esc(p.name) + "=" + s
		}
		return s
	}
	_, isObj := v.(map[string]any)
	switch p.style {
	case "label":
		if p.explode {
			return "." + strings.Join(items, ".")
		}
		return "." + flat
	case "matrix":
		if p.explode {
			if isObj {
				return ";" + strings.Join(items, ";")
			}
			out := ""
			for _, it := range items {
				out += ";" + esc(p.name) + "=" + it
			}
			return out
		}
		return ";" + esc(p.name) + "=" + flat
	}
	if p.explode && isObj {
		return strings.Join(items, ",")
	}
	return flat
}

// queryValue appends a query parameter: form (name=a&name=b or
// name=a,b), spaceDelimited, pipeDelimited or deepObject (name[k]=v).
func queryValue(q *strings.Builder, p *param, v any) {
	esc := url.QueryEscape
	if p.reserved {
		esc = func(s string) string { return pathEscape(s, true) }
	}
	add := func(name, value string) {
		if q.Len() > 0 {
			q.WriteByte('&')
		}
		q.WriteString(url.QueryEscape(name))
		q.WriteByte('=')
		q.WriteString(value)
	}
	if p.json {
		b, _ := json.Marshal(v)
		add(p.name, esc(string(b)))
		return
	}
	switch v := v.(type) {
	case []any:
		vals := scalars(v)
		switch {
		case p.style == "form" && p.explode:
			for _, x := range vals {
				add(p.name, esc(x))
			}
		case p.style == "spaceDelimited":
			add(p.name, joinEsc(vals, "%20", esc))
		case p.style == "pipeDelimited":
			add(p.name, joinEsc(vals, "|", esc))
		default:
			add(p.name, joinEsc(vals, ",", esc))
		}
	case map[string]any:
		ps := pairs(v)
		switch {
		case p.style == "deepObject":
			for _, e := range ps {
				add(p.name+"["+e.k+"]", esc(e.v))
			}
		case p.style == "form" && p.explode:
			for _, e := range ps {
				add(e.k, esc(e.v))
			}
		default:
			var flat []string
			for _, e := range ps {
				flat = append(flat, e.k, e.v)
			}
			sep := ","
			switch p.style {
			case "spaceDelimited":
				sep = "%20"
			case "pipeDelimited":
				sep = "|"
			}
			add(p.name, joinEsc(flat, sep, esc))
		}
	default:
		add(p.name, esc(scalar(v)))
	}
}

func joinEsc(vals []string, sep string, esc func(string) string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = esc(v)
	}
	return strings.Join(out, sep)
}

// headerValue writes a header parameter (style simple).
func headerValue(p *param, v any) string {
	if p.json {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch v := v.(type) {
	case []any:
		return strings.Join(scalars(v), ",")
	case map[string]any:
		var parts []string
		for _, e := range pairs(v) {
			if p.explode {
				parts = append(parts, e.k+"="+e.v)
			} else {
				parts = append(parts, e.k, e.v)
			}
		}
		return strings.Join(parts, ",")
	}
	return scalar(v)
}

// cookieValue writes a cookie parameter (style form).
func cookieValue(p *param, v any) string {
	switch v := v.(type) {
	case []any:
		return url.QueryEscape(strings.Join(scalars(v), ","))
	case map[string]any:
		var parts []string
		for _, e := range pairs(v) {
			parts = append(parts, e.k, e.v)
		}
		return url.QueryEscape(strings.Join(parts, ","))
	}
	return url.QueryEscape(scalar(v))
}

// formBody writes an application/x-www-form-urlencoded body: arrays as
// repeated fields (or joined, when the field's encoding says explode:
// false), objects as JSON unless the encoding says deepObject.
func formBody(fields map[string]any, order []string, b *body) []byte {
	var q strings.Builder
	for _, k := range order {
		v, ok := fields[k]
		if !ok {
			continue
		}
		p := &param{name: k, style: "form", explode: true}
		if enc := b.encoding[k]; enc != nil {
			if enc.Style != "" {
				p.style = enc.Style
			}
			if enc.Explode != nil {
				p.explode = *enc.Explode
			}
			p.json = enc.ContentType != "" && mediaKind(enc.ContentType) == bodyJSON
		}
		if _, isObj := v.(map[string]any); isObj && p.style != "deepObject" {
			p.json = true
		}
		queryValue(&q, p, v)
	}
	return []byte(q.String())
}

// multipartBody writes a multipart/form-data body: a part per field,
// files (see body.binary) with a file name, objects and arrays of other
// fields as JSON parts. It returns the body and its content type.
func multipartBody(fields map[string]any, order []string, b *body) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	part := func(name string, ct string, file bool, data []byte) error {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, name)
		if file {
			disp += fmt.Sprintf(`; filename=%q`, name)
		}
		h.Set("Content-Disposition", disp)
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = pw.Write(data)
		return err
	}
	for _, k := range order {
		v, ok := fields[k]
		if !ok {
			continue
		}
		ct := ""
		if enc := b.encoding[k]; enc != nil {
			ct = enc.ContentType
		}
		values := []any{v}
		if arr, ok := v.([]any); ok && b.binary[k] {
			values = arr // several files under one name
		}
		for _, x := range values {
			var err error
			switch {
			case b.binary[k]:
				if ct == "" {
					ct = "application/octet-stream"
				}
				err = part(k, ct, true, []byte(scalar(x)))
			default:
				switch x.(type) {
				case map[string]any, []any:
					data, _ := json.Marshal(x)
					if ct == "" {
						ct = "application/json"
					}
					err = part(k, ct, false, data)
				default:
					err = part(k, ct, false, []byte(scalar(x)))
				}
			}
			if err != nil {
				return nil, "", err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}
