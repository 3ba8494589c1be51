package filter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeStd decodes with encoding/json, numbers kept as text.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkJSONRoundTrip checks the parser and encoder against encoding/json:
// the same documents are valid, and re-encoding keeps what they mean.
func checkJSONRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	n, err := parseJSON(data)
	if valid := json.Valid(data); (err == nil) != valid {
		t.Fatalf("parseJSON(%q) error %v, json.Valid %v", data, err, valid)
	}
	if err != nil {
		return
	}
	out := appendJSON(nil, &n)
	if !json.Valid(out) {
		t.Fatalf("encoding of %q is invalid: %q", data, out)
	}
	measure(&n)
	if n.size != len(out) {
		t.Fatalf("measured size %d, encoded %d bytes for %q", n.size, len(out), data)
	}
	want, err1 := decodeStd(data)
	got, err2 := decodeStd(out)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(want, got) {
		t.Fatalf("round trip of %q:\n got %#v (%v)\nwant %#v (%v)", data, got, err2, want, err1)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`null`, `true`, ` false `, `0`, `-0.5e-10`, `1E+2`, `"x"`, `[]`, `{}`,
		`{"a":[1,{"b":null}],"c":"d"}`,
		`"\u00e9\ud83d\ude00\ud800x\u2028\"\\\/\b\f\n\r\t\u0000"`,
		"\"\xff\xfe bad utf8\"",
		`{"a":1,"a":2}`,
		`[1,2,3]`, `  [ 1 , [ ] , { } ]  `,
		`1.000000000000000000000000000001`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		checkJSONRoundTrip(t, []byte(doc))
	}
	for _, bad := range []string{
		``, `{`, `[1,]`, `{"a"}`, `{"a":1,}`, `01`, `1.`, `-`, `1e`, `.5`, `"a`, "\"\x01\"",
		`"\x"`, `"\u12"`, `tru`, `nul`, `[1] [2]`, `{1:2}`, `"\ud800\u12"`,
		strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1),
	} {
		if _, err := parseJSON([]byte(bad)); err == nil {
			t.Errorf("parseJSON(%q) accepted invalid JSON", bad)
		}
	}
	// The key order is kept.
	n, _ := parseJSON([]byte(`{"z":1,"a":2,"m":3}`))
	if got := string(appendJSON(nil, &n)); got != `{"z":1,"a":2,"m":3}` {
		t.Errorf("key order: %s", got)
	}
}

// FuzzJSON checks the parser and encoder against encoding/json.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",null,true]}`, `"\ud83d\ude00"`, "\"\xff\"", `[1e5,-0.0]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkJSONRoundTrip(t, data)
	})
}

func TestLookupPointer(t *testing.T) {
	t.Parallel()
	n, _ := parseJSON([]byte(`{"a":{"b~c":[10,{"d/e":"x"}]},"":{"":1}}`))
	for ptr, want := range map[string]string{
		"":               `{"a":{"b~c":[10,{"d/e":"x"}]},"":{"":1}}`,
		"/a/b~0c/0":      `10`,
		"/a/b~0c/1/d~1e": `"x"`,
		"//":             `1`,
	} {
		got, err := lookupPointer(&n, ptr)
		if err != nil || string(appendJSON(nil, got)) != want {
			t.Errorf("lookupPointer(%q) = %v, %v", ptr, got, err)
		}
	}
	for _, ptr := range []string{"a", "/x", "/a/b~0c/2", "/a/b~0c/01", "/a/b~0c/0/z"} {
		if _, err := lookupPointer(&n, ptr); err == nil {
			t.Errorf("lookupPointer(%q) found something", ptr)
		}
	}
	if got := appendPointer(appendPointer("", "a/b"), "c~d"); got != "/a~1b/c~0d" {
		t.Errorf("appendPointer = %q", got)
	}
}
