package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzKey is fixed so that runs are reproducible.
var fuzzKey, _ = KeyFromBytes(bytes.Repeat([]byte{7}, KeySize))

// FuzzApply runs the whole pipeline on arbitrary input and checks its
// promises: no panic; an error exactly for invalid JSON; Full and Limited
// valid JSON; Limited within the budget (without the safety net); compact
// text no larger than Limited; every token resolvable; the same input
// giving the same output; and no value the run replaced surviving
// anywhere in the output. The seed corpus is in testdata/fuzz/FuzzApply.
func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"email":"ada@example.com","password":"hunter22","items":[1,2,3]}`), uint16(200), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, mode uint8) {
		checkPipeline(t, data, 64+int(budget)%8192, mode)
	})
}

func checkPipeline(t *testing.T, data []byte, budget int, mode uint8) {
	t.Helper()
	cfg := Config{Budget: budget, Compact: true, MaxDepth: 1 + int(mode>>2)%20}
	if mode&1 == 1 {
		// Mask everything that would be tokenized or redacted.
		cfg.Policy.Actions = map[Class]Action{}
		for _, c := range Classes {
			cfg.Policy.Actions[c] = ActionMask
		}
	}
	flt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vault, err := NewVault(fuzzKey, "local", VaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	if mode&2 == 2 {
		logs = strings.Split(string(data), "\n")
	}
	out, r, err := flt.apply(Input{Result: data, Logs: logs}, Options{Vault: vault})
	valid := json.Valid(data) || len(data) == 0
	if (err == nil) != valid {
		t.Fatalf("Apply error %v, but json.Valid = %v", err, valid)
	}
	if err != nil {
		return
	}
	if !json.Valid(out.Full) {
		t.Fatalf("Full is not valid JSON: %q", out.Full)
	}
	if !json.Valid(out.Limited) {
		t.Fatalf("Limited is not valid JSON: %q", out.Limited)
	}
	if len(out.Limited) > budget {
		t.Fatalf("Limited is %d bytes, budget %d", len(out.Limited), budget)
	}
	// The limiter itself, without the safety net, must fit.
	full, err := parseJSON(out.Full)
	if err != nil {
		t.Fatal(err)
	}
	measure(&full)
	raw, fitted, _ := fitTree(&full, LimitOptions{Budget: budget, MaxDepth: cfg.MaxDepth}, maxCutsListed)
	if len(raw) > budget || fitted.size != len(raw) {
		t.Fatalf("fitTree made %d bytes (size says %d), budget %d", len(raw), fitted.size, budget)
	}
	if out.Compact != "" && (len(out.Compact) >= len(out.Limited) || !utf8.ValidString(out.Compact)) {
		t.Fatalf("compact text of %d bytes for %d bytes of JSON", len(out.Compact), len(out.Limited))
	}
	if out.Report.ReturnedBytes != len(out.Limited) || out.Report.FilteredBytes != len(out.Full) {
		t.Fatalf("report sizes %+v disagree with the output", out.Report)
	}

	// Every token the output shows resolves, unless the input had it.
	var input string
	if len(data) > 0 {
		input = strings.Join(collectStrings(t, data), "\x00") + strings.Join(logs, "\x00")
	}
	for _, tok := range findTokenRefs(string(out.Full)) {
		text := string(out.Full[tok.start:tok.end])
		if tok.redacted() || strings.Contains(input, text) {
			continue
		}
		arg, _ := json.Marshal([]string{text})
		if _, err := vault.Resolve(arg, "any.tool"); err != nil {
			t.Fatalf("token %s does not resolve: %v", out.Full[tok.start:tok.end], err)
		}
	}

	// No value the run replaced survives.
	texts := collectStrings(t, out.Full)
	texts = append(texts, collectStrings(t, out.Limited)...)
	texts = append(texts, out.Logs...)
	texts = append(texts, out.Compact)
	for i, s := range texts {
		texts[i] = stripMarkers(s)
	}
	all := strings.Join(texts, "\x00")
	for v := range r.values {
		if i := strings.Index(all, v); i >= 0 {
			t.Fatalf("replaced value %q survives in %q", v, all[max(0, i-40):min(len(all), i+len(v)+40)])
		}
	}

	// The same input gives the same output.
	vault2, _ := NewVault(fuzzKey, "local", VaultOptions{})
	again, err := flt.Apply(Input{Result: data, Logs: logs}, Options{Vault: vault2})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Full, out.Full) || !bytes.Equal(again.Limited, out.Limited) || again.Compact != out.Compact {
		t.Fatalf("two runs differ:\n%s\n%s", out.Limited, again.Limited)
	}

	// The text variant holds the same promise.
	res, tr := flt.applyText(string(data), Options{Vault: vault})
	text := stripMarkers(res.Text)
	for v := range tr.values {
		if strings.Contains(text, v) {
			t.Fatalf("replaced value %q survives in text %q", v, text)
		}
	}
}

// markerRE matches what the filter itself writes: tokens and redaction
// markers, cut notes, and the markers of left-out items, fields and lines.
var markerRE = regexp.MustCompile(`⟦[a-z_0-9]+:(?:redacted|[0-9a-f]{8,64})⟧|… \[cut: \d+ bytes total\]|… \d+ more (?:items?|lines?)|\d+ more fields?|\[… \d+ items?\]|\{… \d+ fields?\}|…(?:#\d+)?|\*+`)

func stripMarkers(s string) string { return markerRE.ReplaceAllString(s, "\x00") }

// collectStrings returns every string and key in a JSON document, and
// every number as written, duplicates and all.
func collectStrings(tb testing.TB, doc []byte) []string {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatalf("decode %q: %v", doc, err)
		}
		switch v := tok.(type) {
		case string:
			out = append(out, v)
		case json.Number:
			out = append(out, v.String())
		}
	}
}

