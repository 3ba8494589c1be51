package openapi

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// manyOperations is a description of n GET operations with no
// parameters, about 85 bytes each (attack15 M1).
func manyOperations(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"many","version":"1"},"paths":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/o%05d":{"get":{"operationId":"o%05d","responses":{"200":{"description":"ok"}}}}`, i, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestOperationsBounded (attack15 M1): a description of many trivial
// operations made a tool of each, ~6 KiB kept apiece, with no bound on
// their number: 170,000 of them, within every bound of the document,
// kept 1.1 GiB. A source registers at most max_operations (by default
// DefaultMaxOperations, above the largest real description); those past
// it, in the document's order, are left out with a warning that names
// the bound and the setting, and the category's description says so.
func TestOperationsBounded(t *testing.T) {
	t.Parallel()
	if DefaultMaxOperations < 22_361 {
		t.Errorf("DefaultMaxOperations %d cuts Microsoft Graph beta's 22,361 operations", DefaultMaxOperations)
	}
	doc, err := Parse(manyOperations(50))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		max, want int
	}{{"bounded", 20, 20}, {"within", 50, 50}, {"default", 0, 50}} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			s, err := New(Config{Spec: "many.json", BaseURL: "https://api.example.com", MaxOperations: c.max},
				Options{Name: "many", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			reg := tools.NewRegistry()
			rep, err := s.OpenDocument(reg, doc)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Tools != c.want || len(reg.ListCategory("many")) != c.want {
				t.Errorf("%d tools registered (report: %d), want %d", len(reg.ListCategory("many")), rep.Tools, c.want)
			}
			left := 50 - c.want
			if left == 0 {
				if len(rep.Problems) != 0 || strings.Contains(logs.String(), "max_operations") {
					t.Errorf("nothing left out, but: %v %s", rep.Problems, logs.String())
				}
				return
			}
			if _, ok := reg.Get("many.o00019"); !ok {
				t.Error("the first operations, in the document's order, are not all kept")
			}
			if _, ok := reg.Get("many.o00020"); ok {
				t.Error("an operation past the bound was registered")
			}
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "max_operations") ||
				!strings.Contains(rep.Problems[0].Message, fmt.Sprintf("%d more", left)) || !strings.Contains(rep.Problems[0].Message, "include") {
				t.Errorf("problems: %+v", rep.Problems)
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "max_operations=20") || !strings.Contains(l, fmt.Sprintf("left_out=%d", left)) {
				t.Errorf("log: %s", l)
			}
			if d := reg.CategorySummary("many"); !strings.Contains(d, "30 of its operations left out") || !strings.Contains(d, "max_operations = 20") {
				t.Errorf("category description: %q", d)
			}
		})
	}
	if _, err := New(Config{Spec: "many.json", MaxOperations: -1}, Options{Name: "many"}); err == nil || !strings.Contains(err.Error(), "max_operations") {
		t.Errorf("a negative bound: %v", err)
	}
}
