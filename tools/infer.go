package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InferredSchema is a JSON Schema learned from a tool's observed results
// (see Inferrer), for a tool that declares no output schema. It is a hint
// for the readers of the catalogue, never a contract: results are not
// checked against it, and it is not advertised as an output schema.
type InferredSchema struct {
	// Schema is the JSON Schema, as Inferrer.Schema gives it.
	Schema json.RawMessage
	// Observed is how many results it was learned from.
	Observed int
}

// Bounds of schema inference: whatever values an Inferrer observes, its
// schema stays within them.
const (
	// InferMaxBytes is the largest value Observe takes.
	InferMaxBytes = 1 << 20
	// InferMaxDepth is how deep values are described: below it, objects
	// and arrays are described by their type alone.
	InferMaxDepth = 8
	// InferMaxProperties is the most property names an object schema
	// holds: an object seen with more is described as a map, its values
	// merged into one schema (additionalProperties).
	InferMaxProperties = 40
	// InferMaxNodes is the most schemas the inferred schema holds, nested
	// ones included: once it is reached, new properties are left out
	// (the object is marked open, additionalProperties true) and new
	// array items undescribed.
	InferMaxNodes = 256
	// inferMaxName is the longest property name kept as a name.
	inferMaxName = 48
	// inferMaxFormatLen is the longest string whose format is detected.
	inferMaxFormatLen = 2048
)

// ErrInferTooLarge is a value larger than InferMaxBytes, which Observe
// does not take.
var ErrInferTooLarge = errors.New("value too large to observe")

// Inferrer learns a JSON Schema from the JSON values it observes, one
// after another, such as the results of a tool that declares none:
//
//   - types: each value's JSON type joins the node's "type"; a union holds
//     at most one member per JSON type (integer and number merge into
//     number), so objects of different shapes merge into one object
//     schema and arrays into one item schema, and unions stay small;
//   - objects: "properties" holds every property seen, "required" those
//     seen in every object observed there;
//   - arrays: the items of every array observed there merge into one
//     "items" schema;
//   - strings: "format" (date-time, date, uuid, email, uri) when every
//     string observed there has it;
//   - objects used as maps — more than InferMaxProperties names, or a name
//     that does not look like a field name (it has the form of a date, an
//     address, an identifier, or starts with a digit…) — become
//     "additionalProperties" with the merged schema of their values, so
//     that keys, which are data, never enter the schema;
//   - bounds: InferMaxDepth, InferMaxProperties and InferMaxNodes keep the
//     schema small whatever is observed, and values larger than
//     InferMaxBytes are refused; observing is linear in the value's size.
//
// The schema holds no values: only types, property names and formats.
// The zero value has observed nothing. An Inferrer is not safe for
// concurrent use.
type Inferrer struct {
	root     *shape
	nodes    int
	observed int
	schema   json.RawMessage // root rendered
}

// ResumeInferrer returns an Inferrer that continues from schema, as
// Schema returned it after observed values. A schema it does not
// recognise as its own (another form, or beyond the bounds) is an error.
func ResumeInferrer(schema json.RawMessage, observed int) (*Inferrer, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(schema))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("resume inference: %w", err)
	}
	in := &Inferrer{observed: max(observed, 0)}
	root, err := in.parse(v, 0)
	if err != nil {
		return nil, fmt.Errorf("resume inference: %w", err)
	}
	if in.nodes > InferMaxNodes {
		return nil, fmt.Errorf("resume inference: %d schemas, more than %d", in.nodes, InferMaxNodes)
	}
	in.root = root
	in.schema = root.render()
	return in, nil
}