// FuzzApplyText checks ApplyText on arbitrary text and budgets: the text
// fits the budget, stays valid UTF-8, keeps no value the run replaced,
// and, when cut, is a head of Full followed by the cut note.
func FuzzApplyText(f *testing.F) {
	f.Add("error: duplicate ada@example.com (password=hunter22)", uint16(40))
	f.Fuzz(func(t *testing.T, text string, budget uint16) {
		flt, err := New(Config{Budget: MinBudget + int(budget)%4096})
		if err != nil {
			t.Fatal(err)
		}
		vault, err := NewVault(fuzzKey, "local", VaultOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, r := flt.applyText(text, Options{Vault: vault})
		b := out.Report.Budget
		if len(out.Text) > b || out.Report.ReturnedBytes != len(out.Text) {
			t.Fatalf("%d bytes for a budget of %d (report %+v)", len(out.Text), b, out.Report)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out.Text) {
			t.Fatalf("invalid UTF-8 from valid text: %q", out.Text)
		}
		full := out.Full()
		if out.Report.Cut {
			head, ok := strings.CutSuffix(out.Text, cutNote(len(text)))
			if !ok && out.Text != ellipsis {
				t.Fatalf("cut text %q lacks the note", out.Text)
			}
			if !strings.HasPrefix(full, head) {
				t.Fatalf("head %q is not a prefix of Full %q", head, full)
			}
		} else if full != out.Text {
			t.Fatalf("uncut text %q differs from Full %q", out.Text, full)
		}
		for _, s := range []string{stripMarkers(out.Text), stripMarkers(full)} {
			for v := range r.values {
				if strings.Contains(s, v) {
					t.Fatalf("replaced value %q survives in %q", v, s)
				}
			}
		}
	})
}

// FuzzFlow observes an arbitrary tool result, then checks arbitrary
// arguments and filters an arbitrary output with the flow. It never
// panics; a FlowError's path shows no value the flow knows as sensitive;
// no such value survives, in its folded form, anywhere in the output;
// and provenance survives its JSON form.
func FuzzFlow(f *testing.F) {
	f.Add([]byte(`{"email":"ada@example.com","password":"hunter2-Horse","name":"Ada Lovelace"}`),
		[]byte(`{"v":"YWRhQGV4YW1wbGUuY29t","ada@example.com":{"x":"HUNTER2-HORSE"}}`), uint8(0))
	f.Fuzz(func(t *testing.T, result, output []byte, mode uint8) {
		flt, err := New(Config{Budget: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		fl, err := flt.NewFlow(FlowOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		fl.Observe("crm.get", result, NewProvenance("hr.get"))
		var sens []string
		fl.mu.RLock()
		for _, v := range fl.values {
			if v.sens > 0 && len(v.pattern) < maxPatternLen {
				sens = append(sens, v.pattern)
			}
		}
		fl.mu.RUnlock()

		var fe *FlowError
		if err := fl.Check("http.post", output); errors.As(err, &fe) {
			p := string(foldString(fe.Path))
			for _, v := range sens {
				if strings.Contains(p, v) {
					t.Fatalf("path %q shows %q", fe.Path, v)
				}
			}
		} else if err != nil {
			t.Fatalf("Check = %v, want nil or a *FlowError", err)
		}

		vault, _ := NewVault(fuzzKey, "local", VaultOptions{})
		var texts []string
		if mode&1 == 0 && json.Valid(output) {
			out, err := flt.Apply(Input{Result: output, Logs: []string{string(result)}}, Options{Vault: vault, Flow: fl})
			if err != nil {
				t.Fatal(err)
			}
			texts = append(collectStrings(t, out.Full), out.Logs...)
		} else {
			texts = []string{flt.ApplyText(string(output), Options{Vault: vault, Flow: fl, Budget: 1 << 16}).Text}
		}
		for _, s := range texts {
			folded := string(foldString(stripMarkers(s)))
			for _, v := range sens {
				if strings.Contains(folded, v) {
					t.Fatalf("known value %q survives in %q", v, s)
				}
			}
		}

		p := fl.Provenance(output)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseProvenance(string(b))
		if err != nil || back.String() != p.String() {
			t.Fatalf("provenance %v → %s → %v, %v", p, b, back, err)
		}
	})
}
