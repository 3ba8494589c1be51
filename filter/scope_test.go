package filter

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// padded embeds result in a document large enough to be observed lazily:
// rows of filler, some of which repeat pieces of result.
func padded(tb testing.TB, result []byte) []byte {
	tb.Helper()
	var v any = string(result)
	if json.Valid(result) {
		v = json.RawMessage(result)
	}
	rows := make([]map[string]any, 0, 300)
	for i := range 300 {
		rows = append(rows, map[string]any{"id": fmt.Sprintf("row_%06d", i), "note": fmt.Sprintf("filler line %d with nothing to hide", i), "n": i * 37})
	}
	b, err := json.Marshal(map[string]any{"rows": rows, "result": v, "tail": "end of the document"})
	if err != nil {
		tb.Fatal(err)
	}
	if len(b) < eagerBytes {
		tb.Fatalf("padded document of %d bytes is indexed eagerly", len(b))
	}
	return b
}

// lazyAndEager observes doc in two flows: one indexes it whole before
// anything uses it (as Observe did before results were kept for later),
// the other as methods need it.
func lazyAndEager(tb testing.TB, f *Filter, rules []Rule, doc []byte) (lazy, eager *Flow) {
	tb.Helper()
	lazy = newTestFlow(tb, f, FlowOptions{Rules: rules})
	eager = newTestFlow(tb, f, FlowOptions{Rules: rules})
	lazy.Observe("crm.get", doc, NewProvenance("hr.get"))
	eager.Observe("crm.get", doc, NewProvenance("hr.get"))
	if lazy.npending.Load() != 1 {
		tb.Fatalf("%d results pending, want 1", lazy.npending.Load())
	}
	eager.Stats() // indexes everything
	if eager.npending.Load() != 0 {
		tb.Fatal("Stats left results pending")
	}
	return lazy, eager
}

// sameFiltering checks that the lazy flow filters, checks and names the
// provenance of output exactly as the eager one does.
func sameFiltering(t *testing.T, f *Filter, lazy, eager *Flow, output []byte, logs []string) {
	t.Helper()
	if got, want := errString(lazy.Check("http.post", output)), errString(eager.Check("http.post", output)); got != want {
		t.Errorf("Check: lazy %q, eager %q", got, want)
	}
	if got, want := lazy.Provenance(output).String(), eager.Provenance(output).String(); got != want {
		t.Errorf("Provenance: lazy %q, eager %q", got, want)
	}
	vl, ve := newTestVault(t, VaultOptions{}), newTestVault(t, VaultOptions{})
	if json.Valid(output) {
		got, err1 := f.Apply(Input{Result: output, Logs: logs}, Options{Vault: vl, Flow: lazy, Details: true})
		want, err2 := f.Apply(Input{Result: output, Logs: logs}, Options{Vault: ve, Flow: eager, Details: true})
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Apply: lazy %v, eager %v", err1, err2)
		}
		if err1 == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("Apply differs:\nlazy  %s %q %+v\neager %s %q %+v", got.Full, got.Logs, got.Report, want.Full, want.Logs, want.Report)
		}
	}
	for _, text := range append([]string{string(output)}, logs...) {
		got := f.ApplyText(text, Options{Vault: vl, Flow: lazy, Details: true})
		want := f.ApplyText(text, Options{Vault: ve, Flow: eager, Details: true})
		if got.Text != want.Text || !reflect.DeepEqual(got.Report, want.Report) {
			t.Errorf("ApplyText(%q): lazy %q %+v, eager %q %+v", text, got.Text, got.Report, want.Text, want.Report)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFlowLazyLikeEager: a large result indexed as outputs and arguments
// need it hides, refuses and names exactly what it would have indexed
// whole.
func TestFlowLazyLikeEager(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	pw := "hunter2-Horse"
	doc := padded(t, []byte(`{"user":"ada","password":"hunter2-Horse","email":"ada@example.com","notes":"likes tea",`+
		`"card":"4111 1111 1111 1111","pin":1234567,"api_key":"sk_live_51HxYzAbCdEfGh","contact":`+contact+`}`))
	outputs := []any{
		map[string]any{"count": 3, "total": 12.5, "first": []string{"row_000001", "row_000002"}},
		map[string]any{"plain": "the password is " + pw, "upper": strings.ToUpper(pw), "spaced": "h u n t e r 2 - H o r s e"},
		map[string]any{"b64": base64.StdEncoding.EncodeToString([]byte(pw)), "hex": hex.EncodeToString([]byte(pw)), "url": url.QueryEscape("p=" + pw)},
		map[string]any{"e64": base64.StdEncoding.EncodeToString([]byte("ada@example.com")), pw: "as a key", "card": "4111111111111111"},
		map[string]any{"id": "cus_8f3a9c21b7", "phone": "+44 20 7946 0958", "account": 12345678901, "key": "SK_LIVE_51HXYZABCDEFGH"},
		[]string{"filler line 7 with nothing to hide", "row_000299", "end of the document", "likes tea"},
		"ada@example.com",
	}
	logs := []string{pw, "encoded " + hex.EncodeToString([]byte(strings.ToUpper(pw))), "row_000003 is fine"}
	for i, out := range outputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for _, rules := range [][]Rule{nil, crmToHTTP, {{From: "hr.*", To: "http.*"}}} {
				lazy, eager := lazyAndEager(t, f, rules, doc)
				sameFiltering(t, f, lazy, eager, argsOf(t, out), logs)
				// Whatever was indexed for these, the rest comes when
				// another text needs it.
				sameFiltering(t, f, lazy, eager, argsOf(t, outputs), nil)
				if got, want := lazy.Stats(), eager.Stats(); got.Values != want.Values || got.Sources != want.Sources {
					t.Errorf("Stats: lazy %+v, eager %+v", got, want)
				}
			}
		})
	}
}

// TestFlowLazySkips: a small answer drawn from a large result indexes
// only the values that can show in it.
func TestFlowLazySkips(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	doc := padded(t, []byte(contact))
	fl := newTestFlow(t, f, FlowOptions{})
	fl.Observe("crm.get", doc, Provenance{})
	v := newTestVault(t, VaultOptions{})
	out, err := f.Apply(Input{Result: argsOf(t, map[string]any{"count": 300, "first": "row_000001"})}, Options{Vault: v, Flow: fl})
	if err != nil {
		t.Fatal(err)
	}
	fl.mu.RLock()
	indexed := len(fl.values)
	fl.mu.RUnlock()
	if indexed != 0 {
		t.Errorf("%d values indexed for an answer that holds none of the sensitive ones", indexed)
	}
	if !strings.Contains(string(out.Full), "row_000001") {
		t.Errorf("answer changed: %s", out.Full)
	}
	if st := fl.Stats(); st.Values == 0 {
		t.Errorf("Stats after indexing everything: %+v", st)
	}
}

func FuzzFlowLazy(f *testing.F) {
	f.Add([]byte(`{"email":"ada@example.com","password":"hunter2-Horse","name":"Ada Lovelace"}`),
		[]byte(`{"v":"YWRhQGV4YW1wbGUuY29t","ada@example.com":{"x":"HUNTER2-HORSE"}}`), "hunter2-horse")
	f.Add([]byte(contact), []byte(`["cus_8f3a9c21b7", "+44 20 7946 0958", 12345678901]`), "row_000001")
	flt, err := New(Config{Budget: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, result, output []byte, line string) {
		lazy, eager := lazyAndEager(t, flt, crmToHTTP, padded(t, result))
		sameFiltering(t, flt, lazy, eager, output, []string{line})
	})
}
