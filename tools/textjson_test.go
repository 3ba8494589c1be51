package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestTextJSON: a text becomes the JSON string encoding/json would make
// of it, read back the same, without HTML's escapes; what it takes is
// held before it is built, and a text the holder refuses is not built.
func TestTextJSON(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"", "plain", `"quoted" \back\slash/`, "tab\tline\nreturn\r", "\x00\x01\x1f\x7f",
		"<a href=\"x\">&amp;</a>", "é漢字🙂", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", strings.Repeat("<\x01\"é", 1000),
	} {
		got, err := tools.TextJSON(t.Context(), text)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Errorf("%q: not JSON: %s", text, got)
			continue
		}
		var back, want string
		json.Unmarshal(got, &back)
		std, _ := json.Marshal(text)
		json.Unmarshal(std, &want)
		if back != want {
			t.Errorf("%q: reads back as %q, encoding/json's as %q", text, back, want)
		}
		if strings.Contains(text, "<") && !strings.Contains(string(got), "<") {
			t.Errorf("%q: HTML escaped: %s", text, got)
		}
		if b, err := tools.TextJSON(t.Context(), []byte(text)); err != nil || string(b) != string(got) {
			t.Errorf("%q as bytes: %s, %v; as a string %s", text, b, err, got)
		}
	}
	text := strings.Repeat("\x01", 100)
	var held []int64
	refuse := errors.New("refused")
	ctx := tools.WithDecodedHolder(t.Context(), func(_ context.Context, n int64) error {
		held = append(held, n)
		return refuse
	})
	out, err := tools.TextJSON(ctx, text)
	if want := tools.DecodedSize(tools.ResultCopies*(6*100+2), 1); !errors.Is(err, refuse) || out != nil || len(held) != 1 || held[0] != want {
		t.Errorf("a text of 100 control characters: %s, %v; held %v, want [%d]", out, err, held, want)
	}
}

func BenchmarkTextJSON(b *testing.B) {
	text := strings.Repeat("Lorem ipsum dolor sit amet, \"consectetur\" <adipiscing> elit.\n", 16<<10)
	b.SetBytes(int64(len(text)))
	b.Run("TextJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tools.TextJSON(context.Background(), text)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(text)
		}
	})
}
