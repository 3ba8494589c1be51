package openapi_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

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

// encode writes s in UTF-16 or UTF-32 (unit 2 or 4 bytes), little or
// big endian, with a byte order mark or without.
func encode(s string, unit int, bigEndian, bom bool) []byte {
	var b []byte
	put := func(v uint32) {
		for i := range unit {
			shift := 8 * i
			if bigEndian {
				shift = 8 * (unit - 1 - i)
			}
			b = append(b, byte(v>>shift))
		}
	}
	if bom {
		put(0xfeff)
	}
	for _, r := range s {
		if unit == 2 && r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			put(uint32(r1))
			put(uint32(r2))
			continue
		}
		put(uint32(r))
	}
	return b
}

// TestYAMLInEveryEncoding (issue 19, attack22 P1): the alias count once
// ran only on text whose bytes could hold an anchor, and in UTF-16 the
// byte before every '&' is a NUL: a hundred aliases of a 1 MiB string,
// written in UTF-16, were expanded — 372 MiB allocated — and refused
// only as JSON too large. UTF-16 with a byte order mark is read as
// UTF-8 is, its aliases counted; UTF-32 and text without a byte order
// mark that is not UTF-8 are refused, saying to convert it. Whatever
// the text, the JSON a YAML document becomes is sized before it is
// made: 12 MiB of '<', 72 MiB as JSON, were refused after allocating
// 350 MiB, and now after parsing only (53 MiB: yaml.v3's parser takes
// about four times the text).
func TestYAMLInEveryEncoding(t *testing.T) {
	bomb := string(yamlAliasDoc(1<<20, 100))
	small := "openapi: 3.0.3\ninfo: {title: small, version: '1'}\npaths:\n  /x:\n    get:\n      operationId: getx\n      summary: Gets x — ünïcödé 𝄞\n      responses: {'200': {description: ok}}\n"
	want := toolsOf(t, []byte(small))
	for _, c := range []struct {
		name       string
		unit       int
		big, bom   bool
		refusedFor string // "" when read as UTF-8 is
	}{
		{"UTF-16LE", 2, false, true, ""},
		{"UTF-16BE", 2, true, true, ""},
		{"UTF-32LE", 4, false, true, "UTF-32"},
		{"UTF-32BE", 4, true, true, "UTF-32"},
		{"UTF-16LE without a BOM", 2, false, false, "NUL byte"},
		{"UTF-16BE without a BOM", 2, true, false, "NUL byte"},
		{"UTF-32LE without a BOM", 4, false, false, "NUL byte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := encode(bomb, c.unit, c.big, c.bom)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := openapi.Parse(data)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes, 100 aliases of 1 MiB: %d MiB allocated; %v", len(data), alloc>>20, err)
			wantErr := c.refusedFor
			if wantErr == "" {
				wantErr = "YAML aliases (100 of them)"
			}
			if !errors.Is(err, openapi.ErrDocument) || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("got %v, want an error saying %q", err, wantErr)
			}
			if c.refusedFor != "" && !strings.Contains(err.Error(), "convert it to UTF-8") {
				t.Errorf("%v does not say to convert the document to UTF-8", err)
			}
			if alloc > 48<<20 {
				t.Errorf("refusing it allocated %d MiB", alloc>>20)
			}
			if c.refusedFor == "" {
				if got := toolsOf(t, encode(small, c.unit, c.big, c.bom)); got != want {
					t.Errorf("in %s:\n%s\nin UTF-8:\n%s", c.name, got, want)
				}
			}
		})
	}

	grows := []byte("openapi: 3.0.3\nx:\n" + strings.Repeat("- \""+strings.Repeat("<", 1<<10)+"\"\n", 12<<10))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := openapi.Parse(grows)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("12 MiB of '<': %d MiB allocated; %v", alloc>>20, err)
	if !errors.Is(err, openapi.ErrDocument) || !strings.Contains(err.Error(), "as JSON it is more than") {
		t.Errorf("12 MiB of '<', 72 MiB as JSON: %v", err)
	}
	if alloc > 128<<20 {
		t.Errorf("refusing 12 MiB of '<' allocated %d MiB", alloc>>20)
	}
}