// Observe merges v, one JSON value, into the schema and reports whether
// the schema changed. A value that is not JSON, or larger than
// InferMaxBytes, is an error and changes nothing.
func (in *Inferrer) Observe(v json.RawMessage) (changed bool, err error) {
	if len(v) > InferMaxBytes {
		return false, fmt.Errorf("observe %d bytes: %w (the limit is %d)", len(v), ErrInferTooLarge, InferMaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return false, fmt.Errorf("observe: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, errors.New("observe: more than one JSON value")
	}
	if in.root == nil {
		in.root, in.nodes = &shape{}, 1
	}
	in.merge(in.root, val, 0)
	in.observed++
	s := in.root.render()
	changed = !bytes.Equal(s, in.schema)
	in.schema = s
	return changed, nil
}

// Schema returns the JSON Schema of the values observed so far, or nil
// before the first.
func (in *Inferrer) Schema() json.RawMessage {
	if in.schema == nil {
		return nil
	}
	return bytes.Clone(in.schema)
}

// Observed returns how many values the schema was learned from.
func (in *Inferrer) Observed() int { return in.observed }

// valueKind is a JSON type, as a bit of a set.
type valueKind uint8

const (
	kindObject valueKind = 1 << iota
	kindArray
	kindString
	kindInteger
	kindNumber
	kindBoolean
	kindNull
)

type kindName struct {
	k    valueKind
	name string
}

// kindNames are the types in the order a union lists them.
var kindNames = []kindName{
	{kindObject, "object"}, {kindArray, "array"}, {kindString, "string"},
	{kindInteger, "integer"}, {kindNumber, "number"}, {kindBoolean, "boolean"}, {kindNull, "null"},
}

// shape is one node of the schema being learned. A node without kinds
// has seen nothing yet, or is a schema that allows anything ({}).
type shape struct {
	kinds  valueKind
	format string // of its strings, when they all agree
	// Objects: named properties, those seen in every object, and whether
	// there are more properties than named (depth or node bound); or, for
	// a map, the schema of its values.
	props    map[string]*shape
	required map[string]bool
	open     bool
	isMap    bool
	values   *shape
	// Arrays: the schema of their items; nil while none was seen, and
	// below InferMaxDepth.
	items *shape
}

func (n *shape) add(k valueKind) {
	n.kinds |= k
	if n.kinds&kindNumber != 0 {
		n.kinds &^= kindInteger
	}
}

// grow takes one node of the budget, reporting whether there was one.
func (in *Inferrer) grow() bool {
	if in.nodes >= InferMaxNodes {
		return false
	}
	in.nodes++
	return true
}

// merge merges the value v, at depth, into n.
func (in *Inferrer) merge(n *shape, v any, depth int) {
	switch v := v.(type) {
	case nil:
		n.add(kindNull)
	case bool:
		n.add(kindBoolean)
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			n.add(kindInteger)
		} else {
			n.add(kindNumber)
		}
	case string:
		f := formatOf(v)
		if n.kinds&kindString == 0 {
			n.format = f
		} else if n.format != f {
			n.format = ""
		}
		n.add(kindString)
	case []any:
		n.add(kindArray)
		if depth >= InferMaxDepth {
			return
		}
		for _, item := range v {
			if n.items == nil {
				if !in.grow() {
					return
				}
				n.items = &shape{}
			}
			in.merge(n.items, item, depth+1)
		}
	case map[string]any:
		in.mergeObject(n, v, depth)
	}
}

func (in *Inferrer) mergeObject(n *shape, obj map[string]any, depth int) {
	first := n.kinds&kindObject == 0
	n.add(kindObject)
	if depth >= InferMaxDepth {
		if len(obj) > 0 {
			n.open = true
		}
		return
	}
	keys := slices.Sorted(maps.Keys(obj))
	if !n.isMap {
		added := 0
		for _, k := range keys {
			if !fieldName(k) {
				added = InferMaxProperties + 1
				break
			}
			if _, ok := n.props[k]; !ok {
				added++
			}
		}
		if len(n.props)+added > InferMaxProperties {
			in.toMap(n)
		}
	}
	if n.isMap {
		for _, k := range keys {
			if n.values == nil {
				if !in.grow() {
					n.open = true
					return
				}
				n.values = &shape{}
			}
			in.merge(n.values, obj[k], depth+1)
		}
		return
	}
	for k := range n.required {
		if _, ok := obj[k]; !ok {
			delete(n.required, k)
		}
	}
	// Names first, then what is below them: when the node bound is
	// reached, an object's names are kept before its values' insides.
	for _, k := range keys {
		if n.props[k] != nil {
			continue
		}
		if !in.grow() {
			n.open = true
			continue
		}
		if n.props == nil {
			n.props = map[string]*shape{}
		}
		n.props[k] = &shape{}
		if first {
			if n.required == nil {
				n.required = map[string]bool{}
			}
			n.required[k] = true
		}
	}
	for _, k := range keys {
		if p := n.props[k]; p != nil {
			in.merge(p, obj[k], depth+1)
		}
	}
}

// toMap turns n's named properties into a map whose values have their
// merged schema.
func (in *Inferrer) toMap(n *shape) {
	vals := n.values
	for _, k := range slices.Sorted(maps.Keys(n.props)) {
		vals = mergeShapes(vals, n.props[k])
	}
	n.props, n.required, n.open, n.isMap, n.values = nil, nil, false, true, vals
	in.nodes = in.root.count()
}

// mergeShapes merges src into dst (either may be nil) and returns the
// result, which reuses their nodes.
func mergeShapes(dst, src *shape) *shape {
	switch {
	case src == nil:
		return dst
	case dst == nil:
		return src
	}
	if src.kinds&kindString != 0 {
		if dst.kinds&kindString == 0 {
			dst.format = src.format
		} else if dst.format != src.format {
			dst.format = ""
		}
	}
	if src.kinds&kindObject != 0 {
		if dst.kinds&kindObject == 0 {
			dst.props, dst.required, dst.open, dst.isMap, dst.values = src.props, src.required, src.open, src.isMap, src.values
		} else {
			mergeObjects(dst, src)
		}
	}
	dst.items = mergeShapes(dst.items, src.items)
	dst.add(src.kinds)
	return dst
}

// mergeObjects merges the object parts of two nodes that both describe
// objects.
func mergeObjects(dst, src *shape) {
	union := make(map[string]*shape, len(dst.props)+len(src.props))
	maps.Copy(union, dst.props)
	for k, p := range src.props {
		union[k] = mergeShapes(union[k], p)
	}
	if dst.isMap || src.isMap || len(union) > InferMaxProperties {
		vals := mergeShapes(dst.values, src.values)
		for _, k := range slices.Sorted(maps.Keys(union)) {
			vals = mergeShapes(vals, union[k])
		}
		dst.props, dst.required, dst.open, dst.isMap, dst.values = nil, nil, false, true, vals
		return
	}
	if len(union) > 0 {
		dst.props = union
	}
	for k := range dst.required {
		if !src.required[k] {
			delete(dst.required, k)
		}
	}
	dst.open = dst.open || src.open
}

// count returns the number of nodes in n's tree.
func (n *shape) count() int {
	if n == nil {
		return 0
	}
	c := 1 + n.items.count() + n.values.count()
	for _, p := range n.props {
		c += p.count()
	}
	return c
}

// render returns n as a JSON Schema, its keys in a fixed order.
func (n *shape) render() json.RawMessage {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *shape) write(b *bytes.Buffer) {
	var fields []string
	field := func(name string) {
		if len(fields) > 0 {
			b.WriteByte(',')
		}
		fields = append(fields, name)
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
	}
	b.WriteByte('{')
	var types []string
	for _, kn := range kindNames {
		if n.kinds&kn.k != 0 {
			types = append(types, strconv.Quote(kn.name))
		}
	}
	switch len(types) {
	case 0:
	case 1:
		field("type")
		b.WriteString(types[0])
	default:
		field("type")
		b.WriteString("[" + joinComma(types) + "]")
	}
	if n.kinds&kindString != 0 && n.format != "" {
		field("format")
		b.WriteString(strconv.Quote(n.format))
	}
	if n.kinds&kindObject != 0 {
		switch {
		case n.isMap:
			field("additionalProperties")
			if n.values == nil {
				b.WriteString("{}")
			} else {
				n.values.write(b)
			}
		default:
			if len(n.props) > 0 {
				field("properties")
				b.WriteByte('{')
				for i, k := range slices.Sorted(maps.Keys(n.props)) {
					if i > 0 {
						b.WriteByte(',')
					}
					writeString(b, k)
					b.WriteByte(':')
					n.props[k].write(b)
				}
				b.WriteByte('}')
			}
			if len(n.required) > 0 {
				field("required")
				b.WriteByte('[')
				for i, k := range slices.Sorted(maps.Keys(n.required)) {
					if i > 0 {
						b.WriteByte(',')
					}
					writeString(b, k)
				}
				b.WriteByte(']')
			}
			if n.open {
				field("additionalProperties")
				b.WriteString("true")
			}
		}
	}
	if n.kinds&kindArray != 0 && n.items != nil {
		field("items")
		n.items.write(b)
	}
	b.WriteByte('}')
}

func joinComma(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	return b.String()
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

// parse reads back a node that write wrote.
func (in *Inferrer) parse(v any, depth int) (*shape, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a schema is %T, not an object", v)
	}
	if depth > InferMaxDepth {
		return nil, fmt.Errorf("nested deeper than %d", InferMaxDepth)
	}
	in.nodes++
	n := &shape{}
	var names []any
	switch t := o["type"].(type) {
	case nil:
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return nil, fmt.Errorf("type is %T", t)
	}
	for _, name := range names {
		i := slices.IndexFunc(kindNames, func(kn kindName) bool { return kn.name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown type %v", name)
		}
		n.add(kindNames[i].k)
	}
	for k, val := range o {
		var err error
		switch k {
		case "type":
		case "format":
			f, _ := val.(string)
			n.format = f
		case "properties":
			props, ok := val.(map[string]any)
			if !ok {
				return nil, errors.New("properties is not an object")
			}
			n.props = make(map[string]*shape, len(props))
			for name, ps := range props {
				if n.props[name], err = in.parse(ps, depth+1); err != nil {
					return nil, err
				}
			}
		case "required":
			req, ok := val.([]any)
			if !ok {
				return nil, errors.New("required is not an array")
			}
			n.required = map[string]bool{}
			for _, r := range req {
				name, ok := r.(string)
				if !ok {
					return nil, errors.New("required holds a non-string")
				}
				n.required[name] = true
			}
		case "additionalProperties":
			switch ap := val.(type) {
			case bool:
				n.open = ap
			default:
				n.isMap = true
				if n.values, err = in.parse(ap, depth+1); err != nil {
					return nil, err
				}
			}
		case "items":
			if n.items, err = in.parse(val, depth+1); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unexpected keyword %q", k)
		}
	}
	if n.isMap && (len(n.props) > 0 || len(n.required) > 0) {
		return nil, errors.New("a map with named properties")
	}
	for name := range n.required {
		if n.props[name] == nil {
			return nil, fmt.Errorf("required %q is not a property", name)
		}
	}
	return n, nil
}

// fieldName reports whether an object key looks like the name of a
// field rather than data used as a key: short, a letter, _, $ or @ then
// letters, digits, _, -, $ or dots, and none of the formats.
func fieldName(k string) bool {
	if k == "" || len(k) > inferMaxName {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case i == 0 && c == '@':
		case i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return formatOf(k) == ""
}

// formatOf returns the JSON Schema format of s, or "" for none of those
// inferred.
func formatOf(s string) string {
	if len(s) < 6 || len(s) > inferMaxFormatLen {
		return ""
	}
	switch {
	case isDateTime(s):
		return "date-time"
	case len(s) == 10 && isDate(s):
		return "date"
	case isUUID(s):
		return "uuid"
	case isEmail(s):
		return "email"
	case isURI(s):
		return "uri"
	}
	return ""
}

func isDateTime(s string) bool {
	if len(s) < 20 || s[10] != 'T' && s[10] != 't' {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func isDate(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func isEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at < 1 || at > 64 || len(s) > 254 {
		return false
	}
	domain := s[at+1:]
	dot := strings.IndexByte(domain, '.')
	if dot < 1 || dot == len(domain)-1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '@' && i != at || c == ':' || c == '/' || c == '<' || c == '>' || c == '"' || c == ',' {
			return false
		}
	}
	return true
}

// isURI reports whether s is scheme://rest with no white space.
func isURI(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			i++
			continue
		}
		break
	}
	if i == 0 || len(s) < i+4 || s[i:i+3] != "://" {
		return false
	}
	for j := i + 3; j < len(s); j++ {
		if c := s[j]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
