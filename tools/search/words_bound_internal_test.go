package search

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestSchemaWordsAreBounded (issue 19, attack15 I2): the words a tool's
// schema gives the index are taken for every tool that reaches a shared
// definition; they are at most maxSchemaWords bytes, however much the
// definition says, and a description past the bound is cut on a
// character.
func TestSchemaWordsAreBounded(t *testing.T) {
	props := map[string]any{}
	for i := range 200 {
		props[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "string", "description": strings.Repeat(fmt.Sprintf("wörd%d ", i), 2000)}
	}
	doc, _ := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"body": map[string]any{"$ref": "#/$defs/S"}},
		"$defs":      map[string]any{"S": map[string]any{"type": "object", "properties": props}},
	})
	w := schemaText(doc)
	n := 0
	for _, list := range [][]string{w.names, w.descriptions, w.values} {
		for _, s := range list {
			n += len(s)
			if strings.ToValidUTF8(s, "") != s {
				t.Errorf("a word cut inside a character: %.40q", s[max(len(s)-40, 0):])
			}
		}
	}
	if n > maxSchemaWords || n < maxSchemaWords/2 {
		t.Errorf("%d bytes of words from a schema of %d bytes, want at most %d", n, len(doc), maxSchemaWords)
	}
}
