package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestProvenance checks that memories, workspace files and stored results
// keep the provenance the server gives, in the input or in the context,
// and return it on every read; that programs cannot set it through the
// tools' arguments; and that bad values are refused.
func TestProvenance(t *testing.T) {
	s := openTest(t, Config{Limits: memory.Limits{MaxMetadataBytes: 200}})
	alice := as(t.Context(), "alice")
	crm := json.RawMessage(`{"sources": ["crm.get_contact"]}`)
	web := json.RawMessage(`{"sources":["http.fetch"]}`)
	const crmCompact = `{"sources":["crm.get_contact"]}`

	t.Run("memories", func(t *testing.T) {
		m := mustRemember(t, s, alice, memory.RememberInput{Content: "the customer prefers email", Provenance: crm})
		if string(m.Provenance) != crmCompact {
			t.Fatalf("remember returned provenance %s", m.Provenance)
		}
		got, err := s.Get(alice, m.ID)
		if err != nil || string(got.Provenance) != crmCompact {
			t.Fatalf("get: %s %v", got.Provenance, err)
		}
		r, err := s.Recall(alice, memory.RecallInput{Query: "customer email"})
		if err != nil || len(r.Results) != 1 || string(r.Results[0].Provenance) != crmCompact {
			t.Fatalf("recall: %+v %v", r.Results, err)
		}
		// An update without provenance keeps it; one with replaces it.
		up, err := s.Update(alice, memory.UpdateInput{ID: m.ID, AddTags: []string{"prefs"}})
		if err != nil || string(up.Provenance) != crmCompact {
			t.Fatalf("update without provenance: %s %v", up.Provenance, err)
		}
		up, err = s.Update(memory.WithProvenance(alice, web), memory.UpdateInput{ID: m.ID, Content: ptr("the customer prefers phone calls")})
		if err != nil || string(up.Provenance) != string(web) {
			t.Fatalf("update with provenance: %s %v", up.Provenance, err)
		}
		// Through the tool, the context states it; the arguments cannot.
		r2 := newRegistry(t, s)
		out, err := r2.Call(memory.WithProvenance(alice, web), "memory.remember", json.RawMessage(`{"content": "fetched from the web"}`))
		if err != nil {
			t.Fatal(err)
		}
		var tm memory.Memory
		if err := json.Unmarshal(out, &tm); err != nil || string(tm.Provenance) != string(web) {
			t.Fatalf("tool result %s: %v", out, err)
		}
		_, err = r2.Call(alice, "memory.remember", json.RawMessage(`{"content": "forged", "provenance": {"sources": []}}`))
		wantCode(t, err, tools.CodeInvalidArguments)
		// Without any, none is recorded and none is shown.
		plain := mustRemember(t, s, alice, memory.RememberInput{Content: "no sources"})
		if b, _ := json.Marshal(plain); plain.Provenance != nil || strings.Contains(string(b), "provenance") {
			t.Fatalf("a memory without provenance shows %s", b)
		}
	})

	t.Run("files", func(t *testing.T) {
		fi, _, err := s.PutFile(alice, memory.FileInput{Path: "contacts.json", Data: []byte(`[1]`), Provenance: crm})
		if err != nil || string(fi.Provenance) != crmCompact {
			t.Fatalf("put: %+v %v", fi, err)
		}
		fi, _, err = s.ReadFile(alice, "contacts.json")
		if err != nil || string(fi.Provenance) != crmCompact {
			t.Fatalf("read: %+v %v", fi, err)
		}
		if _, _, err := s.WriteFile(memory.WithProvenance(alice, web), "page.html", []byte("<p>")); err != nil {
			t.Fatal(err)
		}
		list, err := s.ListFiles(alice, "")
		if err != nil || len(list.Files) != 2 || string(list.Files[0].Provenance) != crmCompact || string(list.Files[1].Provenance) != string(web) {
			t.Fatalf("list: %+v %v", list.Files, err)
		}
		// Replacing a file replaces its provenance.
		if _, _, err := s.WriteFile(alice, "contacts.json", []byte(`[]`)); err != nil {
			t.Fatal(err)
		}
		if fi, _, _ := s.ReadFile(alice, "contacts.json"); fi.Provenance != nil {
			t.Fatalf("rewritten file kept provenance %s", fi.Provenance)
		}
	})

	t.Run("results", func(t *testing.T) {
		info, err := s.PutResult(alice, memory.PutResultInput{Data: []byte(`{"a":1}`), Provenance: crm})
		if err != nil || string(info.Provenance) != crmCompact {
			t.Fatalf("put: %+v %v", info, err)
		}
		for name, read := range map[string]func() (memory.ResultInfo, error){
			"stat": func() (memory.ResultInfo, error) { return s.StatResult(alice, info.ID) },
			"get":  func() (memory.ResultInfo, error) { r, _, err := s.GetResult(alice, info.ID); return r, err },
			"list": func() (memory.ResultInfo, error) { l, err := s.ListResults(alice, "", 1); return l[0], err },
		} {
			if r, err := read(); err != nil || string(r.Provenance) != crmCompact {
				t.Errorf("%s: %+v %v", name, r, err)
			}
		}
		ctxInfo, err := s.PutResult(memory.WithProvenance(alice, web), memory.PutResultInput{Data: []byte(`2`)})
		if err != nil || string(ctxInfo.Provenance) != string(web) {
			t.Fatalf("put with the context's: %+v %v", ctxInfo, err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		_, err := s.Remember(alice, memory.RememberInput{Content: "x", Provenance: json.RawMessage(`{not json`)})
		wantCode(t, err, tools.CodeInvalidArguments)
		_, _, err = s.PutFile(alice, memory.FileInput{Path: "x", Data: nil, Provenance: json.RawMessage(`"` + strings.Repeat("a", 300) + `"`)})
		wantCode(t, err, memory.CodeTooLarge)
	})
}
