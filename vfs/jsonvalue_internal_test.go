package vfs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// parseCases are documents parseJSON must read as decodeJSON does, or
// refuse as it does.
var parseCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `12.5e-3`, `1E+9`, `-`, `01`, `1.`, `1e`, `.5`, `""`,
	`{"a":1,"b":[true,false,null,"x"],"c":{"d":-2.5E10}}`, ` { "spaced" : [ 1 , 2 ] } `, "\t[1,\n2]\r\n",
	`{"a":1,"a":2,"b":3}`, `{"esc":"quote \" backslash \\ slash \/ tab \t u \u00e9 pair \ud83d\ude42 lone \ud83d"}`,
	`"caf\u00e9"`, "\"caf\u00e9 raw é\"", "\"bad \xff utf-8\"", "\"control \x01\"", "\"del \x7f\"",
	`[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `1 2`, `tru`, `truex`, `nul`, `[`, `{"a":[1,{"b":`,
	`"unterminated`, `"trailing backslash\`, `{"a":1}}`, `[[[[[[[[[[]]]]]]]]]]`, strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
	`123456789012345678901234567890`, `{"n":1.0,"m":1e400}`, "\ufeff{}", ``, ` `,
}

// TestParseAsDecoder: the quick parser reads every case as encoding/json's
// tokens do, and the schemas of testdata too.
func TestParseAsDecoder(t *testing.T) {
	t.Parallel()
	cases := slices.Clone(parseCases)
	files, _ := filepath.Glob("../testdata/catalog/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		checkParse(t, []byte(c))
	}
}

// FuzzParseJSON: whatever the bytes, parseJSON reads them as decodeJSON
// does.
func FuzzParseJSON(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, data) })
}

func checkParse(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := parseJSON(data)
	want, wantErr := decodeJSON(data)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%.80q: error %v, want %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80q: %#v, want %#v", data, got, want)
	}
}

// TestQuoteAsEncoder: quote gives what encoding/json's encoder (HTML
// left as it is) gives, for strings it quotes as they are and for those
// it escapes.
func TestQuoteAsEncoder(t *testing.T) {
	t.Parallel()
	cases := []string{"", "plain words", "<a href='x'>&amp;</a>", `say "hi"`, `back\slash`, "tab\there", "new\nline",
		"\x00\x01\x1f", "\x7f", "café", "\u2028\u2029", "\xff\xfe", "emoji 🙂", "~ and `", strings.Repeat("x", 1000)}
	for b := range 256 {
		cases = append(cases, string([]byte{'a', byte(b), 'z'}))
	}
	for _, s := range cases {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(b.String(), "\n"); quote(s) != want {
			t.Errorf("quote(%q) = %s, want %s", s, quote(s), want)
		}
	}
}

// TestDefinitionKeyKept: a definition referred to many times is made
// into its key once, and the key is its JSON.
func TestDefinitionKeyKept(t *testing.T) {
	t.Parallel()
	root, err := parseJSON([]byte(`{"$defs":{"A":{"type":"object","properties":{"b":{"type":"string","enum":["x","y"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := resolvePointer(root, "/$defs/A")
	g := &tsgen{}
	first := g.keyOf(a)
	if want := `{"type":"object","properties":{"b":{"type":"string","enum":["x","y"]}}}`; first != want {
		t.Fatalf("key %s, want %s", first, want)
	}
	if len(g.keys) != 1 || g.keyOf(a) != first {
		t.Errorf("the key was not kept: %v", g.keys)
	}
}
