package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// normalizedExport exports s and blanks what legitimately differs between
// stores: ids and the export time.
func normalizedExport(t *testing.T, s *Store) (string, ExportReport) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := s.Export(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		rec.Exported = time.Time{}
		if rec.Memory != nil {
			rec.Memory.ID = 0
			for i := range rec.Merges {
				rec.Merges[i].ID = 0
			}
		}
		if rec.Entity != nil {
			rec.Entity.ID = 0
		}
		if rec.Relation != nil {
			rec.Relation.ID = 0
		}
		b, _ := json.Marshal(rec)
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n"), rep
}

func TestExportImportRoundTrip(t *testing.T) {
	src := openTest(t, Config{})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	mustRemember(t, src, alice, RememberInput{Content: "alice likes tea", Tags: []string{"prefs"}, Metadata: json.RawMessage(`{"k":[1,2]}`), Entities: []string{"alice"},
		Provenance: json.RawMessage(`{"sources":["crm.get_contact"]}`)})
	mustRemember(t, src, alice, RememberInput{Layer: Episodic, Content: "met bob at the conference", Source: "calendar"})
	if _, err := src.AddTask(alice, TaskInput{Content: "email bob", DueAt: ptr(src.now().Add(48 * 3600e9))}); err != nil {
		t.Fatal(err)
	}
	mustRemember(t, src, bob, RememberInput{Layer: Procedural, Content: "to reset the router hold the button for ten seconds"})
	a := mustRemember(t, src, bob, RememberInput{Content: "the wifi password is on the fridge"})
	mustRemember(t, src, bob, RememberInput{Content: "the wifi password is on the fridge."})
	if _, err := src.Consolidate(bob, ConsolidateInput{}); err != nil {
		t.Fatal(err)
	}
	src.Get(bob, a.ID)
	src.Relate(alice, RelateInput{From: "alice", To: "bob", Type: "knows"})
	src.UpsertEntity(alice, EntityInput{Name: "bob", Type: "person", Properties: json.RawMessage(`{"city":"Oslo"}`)})
	src.SaveSkill(alice, Skill{Name: "hello", Description: "Say hello.", Code: "return 'hi'"})
	src.PutFile(bob, FileInput{Path: "notes/a.txt", Data: []byte("bob's notes"), Provenance: json.RawMessage(`{"sources":["http.fetch"]}`)})
	src.WriteFile(bob, "bin.dat", []byte{0, 1, 2, 255})

	want, rep := normalizedExport(t, src)
	if strings.Count(want, `"provenance"`) != 2 {
		t.Fatalf("export lacks provenance:\n%s", want)
	}
	if rep.Memories != 5 || rep.Entities != 2 || rep.Relations != 1 || rep.Skills != 1 || rep.Files != 2 {
		t.Fatalf("export report: %+v", rep)
	}
	var buf bytes.Buffer
	src.Export(t.Context(), &buf)

	dst := openTest(t, Config{})
	irep, err := dst.Import(t.Context(), bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if irep != rep {
		t.Fatalf("import report %+v, export report %+v", irep, rep)
	}
	got, _ := normalizedExport(t, dst)
	if got != want {
		t.Fatalf("round trip differs:\n got: %s\nwant: %s", got, want)
	}
	// The imported memories are searchable and scoped.
	r, err := dst.Recall(bob, RecallInput{Query: "wifi password"})
	if err != nil || len(r.Results) == 0 || r.Results[0].Content != "the wifi password is on the fridge" {
		t.Fatalf("recall after import: %+v %v", r.Results, err)
	}
	m, _ := dst.Get(bob, r.Results[0].ID)
	if len(m.MergedFrom) != 1 {
		t.Fatalf("provenance lost: %+v", m)
	}
	if r, _ := dst.Recall(alice, RecallInput{Query: "wifi password"}); len(r.Results) != 3 || r.Results[0].KeywordScore != nil {
		t.Fatalf("alice's recall: %+v", r.Results)
	}
}

func TestImportBadInput(t *testing.T) {
	s := openTest(t, Config{})
	for name, in := range map[string]string{
		"empty":      "",
		"not json":   "hello\n",
		"no header":  `{"kind":"memory","memory":{"content":"x"}}` + "\n",
		"bad layer":  `{"kind":"header","version":1}` + "\n" + `{"kind":"memory","memory":{"layer":"dreams","content":"x"}}` + "\n",
		"bad kind":   `{"kind":"header","version":1}` + "\n" + `{"kind":"spaceship"}` + "\n",
		"bad path":   `{"kind":"header","version":1}` + "\n" + `{"kind":"file","file":{"path":"../x","data":""}}` + "\n",
		"later fail": `{"kind":"header","version":1}` + "\n" + `{"kind":"memory","memory":{"layer":"semantic","content":"fine"}}` + "\n" + `{"kind":"skill","skill":{"name":"Bad Name"}}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Import(t.Context(), strings.NewReader(in))
			if err == nil {
				t.Fatal("import succeeded")
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
	st, _ := s.Stats(t.Context())
	if st.Memories != 0 || st.Skills != 0 || st.Files != 0 {
		t.Fatalf("failed imports changed the store: %+v", st)
	}
}
