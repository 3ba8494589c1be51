package filter

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkFold: folding 64 KB of text of one script (attack25 F1's
// full case folding: non-ASCII runes look up their upper case too).
func BenchmarkFold(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"ascii", "Dear customer, your order 8812 ships to 17 Main Street today. "},
		{"german", "Sehr geehrte Frau Müller, Ihre Bestellung geht an die Hauptstraße 17. "},
		{"greek", "Αγαπητέ πελάτη, η παραγγελία σας αποστέλλεται στην οδό Σπυρίδωνος 12. "},
	} {
		s := strings.Repeat(tc.line, 64<<10/len(tc.line))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			var buf []byte
			c := startCPU()
			for b.Loop() {
				buf, _ = fold(buf[:0], nil, s, false)
			}
			c.report(b, len(s))
		})
	}
}

// BenchmarkCheckJSONText: a rule's check of a 64 KB argument of JSON
// text (quotes and line breaks escaped), which gets the JSON view.
func BenchmarkCheckJSONText(b *testing.B) {
	f := newTestFilter(b, Config{})
	fl := newTestFlow(b, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	var rows []map[string]string
	for len(rows)*60 < 64<<10 {
		rows = append(rows, map[string]string{"note": "line one\nline \"two\"", "city": "Springfield West"})
	}
	text, _ := json.Marshal(rows)
	args, _ := json.Marshal(map[string]string{"body": string(text)})
	b.SetBytes(int64(len(args)))
	c := startCPU()
	for b.Loop() {
		if err := fl.Check("http.post_webhook", args); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b, len(args))
}
