package search

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// schemaWords are the property names and descriptions found in a schema.
type schemaWords struct {
	names        []string
	descriptions []string
	// values are the string values of the enums of its top-level
	// properties (Zoom's meeting status "action": end, recover).
	values []string
	// self is set when a top-level property that names a user accepts
	// "me" for the caller (Zoom's userId, Asana's user_gid: "pass `me`").
	self bool
}

// meValue finds a description saying a property takes "me" as a value.
var meValue = regexp.MustCompile("[`'\"]me[`'\"]")

// schemaText collects property names and descriptions from a JSON
// Schema, following nested objects, arrays, combinators and local
// definitions, a few levels deep.
func schemaText(raw json.RawMessage) schemaWords {
	var w schemaWords
	if len(raw) == 0 {
		return w
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return w
	}
	return schemaWalk(root, func(ref string) any { return resolve(root, ref) })
}

// maxSchemaWords bounds the bytes of names, descriptions and values
// the index takes from one schema of a tool. What a tool's schema
// reaches through shared definitions is held once, but its words are
// taken for every tool that reaches it: a definition of a megabyte of
// descriptions, reached by each of a document's thousand operations,
// was a gigabyte of terms (issue 19, attack15 I2). The most a tool of
// the thirteen APIs of make bench-search takes is 32 KB (Zoom's).
const maxSchemaWords = 128 << 10

// schemaWalk collects the words of a decoded schema as schemaText does,
// following a "$ref" to what resolveRef gives, at most maxSchemaWords
// bytes of them.
func schemaWalk(root any, resolveRef func(string) any) schemaWords {
	var w schemaWords
	seen := map[string]bool{}
	left := maxSchemaWords
	// take is s, cut to what is left of the bound, and whether any was.
	take := func(s string) (string, bool) {
		if left <= 0 {
			return "", false
		}
		if len(s) > left {
			cut := left
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut]
		}
		left -= len(s) + 1
		return s, true
	}
	var walk func(s any, depth int)
	walk = func(s any, depth int) {
		m, ok := s.(map[string]any)
		if !ok || depth > 4 || left <= 0 {
			return
		}
		if ref, ok := m["$ref"].(string); ok && !seen[ref] {
			seen[ref] = true
			walk(resolveRef(ref), depth+1)
		}
		if props, ok := m["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if n, ok := take(k); ok {
					w.names = append(w.names, n)
				}
				if pm, ok := props[k].(map[string]any); ok {
					d, _ := pm["description"].(string)
					if d != "" {
						if t, ok := take(d); ok {
							w.descriptions = append(w.descriptions, t)
						}
					}
					if depth <= 1 {
						// What an operation's own parameters say it does:
						// the values it takes, and whether the user it
						// acts for may be the caller.
						if vs, ok := pm["enum"].([]any); ok {
							for _, v := range vs {
								if s, ok := v.(string); ok {
									if t, ok := take(s); ok {
										w.values = append(w.values, t)
									}
								}
							}
						}
						if n := strings.ToLower(k); (strings.Contains(n, "user") || strings.Contains(n, "member")) && meValue.MatchString(d) {
							w.self = true
						}
					}
				}
				walk(props[k], depth+1)
			}
		}
		for _, k := range []string{"items", "additionalProperties"} {
			walk(m[k], depth+1)
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf", "prefixItems"} {
			if arr, ok := m[k].([]any); ok {
				for _, e := range arr {
					walk(e, depth+1)
				}
			}
		}
	}
	walk(root, 0)
	return w
}

// resolve follows a local "#/a/b" reference; anything else gives nil.
func resolve(root any, ref string) any {
	if len(ref) < 2 || ref[:2] != "#/" {
		return nil
	}
	cur := root
	start := 2
	for i := 2; i <= len(ref); i++ {
		if i == len(ref) || ref[i] == '/' {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[ref[start:i]]
			start = i + 1
		}
	}
	return cur
}
