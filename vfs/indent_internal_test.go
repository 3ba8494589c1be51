package vfs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
