package filter

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func mustLimit(tb testing.TB, doc string, opts LimitOptions) (string, []Cut) {
	tb.Helper()
	out, cuts, err := Limit(json.RawMessage(doc), opts)
	if err != nil {
		tb.Fatal(err)
	}
	budget := opts.normalized().Budget
	if len(out) > budget {
		tb.Fatalf("Limit made %d bytes, budget %d", len(out), budget)
	}
	if !json.Valid(out) {
		tb.Fatalf("Limit made invalid JSON %s", out)
	}
	return string(out), cuts
}

func TestLimitFitsAsIs(t *testing.T) {
	t.Parallel()
	doc := `{"a":[1,2,3],"b":{"c":"d"},"e":null,"f":true,"g":-1.5e3}`
	out, cuts := mustLimit(t, doc, LimitOptions{Budget: 1000})
	if out != doc || len(cuts) != 0 {
		t.Errorf("Limit = %s, %v; want the input unchanged", out, cuts)
	}
	// Whitespace is not kept, numbers are kept exactly.
	out, _ = mustLimit(t, "[ 1.000000000000000000001 , 2 ]", LimitOptions{})
	if out != "[1.000000000000000000001,2]" {
		t.Errorf("Limit = %s", out)
	}
}

func TestLimitArray(t *testing.T) {
	t.Parallel()
	var items []string
	for i := range 1000 {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item %d"}`, i, i))
	}
	doc := "[" + strings.Join(items, ",") + "]"
	out, cuts := mustLimit(t, doc, LimitOptions{Budget: 2000})
	var got []any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	last, _ := got[len(got)-1].(string)
	kept := len(got) - 1
	if want := fmt.Sprintf("… %d more items", 1000-kept); last != want {
		t.Errorf("last element %q, want %q", last, want)
	}
	// The head is kept whole and in order.
	for i, it := range got[:kept] {
		m, ok := it.(map[string]any)
		if !ok || m["id"] != float64(i) || m["name"] != fmt.Sprintf("item %d", i) {
			t.Fatalf("item %d = %v", i, it)
		}
	}
	if kept < 50 {
		t.Errorf("kept only %d of 1000 small items in 2000 bytes", kept)
	}
	if len(cuts) != 1 || cuts[0] != (Cut{Path: "", Kind: CutArray, Total: 1000, Kept: kept}) {
		t.Errorf("cuts = %+v", cuts)
	}
}

func TestLimitString(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abcdefghij", 1000)
	out, cuts := mustLimit(t, `{"text":"`+long+`","n":1}`, LimitOptions{Budget: 200})
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	text := got["text"].(string)
	if !strings.HasSuffix(text, "… [cut: 10000 bytes total]") || !strings.HasPrefix(text, "abcdefghij") {
		t.Errorf("cut string %q", text)
	}
	if got["n"] != float64(1) {
		t.Errorf("small sibling lost: %v", got)
	}
	if len(cuts) != 1 || cuts[0].Path != "/text" || cuts[0].Kind != CutString || cuts[0].Total != 10000 {
		t.Errorf("cuts = %+v", cuts)
	}
}

func TestLimitNeverSplitsTokensOrRunes(t *testing.T) {
	t.Parallel()
	tok := "⟦email:7f3a9c21⟧"
	for budget := 64; budget < 200; budget++ {
		doc := `["` + strings.Repeat("é"+tok, 40) + `"]`
		out, _ := mustLimit(t, doc, LimitOptions{Budget: budget})
		var got []string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			// A summary string instead of the array is fine too.
			continue
		}
		s := got[0]
		if strings.ContainsRune(s, '\uFFFD') {
			t.Fatalf("budget %d: split rune in %q", budget, s)
		}
		if open, close := strings.Count(s, "⟦"), strings.Count(s, "⟧"); open != close {
			t.Fatalf("budget %d: split token in %q", budget, s)
		}
	}
}

func TestLimitDepth(t *testing.T) {
	t.Parallel()
	doc := `{"a":{"b":{"c":{"d":[1,2,3,4,5,6,7,8,9,10]}}},"x":{"y":{"z":[1]}}}`
	out, cuts := mustLimit(t, doc, LimitOptions{Budget: 1000, MaxDepth: 3})
	want := `{"a":{"b":{"c":"{… 1 field}"}},"x":{"y":{"z":[1]}}}`
	if out != want {
		t.Errorf("Limit = %s\nwant    %s", out, want)
	}
	if len(cuts) != 1 || cuts[0] != (Cut{Path: "/a/b/c", Kind: CutDepth, Total: 1}) {
		t.Errorf("cuts = %+v", cuts)
	}
}

