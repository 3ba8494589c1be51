package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAppend: a string is written as encoding/json writes it, HTML's
// escapes aside, the same from a string and from bytes, and Size and
// RuneSize say its size.
func TestAppend(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", `"quoted" \back\slash/`, "tab\tline\nreturn\r", "\x00\x01\x1f\x7f\b\f",
		"<a href=\"x\">&amp;</a>", "é漢字🙂", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", strings.Repeat("<\x01\"é\b", 100),
	} {
		got := Append(nil, s)
		var want strings.Builder
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: %s, encoding/json %s", s, got, want.String())
		}
		if b := Append([]byte("x"), []byte(s)); string(b[1:]) != string(got) {
			t.Errorf("%q as bytes: %s", s, b[1:])
		}
		if n := Size(s); n != len(got) || Size([]byte(s)) != n {
			t.Errorf("%q: Size %d, written %d", s, n, len(got))
		}
		n := 2
		for i := 0; i < len(s); {
			enc, w := RuneSize(s, i)
			n += enc
			i += w
		}
		if n != len(got) {
			t.Errorf("%q: RuneSize sums to %d, written %d", s, n, len(got))
		}
	}
}

// FuzzAppend: any string is valid JSON that reads back as encoding/json's
// reading of it, of the size Size says.
func FuzzAppend(f *testing.F) {
	f.Add("a\b\f\"\\\x00é\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		if !json.Valid(got) || Size(s) != len(got) {
			t.Fatalf("%q: %s (Size %d)", s, got, Size(s))
		}
		var back string
		json.Unmarshal(got, &back)
		if want := strings.ToValidUTF8(s, "\uFFFD"); utf8.ValidString(s) && back != want {
			t.Fatalf("%q reads back as %q", s, back)
		}
	})
}
