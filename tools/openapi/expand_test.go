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
		// attack17 K4: a JSON-like key's value may follow its colon.
		"after a quoted key's colon": "x: {\"k\":&a 1, \"l\": *a}\n",
		"after a single-quoted key":  "x: {'k':&a 1, 'l': *a}\n",
		// yaml.v3 breaks lines at NEL and the Unicode line separators.
		"after a next line":      "x: [\u0085&a 1, *a]\n",
		"after a line separator": "x: [\u2028&a 1, *a]\n",
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

// sharedParameterDoc is a JSON description of n GET operations that each
// take the one parameter of components/parameters, by $ref, whose
// description, example or schema is as given.
func sharedParameterDoc(param string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"openapi":"3.0.3","info":{"title":"evil","version":"1"},"components":{"parameters":{"P":%s}},"paths":{`, param)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/op%d":{"get":{"operationId":"op%d","parameters":[{"$ref":"#/components/parameters/P"}],"responses":{"200":{"description":"ok"}}}}`, i, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestCopiesAreBounded (issue 19, attack15 I2): what is not a component
// schema is copied into every tool that uses it — a parameter of
// components/parameters with a 1 MiB description, used by a hundred
// operations, was 100 MiB of schemas, kept. A description copied into a
// schema is cut (an example past the same length left out), and what a
// document's tools hold in all is bounded by its bytes (at least 16 MiB):
// past it, the operations left out are named, saying why.
func TestCopiesAreBounded(t *testing.T) {
	long := strings.Repeat("A", 1<<20)
	enum := `"` + strings.Repeat(`a","`, 1<<18) + `a"`
	for _, c := range []struct {
		name    string
		param   string
		all     bool  // every operation loads
		maxHeld int64 // bytes the tools' schemas hold at most
	}{
		{"description", `{"name":"q","in":"query","schema":{"type":"string"},"description":"` + long + `"}`, true, 8 << 20},
		{"schema's description", `{"name":"q","in":"query","schema":{"type":"string","description":"` + long + `"}}`, true, 8 << 20},
		{"example", `{"name":"q","in":"query","schema":{"type":"string"},"example":"` + long + `"}`, true, 1 << 20},
		{"schema's example", `{"name":"q","in":"query","schema":{"type":"string","example":"` + long + `"}}`, true, 1 << 20},
		{"enum", `{"name":"q","in":"query","schema":{"type":"string","enum":[` + enum + `]}}`, false, 17 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := sharedParameterDoc(c.param, 100)
			doc, err := openapi.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			s, err := openapi.New(openapi.Config{Spec: "t.json", BaseURL: "https://api.example.invalid"}, openapi.Options{Name: "evil"})
			if err != nil {
				t.Fatal(err)
			}
			reg := tools.NewRegistry()
			rep, err := s.OpenDocument(reg, doc)
			if err != nil {
				t.Fatal(err)
			}
			var held int64
			for _, tl := range reg.List() {
				held += int64(len(tl.InputSchema) + len(tl.OutputSchema) + len(tl.Description) + len(tl.Notes))
			}
			t.Logf("%d-byte document: %d tools holding %d bytes, %d problems", len(data), rep.Tools, held, len(rep.Problems))
			if held > c.maxHeld {
				t.Errorf("the tools of a %d-byte document hold %d bytes", len(data), held)
			}
			if c.all {
				if rep.Tools != 100 || len(rep.Problems) != 0 {
					t.Errorf("%d tools, problems %v", rep.Tools, rep.Problems)
				}
				return
			}
			if rep.Tools == 0 || rep.Tools >= 100 || rep.Tools+len(rep.Problems) != 100 {
				t.Fatalf("%d tools, %d problems", rep.Tools, len(rep.Problems))
			}
			p := rep.Problems[len(rep.Problems)-1]
			if !strings.Contains(p.Operation, "GET /op") || !strings.Contains(p.Message, "would hold more than") {
				t.Errorf("problem %v", p)
			}
		})
	}
}
