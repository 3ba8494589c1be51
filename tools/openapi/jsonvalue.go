package openapi

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/codecell/codecell/tools/jsonstr"
)

// obj is a JSON object that keeps its keys in the order they were set,
// so that generated schemas read in a sensible order (the arguments of
// an operation in the document's order of its parameters).
type obj struct {
	keys []string
	vals map[string]any
}

func newObj() *obj { return &obj{vals: map[string]any{}} }

// set sets k to v, keeping k's place if it was set before.
func (o *obj) set(k string, v any) *obj {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

func (o *obj) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *obj) has(k string) bool {
	_, ok := o.vals[k]
	return ok
}

func (o *obj) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
}

func (o *obj) len() int { return len(o.keys) }

// encode writes v as compact JSON. v holds *obj, []any, map[string]any
// (written with sorted keys), string, bool, nil, numbers and
// json.RawMessage (written as it is). Values that have no JSON form
// (NaN, channels) are written as null.
func encode(v any) []byte {
	b, _ := encodeMax(v, math.MaxInt)
	return b
}

// encodeMax writes v as encode does, and stops, reporting false, once it
// wrote more than limit bytes (a string at most past them): a schema
// that repeats a long description or example at each of its nodes is
// refused before it is whole.
func encodeMax(v any, limit int) ([]byte, bool) {
	var b bytes.Buffer
	writeJSON(&b, v, limit)
	if b.Len() > limit {
		return nil, false
	}
	return b.Bytes(), true
}

func writeJSON(b *bytes.Buffer, v any, limit int) {
	if b.Len() > limit {
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case *obj:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSON(b, v.vals[k], limit)
		}
		b.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSON(b, v[k], limit)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, x, limit)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, x)
		}
		b.WriteByte(']')
	case string:
		writeString(b, v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float64:
		writeFloat(b, v)
	case float32:
		writeFloat(b, float64(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case json.Number:
		if json.Valid([]byte(v)) {
			b.WriteString(string(v))
		} else {
			b.WriteString("null")
		}
	case json.RawMessage:
		if len(v) == 0 {
			b.WriteString("null")
		} else {
			b.Write(v)
		}
	default:
		// Anything else the document decoder produced: let encoding/json
		// say what it is.
		raw, err := json.Marshal(v)
		if err != nil {
			b.WriteString("null")
			return
		}
		b.Write(raw)
	}
}

func writeFloat(b *bytes.Buffer, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b.WriteString("null")
		return
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		b.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
		return
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
}

// writeString writes s as a JSON string, as encoding/json would without
// HTML escaping; invalid UTF-8 becomes U+FFFD (package jsonstr).
func writeString(b *bytes.Buffer, s string) {
	b.Write(jsonstr.Append(b.AvailableBuffer(), s))
}
