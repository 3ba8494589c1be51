package openapi_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// yamlAliasDoc is a YAML description of one operation with one string of
// size bytes under an anchor and n aliases of it.
func yamlAliasDoc(size, n int) []byte {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: evil, version: '1'}\npaths:\n  /x:\n    get:\n      operationId: getx\n      responses: {'200': {description: ok}}\n")
	fmt.Fprintf(&b, "x-pad: &s \"%s\"\n", strings.Repeat("A", size))
	b.WriteString("x-bomb: [")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*s")
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// TestYAMLAliasesAreBounded (issue 19, attack15 I1): a YAML alias is a
// whole copy of its anchor's value in the JSON the document becomes, and
// yaml.v3's guard counts nodes, not bytes: 1 MB of YAML with a hundred
// aliases of a 1 MiB string became 100 MiB of JSON (474 MiB allocated).
// The bytes aliases add are counted before the document is converted and
// refused past four times the document's own, the error naming aliases,
// having allocated a few MiB. Aliases that repeat a little load as the
// same document written out.
func TestYAMLAliasesAreBounded(t *testing.T) {
	data := yamlAliasDoc(1<<20, 100)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := openapi.Parse(data)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, openapi.ErrDocument) || !strings.Contains(err.Error(), "YAML aliases (100 of them)") {
		t.Errorf("a %d-byte document of 100 aliases of 1 MiB: %v", len(data), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 48<<20 {
		t.Errorf("refusing a %d-byte document allocated %d MiB", len(data), alloc>>20)
	}

	for name, doc := range map[string]string{
		"after a break": "x: [\n&a 1, *a]\n",
		"in a list":     "x: [&a 1, *a]\n",
		"after a dash":  "x:\n  - &a 1\n  - *a\n",
		"after a tag":   "x: !!str &a 1\ny: *a\n",
	} {
		if !strings.Contains(doc, "&a") {
			t.Fatal(name)
		}
		// Each is a value of many aliases of a long string once the
		// document is made large enough.
		big := strings.Replace(doc, "1", `"`+strings.Repeat("A", 5<<20)+`"`, 1)
		big = strings.ReplaceAll(big, "*a", "["+strings.Repeat("*a, ", 8)+"*a]")
		if _, err := openapi.Parse([]byte("openapi: 3.0.3\n" + big)); err == nil || !strings.Contains(err.Error(), "YAML aliases") {
			t.Errorf("%s: %v", name, err)
		}
	}

	cycle := "openapi: 3.0.3\nx: &a\n  b: *a\n"
	if _, err := openapi.Parse([]byte(cycle)); !errors.Is(err, openapi.ErrDocument) {
		t.Errorf("an anchor holding its own alias: %v", err)
	}

	// Parameters shared through an anchor load, as the same document
	// written out in JSON.
	yamlDoc := `openapi: 3.0.3
info: {title: shared, version: '1'}
paths:
  /a:
    get:
      operationId: a
      parameters: &params
        - {name: q, in: query, description: What to look for, schema: {type: string}}
      responses: &ok {'200': {description: ok}}
  /b:
    get:
      operationId: b
      parameters: *params
      responses: *ok
`
	jsonDoc := `{"openapi":"3.0.3","info":{"title":"shared","version":"1"},"paths":{
"/a":{"get":{"operationId":"a","parameters":[{"name":"q","in":"query","description":"What to look for","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/b":{"get":{"operationId":"b","parameters":[{"name":"q","in":"query","description":"What to look for","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`
	y := toolsOf(t, []byte(yamlDoc))
	j := toolsOf(t, []byte(jsonDoc))
	if y != j || !strings.Contains(y, "What to look for") {
		t.Errorf("from YAML with aliases:\n%s\nfrom JSON:\n%s", y, j)
	}
}

// toolsOf loads a document and writes out the tools it makes: each
// one's name, description and schemas as standalone documents.
func toolsOf(tb testing.TB, data []byte) string {
	tb.Helper()
	doc, err := openapi.Parse(data)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := openapi.New(openapi.Config{Spec: "t.json", BaseURL: "https://api.example.invalid"}, openapi.Options{Name: "t"})
	if err != nil {
		tb.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for _, tl := range reg.List() {
		fmt.Fprintf(&b, "%s %q\n%s\n%s\n", tl.Name, tl.Description, tl.InputDocument(), tl.OutputDocument())
	}
	return b.String()
}
