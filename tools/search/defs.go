package search

import (
	"encoding/json"
	"strings"

	"github.com/codecell/codecell/tools"
)

// schemaDocs finds the words of tools' schemas whose definitions are
// shared (tools.Definitions) as if each schema were its standalone
// document (Tool.InputDocument), without making those documents: each
// shared definition is decoded once for all the tools that reach it.
// Stripe's result schemas as standalone documents are 210 MB, whose
// decoding was most of the index's making.
type schemaDocs struct {
	defs map[*tools.Definitions]map[string]any // decoded definitions; nil for one that does not decode
}

func newSchemaDocs() *schemaDocs {
	return &schemaDocs{defs: map[*tools.Definitions]map[string]any{}}
}

// words are the words of root with defs, those of schemaText of the
// standalone document.
func (sd *schemaDocs) words(root json.RawMessage, defs *tools.Definitions) schemaWords {
	if defs == nil || len(root) == 0 {
		return schemaText(root)
	}
	var doc any
	if err := json.Unmarshal(root, &doc); err != nil {
		return schemaWords{}
	}
	return schemaWalk(doc, func(ref string) any {
		rest, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return resolve(doc, ref)
		}
		name, below, _ := strings.Cut(rest, "/")
		def := sd.def(defs, name)
		if below == "" || def == nil {
			return def
		}
		return resolve(def, "#/"+below)
	})
}

// def returns definition name of defs, decoded once.
func (sd *schemaDocs) def(defs *tools.Definitions, name string) any {
	m := sd.defs[defs]
	if m == nil {
		m = map[string]any{}
		sd.defs[defs] = m
	}
	if v, ok := m[name]; ok {
		return v
	}
	var v any
	if raw, ok := defs.Get(name); ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			v = nil
		}
	}
	m[name] = v
	return v
}
