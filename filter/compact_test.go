package filter

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestCompactTable(t *testing.T) {
	t.Parallel()
	doc := `{"customers":[{"id":1,"name":"Ada","email":"⟦email:7f3a9c21⟧","note":null,"vip":true},` +
		`{"id":2,"name":"Bob, Jr.","email":"","note":null,"vip":false}],"total":2,"next":null,"tags":["a","b"]}`
	text, ok, err := Compact(json.RawMessage(doc))
	if err != nil || !ok {
		t.Fatalf("Compact = %v, %v", ok, err)
	}
	want := strings.Join([]string{
		"customers[2]{id,name,email,vip}:",
		"  1,Ada,⟦email:7f3a9c21⟧,true",
		`  2,"Bob, Jr.",,false`,
		"total: 2",
		"tags[2]: a,b",
	}, "\n")
	if text != want {
		t.Errorf("Compact =\n%s\nwant\n%s", text, want)
	}
	if len(text) >= len(doc) {
		t.Errorf("compact text of %d bytes is not smaller than %d", len(text), len(doc))
	}
}

func TestCompactTopLevelWithMarker(t *testing.T) {
	t.Parallel()
	var rows []string
	for i := range 300 {
		rows = append(rows, fmt.Sprintf(`{"sku":"SKU-%03d","qty":%d,"price":"%d.99"}`, i, i%5, i))
	}
	limited, _, err := Limit(json.RawMessage("["+strings.Join(rows, ",")+"]"), LimitOptions{Budget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	text, ok, err := Compact(limited)
	if err != nil || !ok {
		t.Fatalf("Compact(%s) = %v, %v", limited, ok, err)
	}
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "[") || !strings.HasSuffix(lines[0], "]{sku,qty,price}:") {
		t.Errorf("header %q", lines[0])
	}
	if lines[1] != `  SKU-000,0,"0.99"` {
		t.Errorf("first row %q", lines[1])
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "  … ") || !strings.HasSuffix(last, " more items") {
		t.Errorf("last line %q, want the marker", last)
	}
}

func TestCompactDeclines(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"scalar":            `"just text"`,
		"no table":          `{"a":1,"b":{"c":[1,2]}}`,
		"one row":           `[{"a":1}]`,
		"different keys":    `[{"a":1,"b":2},{"a":1,"c":2}]`,
		"nested values":     `[{"a":{"x":1}},{"a":{"x":2}}]`,
		"not smaller":       `{"a":{"b":{"c":[{"k":1},{"k":2}]}}}`,
		"duplicate keys":    `[{"a":1,"a":2},{"a":1,"a":3}]`,
		"rows not objects":  `[{"a":1},2]`,
		"all columns empty": `[{"a":null},{"a":""}]`,
	}
	for name, doc := range cases {
		if text, ok, err := Compact(json.RawMessage(doc)); err != nil || ok {
			t.Errorf("%s: Compact = %q, %v, %v; want declined", name, text, ok, err)
		}
	}
}

func TestCompactQuoting(t *testing.T) {
	t.Parallel()
	for in, quoted := range map[string]bool{
		"plain": false, "Bob": false, "⟦email:7f3a9c21⟧": false, "a b": false,
		"": true, " x": true, "a,b": true, "a:b": true, "true": true, "null": true,
		"42": true, "-x": true, "#x": true, "[x": true, "{x": true, "a\nb": true,
		`a"b`: true, "bad\xff": true, ".5": true,
	} {
		if got := needsQuotes(in); got != quoted {
			t.Errorf("needsQuotes(%q) = %v, want %v", in, got, quoted)
		}
	}
}
