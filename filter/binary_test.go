package filter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestApplyBytes: content that decodes as text is filtered as a text;
// other content has the values in its printable runs masked in place,
// its length and other bytes kept; content without findings is returned
// as it is.
func TestApplyBytes(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	const key, mail = "AKIAIOSFODNN7EXAMPLE", "ada@example.com"

	t.Run("text", func(t *testing.T) {
		in := []byte("owner: " + mail + "\naws_access_key_id = " + key + "\n")
		out := f.ApplyBytes(in, Options{Vault: newTestVault(t, VaultOptions{})})
		if !out.Text || bytes.Contains(out.Data, []byte(key)) || bytes.Contains(out.Data, []byte(mail)) || !bytes.Contains(out.Data, []byte("⟦email:")) {
			t.Fatalf("text content filtered to %q (text %v)", out.Data, out.Text)
		}
		if out.Report.Findings[ClassCloudKey] != 1 || out.Report.Findings[ClassEmail] != 1 {
			t.Errorf("report %+v", out.Report)
		}
	})

	t.Run("binary", func(t *testing.T) {
		// A PNG signature, a tEXt chunk holding a key and a mail address,
		// and bytes no text is made of.
		var in []byte
		in = append(in, "\x89PNG\r\n\x1a\n\x00\x00\x00\x2ctEXtComment\x00deploy with "...)
		in = append(in, key+" by "+mail...)
		in = append(in, 0x00, 0xff, 0x10, 'I', 'D', 'A', 'T', 0x78, 0x9c, 0x01, 0x02)
		out := f.ApplyBytes(in, Options{})
		if out.Text || len(out.Data) != len(in) || bytes.Contains(out.Data, []byte(key)) || bytes.Contains(out.Data, []byte(mail)) {
			t.Fatalf("binary content filtered to %q (text %v)", out.Data, out.Text)
		}
		want := bytes.Replace(bytes.Replace(in, []byte(key), bytes.Repeat([]byte("*"), len(key)), 1), []byte(mail), bytes.Repeat([]byte("*"), len(mail)), 1)
		if !bytes.Equal(out.Data, want) {
			t.Errorf("got\n%q\nwant\n%q", out.Data, want)
		}
		if out.Report.Masked != 2 || out.Report.Findings[ClassCloudKey] != 1 {
			t.Errorf("report %+v", out.Report)
		}
		if !bytes.Contains(in, []byte(key)) {
			t.Error("the input was changed")
		}
	})

	t.Run("nothing found", func(t *testing.T) {
		in := append([]byte("\x00\x01GIF89a"), strings.Repeat("\xff\x00 plain words here", 4)...)
		out := f.ApplyBytes(in, Options{})
		if out.Text || &out.Data[0] != &in[0] || out.Report.Masked != 0 {
			t.Errorf("content without findings: %q, %+v", out.Data, out.Report)
		}
	})
}

// FuzzApplyBytes: any content is filtered without a panic, binary
// content keeps its length, and a masked value leaves only asterisks.
func FuzzApplyBytes(f *testing.F) {
	flt := newTestFilter(f, Config{})
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00tEXtComment\x00AKIAIOSFODNN7EXAMPLE\xff"))
	f.Add([]byte("plain text with ada@example.com"))
	f.Add([]byte{0xff, 0xfe, 'a', 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		out := flt.ApplyBytes(data, Options{})
		if out.Text {
			return
		}
		if len(out.Data) != len(data) {
			t.Fatalf("binary content of %d bytes became %d", len(data), len(out.Data))
		}
		for i := range data {
			if out.Data[i] != data[i] && out.Data[i] != '*' {
				t.Fatalf("byte %d changed to %q", i, out.Data[i])
			}
		}
	})
}

// BenchmarkApplyBytes filters a 1 MiB artifact as it is read: binary
// content (random bytes with printable runs, one holding a key) and
// content that decodes as text.
//
//	go test ./filter -run '^$' -bench ApplyBytes -benchtime 2s
func BenchmarkApplyBytes(b *testing.B) {
	flt := newTestFilter(b, Config{})
	rnd := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, 1<<20)
	for i := range bin {
		bin[i] = byte(rnd.UintN(256))
	}
	copy(bin[1<<19:], "tEXtComment\x00deployed with AKIAIOSFODNN7EXAMPLE by ada@example.com\x00")
	var text strings.Builder
	for text.Len() < 1<<20 {
		text.WriteString(words[rnd.IntN(len(words))] + " ")
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"binary", bin}, {"text", []byte(text.String())}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			cpu := startCPU()
			for b.Loop() {
				flt.ApplyBytes(c.data, Options{})
			}
			cpu.report(b, len(c.data))
		})
	}
}

// TestApplyBytesLongRun: a printable run longer than the window scanned
// at once has every value masked, those across a window's end too.
func TestApplyBytesLongRun(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteByte(0)
	for i := 0; b.Len() < 3*binaryWindow; i++ {
		fmt.Fprintf(&b, "u%07d@x.example.com ", i)
	}
	out := f.ApplyBytes(b.Bytes(), Options{})
	if out.Text || len(out.Data) != b.Len() {
		t.Fatalf("text %v, %d bytes of %d", out.Text, len(out.Data), b.Len())
	}
	if m := regexp.MustCompile(`u\d{7}@x\.example\.com`).Find(out.Data); m != nil {
		t.Fatalf("%s was not masked", m)
	}
}
