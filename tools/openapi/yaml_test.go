package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/codecell/codecell/tools/openapi"
	yaml3 "github.com/oasdiff/yaml3"
)

// BenchmarkParse measures Parse on GitHub's description (13 MB) as
// published (JSON), written as YAML (its Markdown has '&'s that may
// start an anchor), and as YAML without any '&', and on the hand-written
// YAML of testdata/openapi/api.yaml.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile(fixture(b, githubSpec))
	if err != nil {
		b.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		b.Fatal(err)
	}
	y, err := yaml3.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	small, err := os.ReadFile(testSpec)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"github-json", data},
		{"github-yaml", y},
		{"github-yaml-no-ampersand", bytes.ReplaceAll(y, []byte("&"), []byte("+"))},
		{"api.yaml", small},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := openapi.Parse(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