func TestLimitObjectFields(t *testing.T) {
	t.Parallel()
	var fields []string
	for i := range 500 {
		fields = append(fields, fmt.Sprintf(`"field_%03d":"value %d"`, i, i))
	}
	out, cuts := mustLimit(t, "{"+strings.Join(fields, ",")+"}", LimitOptions{Budget: 1024})
	if !strings.Contains(out, `"field_000":"value 0"`) {
		t.Errorf("first field lost: %s", out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	more, _ := got["…"].(string)
	if want := fmt.Sprintf("%d more fields", 500-(len(got)-1)); more != want {
		t.Errorf(`"…" = %q, want %q`, more, want)
	}
	if len(cuts) != 1 || cuts[0].Kind != CutObject || cuts[0].Total != 500 {
		t.Errorf("cuts = %+v", cuts)
	}
}

func TestLimitPathological(t *testing.T) {
	t.Parallel()
	many := make([]string, 20000)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	cases := map[string]string{
		"huge key":          `{"` + strings.Repeat("k", 100000) + `":1,"` + strings.Repeat("k", 99999) + `j":2}`,
		"huge keys nested":  `[{"` + strings.Repeat("é", 5000) + `":{"` + strings.Repeat("x", 5000) + `":"v"}}]`,
		"many small fields": "{" + strings.Join(many, ",") + "}",
		"many empty arrays": "[" + strings.Repeat("[],", 50000) + "[]]",
		"deep arrays":       strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		"deep objects":      strings.Repeat(`{"a":`, 3000) + "null" + strings.Repeat("}", 3000),
		"deep mixed":        strings.Repeat(`[{"k":`, 2000) + `"x"` + strings.Repeat("}]", 2000),
		"huge number":       `[` + strings.Repeat("7", 100000) + `]`,
		"escapes":           `["` + strings.Repeat(`\u0001\"\\`, 20000) + `"]`,
		"invalid utf8":      "[\"" + strings.Repeat("\xff", 20000) + "\"]",
		"wide and deep":     strings.Repeat(`{"a":[1,2,3],"b":`, 500) + "0" + strings.Repeat("}", 500),
		"long top string":   `"` + strings.Repeat("x", 100000) + `"`,
		"many long strings": "[" + strings.Repeat(`"`+strings.Repeat("y", 3000)+`",`, 300) + `"z"]`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, budget := range []int{64, 65, 100, 257, 1000, 4096, DefaultBudget} {
				for _, depth := range []int{1, 3, DefaultMaxDepth} {
					mustLimit(t, doc, LimitOptions{Budget: budget, MaxDepth: depth})
				}
			}
		})
	}
}

func TestLimitDeterministic(t *testing.T) {
	t.Parallel()
	doc := string(realisticResult(200 << 10))
	first, firstCuts := mustLimit(t, doc, LimitOptions{Budget: 3000})
	for range 5 {
		again, cuts := mustLimit(t, doc, LimitOptions{Budget: 3000})
		if again != first || fmt.Sprint(cuts) != fmt.Sprint(firstCuts) {
			t.Fatal("two limits of the same document differ")
		}
	}
	if len(firstCuts) == 0 {
		t.Fatal("a 200 KB document fit 3000 bytes uncut")
	}
}

func TestLimitSmallBudgetRaised(t *testing.T) {
	t.Parallel()
	out, _, err := Limit(json.RawMessage(`["`+strings.Repeat("a", 500)+`"]`), LimitOptions{Budget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > MinBudget || len(out) < 10 {
		t.Errorf("budget 1 gave %d bytes, want up to MinBudget", len(out))
	}
}

func TestLimitInvalid(t *testing.T) {
	t.Parallel()
	if _, _, err := Limit(json.RawMessage(`{"a":`), LimitOptions{}); err == nil {
		t.Error("invalid JSON: no error")
	}
}

func TestWaterLevel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		sizes       []int
		avail, want int
	}{
		{[]int{10, 20, 30}, 60, int(^uint(0) >> 1)},
		{[]int{10, 20, 30}, 50, 20},
		{[]int{10, 20, 30}, 30, 10},
		{[]int{100, 100}, 50, 25},
		{[]int{5}, -1, -1},
	}
	for _, tc := range cases {
		if got := waterLevel(tc.sizes, tc.avail, nil); got != tc.want {
			t.Errorf("waterLevel(%v, %d) = %d, want %d", tc.sizes, tc.avail, got, tc.want)
		}
	}
}
