package tools

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// validJSONCases are documents on both sides of every rule of the grammar.
var validJSONCases = []string{
	``, ` `, `null`, `nul`, `nulll`, `true`, `false`, `fals`, `tru e`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e5`, `1E-5`, `-1.5e+10`, `2.e3`, `1ee`,
	`""`, `"`, `"abc`, `"a\"b"`, `"\/"`, `"\x"`, `"\u00e9"`, `"\u00G9"`, `"\u12"`, `"\ud800"`,
	"\"a\tb\"", "\"a\x1fb\"", "\"\x7f\"", "\"\xff\xfe\"", `"\\"`, `"\\\"`,
	`"0123456789abcdef0123456789abcdef"`, "\"0123456789abcdef\x01\"", `"0123456789abcde\"f"`,
	`{}`, `{ }`, `{"a":1}`, `{"a" : 1 , "b":[1,2]}`, `{"a":}`, `{"a"}`, `{a:1}`, `{"a":1,}`, `{,}`, `{"a":1}}`,
	`[]`, `[ ]`, `[1,2,3]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[}`, `{]`, `[1]]`,
	` [1] `, "\t\n\r[1]\r\n", `[1] x`, `1 2`, `{"a":{"b":{"c":[true,false,null]}}}`,
}

func TestValidJSONLikeEncodingJSON(t *testing.T) {
	cases := append([]string(nil), validJSONCases...)
	cases = append(cases,
		strings.Repeat("[", maxJSONNesting)+strings.Repeat("]", maxJSONNesting),
		strings.Repeat("[", maxJSONNesting+1)+strings.Repeat("]", maxJSONNesting+1),
		strings.Repeat(`{"a":`, maxJSONNesting-1)+"{}"+strings.Repeat("}", maxJSONNesting-1),
		strings.Repeat(`{"a":`, maxJSONNesting)+"{}"+strings.Repeat("}", maxJSONNesting),
	)
	if b, err := os.ReadFile("../testdata/peers/catalog/bench.json"); err == nil {
		cases = append(cases, string(b), string(b[:len(b)-1]))
	}
	for _, c := range cases {
		values, got := validJSON([]byte(c))
		if got != json.Valid([]byte(c)) {
			t.Errorf("validJSON(%.60q) = %v, json.Valid says %v", c, got, !got)
		}
		if n := JSONValues([]byte(c), math.MaxInt); got && values != n {
			t.Errorf("validJSON(%.60q) counted %d values, JSONValues %d", c, values, n)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		values, got := validJSON(b)
		if got != json.Valid(b) {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, !got)
		}
		if n := JSONValues(b, math.MaxInt); got && values != n {
			t.Fatalf("validJSON(%q) counted %d values, JSONValues %d", b, values, n)
		}
	})
}

// BenchmarkValidJSON checks the benchmark's 0.96 MB tool result, as every
// tool result is checked (tools.call), against json.Valid.
func BenchmarkValidJSON(b *testing.B) {
	raw, err := os.ReadFile("../testdata/peers/catalog/bench.json")
	if err != nil {
		b.Skip(err)
	}
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"codecell", func(b []byte) bool { _, ok := validJSON(b); return ok }}, {"encoding_json", json.Valid}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if !c.valid(raw) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
