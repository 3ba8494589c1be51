package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// StoredFields says where the results of a tool that returns stored data
// (a memory, a workspace file, a cached value, a skill's description)
// carry what a run's data flow must know of that data. Only the server's
// own store tools set it (Tool.Stored): the sources of a result are read
// there and nowhere else — not from a "provenance" key of the stored
// data itself (a memory's metadata, a cached value), nor from any other
// tool's result — so that no data can name its own sources (issue 19,
// attack21 P1: util.echo's arguments and a memory's metadata named 64
// made-up sources, which cut crm's off).
type StoredFields struct {
	// Provenance are the fields that hold the sources of the stored data
	// a result shows, each an array of source names: paths of object
	// keys from the result's top joined by "/", "*" standing for every
	// element of an array ("provenance", "results/*/provenance").
	// ProvenanceFields finds them in an output schema.
	Provenance []string
	// Base64 are the fields, paths as Provenance's, that hold stored
	// data encoded in base64 when the object that holds the field says
	// "encoding": "base64" (workspace.read's data): the flow knows the
	// decoded bytes too, under the result's sources, as it knows the
	// text of a file read as text (attack21 P2).
	Base64 []string
}

// StoredData is what a result of a tool with StoredFields carries for
// the data flow.
type StoredData struct {
	// Sources are the names in its provenance fields, each once.
	Sources []string
	// Decoded are the decoded bytes of its base64 fields.
	Decoded [][]byte
}

// Read returns what out, a result of the tool, carries in the fields s
// names. A result that is not JSON carries nothing; a provenance field
// that is not an array of strings names no source, and a base64 field
// that is not valid base64 is left as it is.
func (s *StoredFields) Read(out json.RawMessage) StoredData {
	var d StoredData
	if s == nil || len(s.Provenance) == 0 && len(s.Base64) == 0 {
		return d
	}
	// Looked for by its tail first, as the flow's observation of every
	// result did: a search anchored on a quote, the commonest byte of
	// JSON, took 0.8 ms of a 1 MB result, 8× as long.
	hasProv := len(s.Provenance) > 0 && bytes.Contains(out, []byte(`venance"`))
	hasB64 := len(s.Base64) > 0 && bytes.Contains(out, []byte(`"base64"`))
	if !hasProv && !hasB64 {
		return d
	}
	var v any
	if json.Unmarshal(out, &v) != nil {
		return d
	}
	for _, p := range s.Provenance {
		if !hasProv {
			break
		}
		walkPath(v, splitPath(p), func(x any) {
			names, _ := x.([]any)
			for _, n := range names {
				if n, ok := n.(string); ok && !slices.Contains(d.Sources, n) {
					d.Sources = append(d.Sources, n)
				}
			}
		})
	}
	for _, p := range s.Base64 {
		if !hasB64 {
			break
		}
		keys := splitPath(p)
		walkPath(v, keys[:len(keys)-1], func(x any) {
			obj, _ := x.(map[string]any)
			text, _ := obj[keys[len(keys)-1]].(string)
			if obj["encoding"] != "base64" || text == "" {
				return
			}
			if b, err := base64.StdEncoding.DecodeString(text); err == nil {
				d.Decoded = append(d.Decoded, b)
			}
		})
	}
	return d
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// walkPath calls f with each value at the path keys of v.
func walkPath(v any, keys []string, f func(any)) {
	if len(keys) == 0 {
		f(v)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if e, ok := x[keys[0]]; ok && keys[0] != "*" {
			walkPath(e, keys[1:], f)
		}
	case []any:
		if keys[0] == "*" {
			for _, e := range x {
				walkPath(e, keys[1:], f)
			}
		}
	}
}

// ProvenanceFields returns the paths, as StoredFields.Provenance takes
// them, of the properties named "provenance" that an output schema
// declares: under "properties", "items" ("*"), and the subschemas of
// "allOf", "anyOf" and "oneOf". An object that declares no properties
// (a memory's metadata, a cached value) is data, never looked into.
func ProvenanceFields(schema json.RawMessage) []string {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return nil
	}
	var out []string
	var walk func(s any, at []string)
	walk = func(s any, at []string) {
		m, ok := s.(map[string]any)
		if !ok || len(at) > 16 {
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k == "provenance" {
					if p := strings.Join(append(slices.Clone(at), k), "/"); !slices.Contains(out, p) {
						out = append(out, p)
					}
					continue
				}
				walk(props[k], append(slices.Clone(at), k))
			}
		}
		if items, ok := m["items"]; ok {
			walk(items, append(slices.Clone(at), "*"))
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			subs, _ := m[k].([]any)
			for _, sub := range subs {
				walk(sub, at)
			}
		}
	}
	walk(root, nil)
	return out
}
