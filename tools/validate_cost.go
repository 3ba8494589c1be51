package tools

import (
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of the work of validating one document: the times a subschema
// is applied to a value of it. The validator applies every branch of
// anyOf and oneOf, and follows $ref wherever it points, so a schema of a
// few hundred bytes whose anyOf branches refer to the same definition,
// level after level, applies 2^n subschemas to one value: 21 levels kept
// the server busy for minutes past the run's deadline. Before
// validating, codecell counts the steps the validator could take (an
// upper bound, see cost) and refuses a document past
// MaxValidationSteps + ValidationStepsPerValue × its values: work that
// grows with the document, as a document's size is bounded elsewhere,
// not with the schema's shape. A value of an ordinary schema takes 2 to
// 10 steps.
const (
	MaxValidationSteps      = 100_000
	ValidationStepsPerValue = 32
)

// tooCostly is the problem of a document whose validation would take
// more than limit steps.
func tooCostly(limit int) string {
	return fmt.Sprintf("validating this value against the schema would take more than %d steps (anyOf, oneOf or $ref applying the same subschemas over and over); simplify the schema or send a smaller value", limit)
}

// anchors are the subschemas a $dynamicRef or $recursiveRef of a schema
// may resolve to, by the scope a value is validated in.
type anchors struct {
	dynamic   map[string][]*jsonschema.Schema // by $dynamicAnchor
	recursive []*jsonschema.Schema            // with $recursiveAnchor: true
}

// unfolded returns the number of subschemas of root's tree with every
// reference followed (the paths from root to any subschema), up to
// maxUnfolded; maxUnfolded for a schema that refers to itself. A value
// of a document meets at most that many subschemas, so a document of n
// values against such a schema takes at most unfolded × n steps.
func unfolded(root *jsonschema.Schema, a *anchors) int {
	memo := map[*jsonschema.Schema]int{}
	open := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema) int
	walk = func(s *jsonschema.Schema) int {
		if s == nil {
			return 0
		}
		if n, ok := memo[s]; ok {
			return n
		}
		if open[s] {
			return maxUnfolded
		}
		open[s] = true
		defer delete(open, s)
		n := 1
		for _, c := range subschemas(s, a) {
			n = min(n+walk(c), maxUnfolded)
			if n == maxUnfolded {
				break
			}
		}
		memo[s] = n
		return n
	}
	return walk(root)
}

// maxUnfolded is where unfolded stops counting.
const maxUnfolded = 1 << 40

// subschemas returns every subschema s applies, in place or to a part of
// the value.
func subschemas(s *jsonschema.Schema, a *anchors) []*jsonschema.Schema {
	out := inPlace(s, a)
	out = append(out, s.PropertyNames, schemaOf(s.AdditionalProperties), s.UnevaluatedProperties,
		s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
	for _, c := range s.Properties {
		out = append(out, c)
	}
	for _, c := range s.PatternProperties {
		out = append(out, c)
	}
	out = append(out, s.PrefixItems...)
	out = append(out, itemSchemas(s.Items)...)
	return append(out, itemSchemas(s.AdditionalItems)...)
}

// anchorsOf walks every subschema root reaches and collects those a
// dynamic reference may resolve to.
func anchorsOf(root *jsonschema.Schema) *anchors {
	a := &anchors{dynamic: map[string][]*jsonschema.Schema{}}
	seen := map[*jsonschema.Schema]bool{}
	stack := []*jsonschema.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == nil || seen[s] {
			continue
		}
		seen[s] = true
		if s.DynamicAnchor != "" {
			a.dynamic[s.DynamicAnchor] = append(a.dynamic[s.DynamicAnchor], s)
		}
		if s.RecursiveAnchor {
			a.recursive = append(a.recursive, s)
		}
		stack = append(stack, subschemas(s, nil)...)
	}
	return a
}

// inPlace returns the subschemas the validator applies to the same value
// as s: references (a dynamic one to every schema it may resolve to, when
// a is not nil), combinators, conditionals, dependent schemas.
func inPlace(s *jsonschema.Schema, a *anchors) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, c := range s.DependentSchemas {
		out = append(out, c)
	}
	for _, d := range s.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok {
			out = append(out, c)
		}
	}
	if s.RecursiveRef != nil {
		out = append(out, s.RecursiveRef)
		if a != nil && s.RecursiveRef.RecursiveAnchor {
			out = append(out, a.recursive...)
		}
	}
	if d := s.DynamicRef; d != nil {
		out = append(out, d.Ref)
		if a != nil && d.Anchor != "" {
			out = append(out, a.dynamic[d.Anchor]...)
		}
	}
	return out
}

// itemSchemas returns the schemas of items or additionalItems (nil, a
// boolean, a schema or a list of schemas).
func itemSchemas(v any) []*jsonschema.Schema {
	switch v := v.(type) {
	case *jsonschema.Schema:
		return []*jsonschema.Schema{v}
	case []*jsonschema.Schema:
		return v
	}
	return nil
}

// value is a node of the document being validated, with an identity the
// cost can be remembered by.
type value struct {
	typ   string // the JSON type: object, array, string, number, boolean, null
	props []prop
	items []*value
}

