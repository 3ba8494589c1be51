package filter

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestApplyTextBudget(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{Budget: 1000})
	huge := strings.Repeat("e", 20<<20)
	out := f.ApplyText(huge, Options{})
	note := "… [cut: " + strconv.Itoa(len(huge)) + " bytes total]"
	if len(out.Text) > 1000 || !strings.HasSuffix(out.Text, note) || !strings.HasPrefix(out.Text, "eeee") {
		t.Errorf("20 MB text became %d bytes ending %q", len(out.Text), out.Text[max(0, len(out.Text)-40):])
	}
	r := out.Report
	if !r.Cut || r.CutsTotal != 1 || r.Budget != 1000 || r.OriginalBytes != len(huge) || r.ReturnedBytes != len(out.Text) ||
		len(r.Cuts) != 1 || r.Cuts[0].Total != len(huge) || r.Cuts[0].Kept != len(out.Text)-len(note) {
		t.Errorf("report = %+v", r)
	}
	if full := out.Full(); full != huge {
		t.Errorf("Full is %d bytes, want the %d of the text", len(full), len(huge))
	}

	// A per-call budget applies, within MaxBudget.
	if got := f.ApplyText(huge, Options{Budget: 5000}); len(got.Text) > 5000 || len(got.Text) < 4900 {
		t.Errorf("budget 5000: %d bytes", len(got.Text))
	}
	// Short texts are returned whole.
	if got := f.ApplyText("short", Options{}); got.Text != "short" || got.Report.Cut || got.Full() != "short" {
		t.Errorf("short text: %+v", got)
	}
	// Tokens longer than the values can push a text over the budget.
	var b strings.Builder
	for i := 0; b.Len() < 900; i++ {
		b.WriteString("user" + strconv.Itoa(i) + "@example.com ")
	}
	v := newTestVault(t, VaultOptions{})
	got := f.ApplyText(b.String(), Options{Vault: v})
	if len(got.Text) > 1000 || !got.Report.Cut || strings.Contains(got.Text, "@example.com") {
		t.Errorf("text of e-mails: %d bytes, cut %v: %q", len(got.Text), got.Report.Cut, got.Text)
	}
	head := strings.TrimSuffix(got.Text, cutNote(b.Len()))
	if !strings.HasPrefix(got.Full(), head) {
		t.Errorf("the head %q is not a prefix of Full %q", head, got.Full())
	}
}

// TestApplyTextStraddle puts sensitive values across the cut, in short
// texts and in texts so long that only a window is scanned: no part of
// them may show.
func TestApplyTextStraddle(t *testing.T) {
	t.Parallel()
	const budget = 2000
	f := newTestFilter(t, Config{Budget: budget})
	jwt := "eyJhbGciOiJIUzI1NiJ9." + strings.Repeat("eyJzdWIiOiIxMjM0NTY3ODkwIn0", 600) + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEowIBAAKCAQEA7Zq3bWx9Lq0Rw8Vd2Fh+K/3yPmNcE1tJ0uXwYbHs\n", 400) + "-----END RSA PRIVATE KEY-----"
	cases := []struct {
		name, value, before string
	}{
		{"email", "ada.lovelace.the.first.programmer@analytical-engine.example.com", ""},
		{"api key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc4eC39HqLyjWDarjtT1zdp7dc4eC39HqLyjWDarjtT1zdp7dc", ""},
		{"assignment", "password=correct-horse-battery-staple-correct-horse-battery-staple", ""},
		{"jwt longer than the margin", jwt, ""},
		{"pem longer than the margin", pem, ""},
		// A value found earlier is swept where it straddles the cut.
		{"repeat", "correct-horse-battery-staple", "password=correct-horse-battery-staple "},
	}
	for _, tc := range cases {
		for _, tail := range []int{100, 20 << 20} {
			t.Run(tc.name+"/"+strconv.Itoa(tail), func(t *testing.T) {
				t.Parallel()
				v := newTestVault(t, VaultOptions{})
				// The value starts 20 bytes before the end of what can be
				// kept, and is longer than the note.
				size := len(tc.before) + budget + len(tc.value) + 1 + tail
				lead := budget - len(cutNote(size)) - 20 - len(tc.before)
				text := tc.before + strings.Repeat("a", lead-1) + " " + tc.value + " " + strings.Repeat("z", tail)
				out := f.ApplyText(text, Options{Vault: v})
				if len(out.Text) > budget || !out.Report.Cut {
					t.Fatalf("%d bytes, cut %v", len(out.Text), out.Report.Cut)
				}
				secret := tc.value
				if i := strings.IndexByte(secret, '='); i >= 0 {
					secret = secret[i+1:]
				}
				for n := 6; n <= len(secret); n++ {
					if strings.Contains(out.Text, secret[:n]) {
						t.Fatalf("the first %d bytes of the value show: %q", n, out.Text[max(0, len(out.Text)-80):])
					}
				}
				if !utf8.ValidString(out.Text) {
					t.Errorf("invalid UTF-8")
				}
			})
		}
	}
}

func TestApplyTextKeepsTokensWhole(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{Budget: 100})
	tok := "⟦email:0123abcd⟧"
	for pad := 40; pad < 80; pad++ {
		text := strings.Repeat("x", pad) + tok + strings.Repeat("y", 200)
		out := f.ApplyText(text, Options{})
		head := strings.TrimSuffix(out.Text, cutNote(len(text)))
		if strings.Contains(head, "⟦") && !strings.Contains(head, tok) {
			t.Fatalf("pad %d: token split: %q", pad, out.Text)
		}
		if !utf8.ValidString(out.Text) || len(out.Text) > 100 {
			t.Fatalf("pad %d: %q", pad, out.Text)
		}
	}
	// Multi-byte runes are not split either.
	out := f.ApplyText(strings.Repeat("日本語", 100), Options{})
	if !utf8.ValidString(out.Text) || len(out.Text) > 100 {
		t.Errorf("runes: %q", out.Text)
	}
}

func TestApplyLogsHugeLine(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	huge := strings.Repeat("x", 10<<20) + " password=hunter22"
	out, err := f.Apply(Input{Result: []byte(`null`), Logs: []string{"api_key=" + "sk_live_4eC39HqLyjWDarjtT1zdp7dc" + strings.Repeat("!", 5000), huge}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range out.Logs {
		if len(l) > 1<<10 || strings.Contains(l, "sk_live") {
			t.Errorf("log line of %d bytes: %q", len(l), l[:min(len(l), 80)])
		}
	}
	if st := out.Report.Logs; st.LinesCut != 2 || st.Bytes != len(huge)+8+32+5000 {
		t.Errorf("log stats = %+v", st)
	}
}
