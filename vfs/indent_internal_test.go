package vfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestIndentJSON: within maxIndentDepth, indentJSON writes what
// json.Indent writes; deeper, it stays compact, so that a schema nested a
// thousand deep does not make a page of quadratic size.
func TestIndentJSON(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{}`, `[]`, `null`, `{"a":1}`, `{"type":"object","properties":{"a":{"type":"string","enum":["x","y\"z"]},"b":{"type":"array","items":{}}},"required":[]}`,
		`[1,[2,[3,{"k":"v:,{}[]"}]]]`, `{ "spaced" : [ 1 , 2 ] }`,
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(raw), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(json.RawMessage(raw), ""); got != want.String() && !strings.Contains(raw, " ") {
			t.Errorf("indentJSON(%s) =\n%s\nwant\n%s", raw, got, want.String())
		}
		if got := indentJSON(json.RawMessage(raw), ""); !json.Valid([]byte(got)) {
			t.Errorf("indentJSON(%s) is not JSON: %s", raw, got)
		}
	}
	deep := strings.Repeat(`{"properties":{"a":`, 1000) + `{}` + strings.Repeat(`}}`, 1000)
	got := indentJSON(json.RawMessage(deep), "")
	if !json.Valid([]byte(got)) || len(got) > 2*len(deep) {
		t.Errorf("a schema 1000 deep: %d bytes from %d (valid %v)", len(got), len(deep), json.Valid([]byte(got)))
	}
}

// TestHugeSchemaRendering (issue 19): a tool whose input schema has
// 20,000 properties, or nests 1,000 levels deep, made a .d.ts of 1.4 MB
// and a .md of 10 MB. Both are bounded now: the declaration shows at most
// maxRenderedProperties properties and says what it left out, the page at
// most maxBlock of the schema.
func TestHugeSchemaRendering(t *testing.T) {
	t.Parallel()
	var props strings.Builder
	for i := range 20000 {
		if i > 0 {
			props.WriteByte(',')
		}
		fmt.Fprintf(&props, `"p%d":{"type":"string","description":"Property %d of a very wide schema."}`, i, i)
	}
	deep := strings.Repeat(`{"type":"object","properties":{"next":`, 1000) + `{"type":"string"}` + strings.Repeat(`}}`, 1000)
	for _, tt := range []struct {
		name, schema string
	}{
		{"wide", `{"type":"object","properties":{` + props.String() + `}}`},
		{"deep", deep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool := &tools.Tool{Name: "x." + tt.name, Summary: "A huge schema.", InputSchema: json.RawMessage(tt.schema)}
			d, err := Declaration(tool)
			if err != nil {
				t.Fatal(err)
			}
			if len(d) > 256<<10 {
				t.Errorf(".d.ts: %d bytes", len(d))
			}
			if tt.name == "wide" && !strings.Contains(d, "18000 more properties left out") {
				t.Errorf(".d.ts does not say what it left out:\n%.300s", d[len(d)-300:])
			}
			s := &snapshot{byName: map[string]*category{}, tools: map[string]*tools.Tool{}}
			page := renderFull(s, tool)
			if len(page) > 2*maxBlock {
				t.Errorf(".md: %d bytes", len(page))
			}
		})
	}
}