type prop struct {
	name, val *value // the name as a string value, for propertyNames
	key       string
}

// valueOf returns the tree of v and adds the number of its values to
// count.
func valueOf(v any, count *int) *value {
	*count++
	switch v := v.(type) {
	case map[string]any:
		n := &value{typ: "object", props: make([]prop, 0, len(v))}
		for k, pv := range v {
			n.props = append(n.props, prop{key: k, name: &value{typ: "string"}, val: valueOf(pv, count)})
		}
		return n
	case []any:
		n := &value{typ: "array", items: make([]*value, len(v))}
		for i, iv := range v {
			n.items[i] = valueOf(iv, count)
		}
		return n
	case string:
		return &value{typ: "string"}
	case bool:
		return &value{typ: "boolean"}
	case nil:
		return &value{typ: "null"}
	}
	return &value{typ: "number"}
}

// costing counts the steps validating one document may take.
type costing struct {
	limit int
	a     *anchors
	memo  map[costKey]int
	open  map[costKey]bool
	pairs int // distinct (subschema, value) pairs costed: the work done
	over  bool
}

type costKey struct {
	s *jsonschema.Schema
	v *value
}

// cost returns an upper bound of the times the validator applies a
// subschema while it validates v against s, up to c.limit+1.
// Each (subschema, value) pair is costed once; the work is bounded by
// the bound, whatever the schema and the document.
func (c *costing) cost(s *jsonschema.Schema, v *value) int {
	if s == nil || c.over {
		return 0
	}
	if s.Bool != nil {
		return 1
	}
	k := costKey{s, v}
	if n, ok := c.memo[k]; ok {
		return n
	}
	if c.open[k] {
		return 1 // the validator stops at a cycle of references
	}
	c.pairs++
	if c.pairs > c.limit {
		c.over = true
		return c.limit + 1
	}
	total := 1
	add := func(n int) bool {
		total += n
		if total > c.limit {
			c.over = true
		}
		return !c.over
	}
	if s.Types != nil && !s.Types.IsEmpty() && !typeMatches(s.Types.ToStrings(), v) {
		c.memo[k] = total // the validator stops at the type
		return total
	}
	c.open[k] = true
	defer delete(c.open, k)
	for _, sub := range inPlace(s, c.a) {
		if !add(c.cost(sub, v)) {
			return total
		}
	}
	switch v.typ {
	case "object":
		for _, p := range v.props {
			subs := []*jsonschema.Schema{s.Properties[p.key], schemaOf(s.AdditionalProperties), s.UnevaluatedProperties}
			for re, sub := range s.PatternProperties {
				if re.MatchString(p.key) {
					subs = append(subs, sub)
				}
			}
			for _, sub := range subs {
				if !add(c.cost(sub, p.val)) {
					return total
				}
			}
			if !add(c.cost(s.PropertyNames, p.name)) {
				return total
			}
		}
	case "array":
		items := itemSchemas(s.Items)
		for i, item := range v.items {
			subs := []*jsonschema.Schema{s.Items2020, s.Contains, s.UnevaluatedItems}
			if i < len(s.PrefixItems) {
				subs = append(subs, s.PrefixItems[i])
			}
			if len(items) == 1 {
				subs = append(subs, items[0])
			} else if i < len(items) {
				subs = append(subs, items[i])
			}
			subs = append(subs, itemSchemas(s.AdditionalItems)...)
			for _, sub := range subs {
				if !add(c.cost(sub, item)) {
					return total
				}
			}
		}
	}
	c.memo[k] = total
	return total
}

// typeMatches reports whether v is of one of the types. A number counts
// as an integer: the bound may be above the validator's steps, never
// below.
func typeMatches(types []string, v *value) bool {
	return slices.Contains(types, v.typ) || v.typ == "number" && slices.Contains(types, "integer")
}

// schemaOf returns the schema of additionalProperties (nil, a boolean or
// a schema), or nil.
func schemaOf(v any) *jsonschema.Schema {
	s, _ := v.(*jsonschema.Schema)
	return s
}

// costly returns, when validating doc (as jsonschema.UnmarshalJSON makes
// it, from size bytes of JSON) against the schema may take more steps
// than the bounds allow, the problem that says so. A schema that refers
// to itself nowhere and unfolds small enough needs no count: a document
// has at most one value per byte.
func (s *Schema) costly(doc any, size int) (problem string, ok bool) {
	s.prepOnce.Do(func() {
		s.anchors = anchorsOf(s.s)
		s.unfolded = unfolded(s.s, s.anchors)
	})
	if s.unfolded < maxUnfolded && s.unfolded*size <= MaxValidationSteps {
		return "", false
	}
	values := 0
	v := valueOf(doc, &values)
	c := &costing{limit: MaxValidationSteps + ValidationStepsPerValue*values, a: s.anchors, memo: map[costKey]int{}, open: map[costKey]bool{}}
	if c.cost(s.s, v) > c.limit || c.over {
		return tooCostly(c.limit), true
	}
	return "", false
}
