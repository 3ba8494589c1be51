package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// On a server of several principals, a shape learned of one principal's
// results would show the others what that principal's data used as keys:
// the name of a record looked up, a file, a person's handle (the
// inferrer keeps keys that look like field names). And the names one
// principal's results bring would reach every other principal's model
// through the tool's page and .d.ts. So a learned shape shows a property
// name only once the results of ShapeQuorum principals held it; the rest
// of an object is left open (additionalProperties), as for an object
// whose names the inferrer did not keep.

// shapeMaxNames bounds the property names whose principals are counted,
// per tool; a name past it is never shown.
const shapeMaxNames = 512

// principalKey is what the store keeps of a principal that held a name:
// not its name.
func principalKey(principal string) string {
	h := sha256.Sum256([]byte("codecell learned shape\x00" + principal))
	return hex.EncodeToString(h[:8])
}

// see notes that the results of the principal key held name; it reports
// whether that is new.
func (st *learning) see(name, key string) bool {
	ps := st.seen[name]
	if ps == nil {
		if len(st.seen) >= shapeMaxNames {
			return false
		}
		if st.seen == nil {
			st.seen = map[string]map[string]bool{}
		}
		ps = map[string]bool{}
		st.seen[name] = ps
	}
	if ps[key] {
		return false
	}
	ps[key] = true
	return true
}

// seeAll notes every object key of the JSON value v as held by the
// principal key; it reports whether any is new.
func (st *learning) seeAll(v json.RawMessage, key string) bool {
	var val any
	if json.Unmarshal(v, &val) != nil {
		return false
	}
	added := false
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if st.see(k, key) {
					added = true
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(val)
	return added
}

// seenRecord is seen as the store keeps it.
func (st *learning) seenRecord() map[string][]string {
	if len(st.seen) == 0 {
		return nil
	}
	out := make(map[string][]string, len(st.seen))
	for name, ps := range st.seen {
		out[name] = slices.Sorted(maps.Keys(ps))
	}
	return out
}

// agreedShape is the inferred schema with only the property names that
// the results of quorum principals held; whole reports that none was
// left out. A quorum of one shows the schema as it is.
func (st *learning) agreedShape(schema json.RawMessage, quorum int) (_ json.RawMessage, whole bool) {
	if quorum <= 1 {
		return schema, true
	}
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return json.RawMessage(`{}`), false
	}
	whole = true
	var prune func(any)
	prune = func(v any) {
		node, ok := v.(map[string]any)
		if !ok {
			return
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for name, sub := range props {
				if len(st.seen[name]) >= quorum {
					prune(sub)
					continue
				}
				delete(props, name)
				whole = false
				node["additionalProperties"] = true
				if req, ok := node["required"].([]any); ok {
					node["required"] = slices.DeleteFunc(req, func(r any) bool { return r == name })
				}
			}
			if len(props) == 0 {
				delete(node, "properties")
			}
			if req, ok := node["required"].([]any); ok && len(req) == 0 {
				delete(node, "required")
			}
		}
		if ap, ok := node["additionalProperties"].(map[string]any); ok {
			prune(ap)
		}
		prune(node["items"])
	}
	prune(root)
	if whole {
		return schema, true
	}
	out, err := json.Marshal(root)
	if err != nil {
		return json.RawMessage(`{}`), false
	}
	return out, false
}
