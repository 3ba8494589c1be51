package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtures is where `make openapi-fixtures` installs the pinned npm
// packages of OpenAPI documents.
const fixtures = "../../testdata/openapi/node_modules"

// fixture returns the path of an installed fixture. Without the fixtures
// the test is skipped, unless CODECELL_REQUIRE_NODE is set, as `make test`
// does, so that CI cannot skip it by accident.
func fixture(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(fixtures, rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			tb.Fatalf("OpenAPI fixture %s is not installed (%v); run make openapi-fixtures", rel, err)
		}
		tb.Skipf("run make openapi-fixtures to test with %s", rel)
	}
	return p
}

// readmeExamples lists the documents of @readme/oas-examples.
func readmeExamples(tb testing.TB) []string {
	tb.Helper()
	root := fixture(tb, "@readme/oas-examples")
	var out []string
	for _, v := range []string{"2.0", "3.0", "3.1"} {
		err := filepath.WalkDir(filepath.Join(root, v), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml")) {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// withDeadline runs fn and fails the test if it does not return within d:
// a loader that hangs on a document must not hang the suite.
func withDeadline(tb testing.TB, what string, d time.Duration, fn func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		tb.Fatalf("%s did not finish within %s", what, d)
	}
}

// outcome opens one document as a source and describes the result in one
// line: the tools made and the operations left out, or the refusal.
// Every tool's declaration and page must render.
func outcome(tb testing.TB, path string, data []byte) string {
	s, err := openapi.New(openapi.Config{Spec: path}, openapi.Options{Name: "x"})
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := openapi.Parse(data)
	if err != nil {
		if !errors.Is(err, openapi.ErrDocument) {
			tb.Errorf("%s: error does not wrap ErrDocument: %v", path, err)
		}
		return "refused: " + err.Error()
	}
	reg := tools.NewRegistry()
	rep, err := s.OpenDocument(reg, doc)
	if err != nil {
		return "refused: " + strings.TrimPrefix(err.Error(), "openapi x: "+path+": ")
	}
	fsys := vfs.New(reg)
	for _, t := range reg.List() {
		if _, err := vfs.Declaration(t); err != nil {
			tb.Errorf("%s: %v", t.Name, err)
		}
		if _, err := fsys.ReadFile(vfs.FullPath(t.Name)); err != nil {
			tb.Errorf("%s: %v", t.Name, err)
		}
	}
	line := fmt.Sprintf("OpenAPI %s, %d tools", rep.Version, rep.Tools)
	if rep.Tools == 1 {
		line = fmt.Sprintf("OpenAPI %s, 1 tool", rep.Version)
	}
	for _, p := range rep.Problems {
		line += "\n\tleft out " + p.String()
	}
	return line
}

// TestReadMeExamples loads every document of @readme/oas-examples (edge
// cases: circular references, discriminators, parameter styles, file
// uploads, Swagger 2.0): each loads, or is refused with a message naming
// the exact problem, and none panics or hangs. The outcomes are kept in
// testdata/oas-examples.golden (go test -update rewrites it).
func TestReadMeExamples(t *testing.T) {
	t.Parallel()
	files := readmeExamples(t)
	root := fixture(t, "@readme/oas-examples")
	var b strings.Builder
	loaded := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		var line string
		withDeadline(t, rel, 30*time.Second, func() { line = outcome(t, f, data) })
		if !strings.HasPrefix(line, "refused") {
			loaded++
		}
		fmt.Fprintf(&b, "%s: %s\n", filepath.ToSlash(rel), line)
	}
	golden := filepath.Join("testdata", "oas-examples.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("outcomes differ from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
	t.Logf("%d of %d documents load", loaded, len(files))
}

// TestMutatedDocuments loads every @readme/oas-examples document mutated
// at random — keys dropped, values replaced by others of another type,
// references pointed elsewhere or at themselves — with a fixed seed:
// whatever comes out, the loader returns a source or an error, never a
// panic or a hang.
func TestMutatedDocuments(t *testing.T) {
	t.Parallel()
	files := readmeExamples(t)
	rng := rand.New(rand.NewPCG(12, 2026))
	const perDoc = 10
	n, loaded := 0, 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 200<<10 {
			continue // the two largest take long and add no new shapes
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		for range perDoc {
			mutated := mutate(rng, doc)
			raw, _ := json.Marshal(mutated)
			n++
			withDeadline(t, f+" mutated", 30*time.Second, func() {
				if loadAnything(t, raw) {
					loaded++
				}
			})
		}
	}
	t.Logf("%d mutated documents: %d loaded, the others refused", n, loaded)
}

// loadAnything parses data and, if it parses, registers its tools,
// renders their declarations and calls them (against a transport that
// answers 200); it fails the test only on a panic. It reports whether
// tools were registered.
func loadAnything(tb testing.TB, data []byte) (loaded bool) {
	defer func() {
		if p := recover(); p != nil {
			tb.Fatalf("panic on %.200s…: %v", data, p)
		}
	}()
	doc, err := openapi.Parse(data)
	if err != nil {
		if !errors.Is(err, openapi.ErrDocument) {
			tb.Errorf("error does not wrap ErrDocument: %v", err)
		}
		return false
	}
	s, err := openapi.New(openapi.Config{Spec: "fuzz.json", BaseURL: "https://api.example.invalid"}, openapi.Options{Name: "fuzz", Transport: answerOK})
	if err != nil {
		tb.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		return false
	}
	for _, t := range reg.List() {
		if _, err := vfs.Declaration(t); err != nil {
			tb.Errorf("%s: %v", t.Name, err)
		}
		// Any outcome but a panic will do: the arguments may not fit.
		reg.Call(context.Background(), t.Name, json.RawMessage(`{}`))
	}
	return true
}

// answerOK is a transport that answers every request with 200 and {},
// without a network.
var answerOK = roundTripper(func(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
})

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mutate returns a copy of v with one random change somewhere in it.
func mutate(rng *rand.Rand, v any) any {
	cp := deepCopy(v)
	// Collect the containers, then change one of them.
	var spots []any
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			spots = append(spots, x)
			for _, c := range x {
				walk(c)
			}
		case []any:
			spots = append(spots, x)
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(cp)
	if len(spots) == 0 {
		return cp
	}
	replacements := []any{nil, true, 0, -1, 1e300, "", "x", "#/components/schemas/Missing", "#", "#/paths", []any{}, map[string]any{},
		map[string]any{"$ref": "#"}, map[string]any{"$ref": "#/components/schemas"}, map[string]any{"type": "nonsense"},
		map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/Missing"}}}}
	for range 1 + rng.IntN(3) {
		switch s := spots[rng.IntN(len(spots))].(type) {
		case map[string]any:
			keys := make([]string, 0, len(s))
			for k := range s {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if len(keys) == 0 {
				s["$ref"] = "#"
				continue
			}
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(4) {
			case 0:
				delete(s, k)
			case 1:
				s[k] = replacements[rng.IntN(len(replacements))]
			case 2:
				s["$ref"] = []string{"#", "#/components/schemas/" + k, "#/paths", "#/components/schemas/Missing", "other.json#/x"}[rng.IntN(5)]
			default:
				s[k+"x"] = s[k]
			}
		case []any:
			if len(s) > 0 {
				s[rng.IntN(len(s))] = replacements[rng.IntN(len(replacements))]
			}
		}
	}
	return cp
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = deepCopy(x)
		}
		return a
	}
	return v
}

// FuzzParse: any bytes give a document or an error that wraps
// ErrDocument, and a document's tools register and render, never a panic.
// The seeds (testdata/fuzz/FuzzParse) run with go test; go test -fuzz
// FuzzParse explores further.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a/{id}":{"get":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`))
	f.Add([]byte("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		loadAnything(t, data)
	})
}
