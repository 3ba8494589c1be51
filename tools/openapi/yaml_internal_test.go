package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/oasdiff/yaml"
	yaml3 "github.com/oasdiff/yaml3"
)

// TestYAMLToJSONAsOasdiff: yamlToJSON, which sizes the node tree before
// decoding it, makes the JSON oasdiff/yaml's YAMLToJSON makes, byte for
// byte — of the YAML descriptions of the fixtures, GitHub's written as
// YAML, and YAML's corners (keys that are numbers or booleans, merges,
// timestamps, binary, nulls, several documents) —, and refuses what it
// refuses. Its size of the JSON is never less than the JSON's.
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
	if data, err := os.ReadFile("../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json"); err == nil && !testing.Short() {
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
	}
}
