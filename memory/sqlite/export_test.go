package sqlite

import (
	"github.com/codecell/codecell/memory"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// normalizedExport exports s and blanks what legitimately differs between
// stores: ids and the export time.
func normalizedExport(t *testing.T, s *Store) (string, memory.ExportReport) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := s.Export(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec memory.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		rec.Exported = nil
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
	clock := &testClock{t: time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)}
	src := openTest(t, Config{Now: clock.now})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	mustRemember(t, src, alice, memory.RememberInput{Content: "alice likes tea", Tags: []string{"prefs"}, Metadata: json.RawMessage(`{"k":[1,2]}`), Entities: []string{"alice"},
		Provenance: json.RawMessage(`{"sources":["crm.get_contact"]}`)})
	clock.t = clock.t.Add(time.Hour)
	mustRemember(t, src, alice, memory.RememberInput{Layer: memory.Episodic, Content: "met bob at the conference", Source: "calendar"})
	if _, err := src.AddTask(alice, memory.TaskInput{Content: "email bob", DueAt: ptr(src.now().Add(48 * 3600e9))}); err != nil {
		t.Fatal(err)
	}
	mustRemember(t, src, bob, memory.RememberInput{Layer: memory.Procedural, Content: "to reset the router hold the button for ten seconds"})
	a := mustRemember(t, src, bob, memory.RememberInput{Content: "the wifi password is on the fridge"})
	mustRemember(t, src, bob, memory.RememberInput{Content: "the wifi password is on the fridge."})
	clock.t = clock.t.Add(time.Hour)
	if _, err := src.Consolidate(bob, memory.ConsolidateInput{}); err != nil {
		t.Fatal(err)
	}
	src.Get(bob, a.ID)
	src.Relate(alice, memory.RelateInput{From: "alice", To: "bob", Type: "knows"})
	src.UpsertEntity(alice, memory.EntityInput{Name: "bob", Type: "person", Properties: json.RawMessage(`{"city":"Oslo"}`)})
	src.SaveSkill(alice, memory.Skill{Name: "hello", Description: "Say hello.", Code: "return 'hi'"})
	src.SaveSkill(bob, memory.Skill{Name: "weather", Description: "The weather.", Code: "return 'sunny'"})
	src.PublishSkill(bob, "weather")
	src.SaveSkill(bob, memory.Skill{Name: "weather", Description: "The weather.", Code: "return 'rainy'"})
	src.PutFile(bob, memory.FileInput{Path: "notes/a.txt", Data: []byte("bob's notes"), Provenance: json.RawMessage(`{"sources":["http.fetch"]}`)})
	src.WriteFile(bob, "bin.dat", []byte{0, 1, 2, 255})

	want, rep := normalizedExport(t, src)
	if rep != (memory.ExportReport{Memories: 5, Entities: 2, Relations: 1, Skills: 2, PublishedSkills: 1, Files: 2}) {
		t.Fatalf("export report: %+v", rep)
	}
	if got := rep.String(); got != "5 memories, 2 entities, 1 relation, 2 skills, 1 published skill, 2 files" {
		t.Fatalf("report in words: %q", got)
	}
	if strings.Count(want, `"provenance"`) != 2 {
		t.Fatalf("export lacks provenance:\n%s", want)
	}
	// Timestamps are the stored ones, not the time of the export.
	clock.t = clock.t.Add(24 * time.Hour)
	var buf bytes.Buffer
	src.Export(t.Context(), &buf)
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n")[1:] {
		var rec memory.Record
		json.Unmarshal([]byte(line), &rec)
		var created time.Time
		switch {
		case rec.Memory != nil:
			created = rec.Memory.CreatedAt
		case rec.Entity != nil:
			created = rec.Entity.CreatedAt
		case rec.Skill != nil:
			created = rec.Skill.CreatedAt
		case rec.File != nil:
			created = rec.File.CreatedAt
		case rec.Relation != nil:
			created = rec.Relation.CreatedAt
		}
		if created.Before(time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)) || !created.Before(clock.t) {
			t.Errorf("%s record created at %v, not when it was stored", rec.Kind, created)
		}
	}
	if strings.Count(buf.String(), `"exported"`) != 1 || strings.Contains(buf.String(), "0001-01-01") {
		t.Fatalf("the export has a zero time or an export time outside its header:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"session":"s-alice"`) || !strings.Contains(buf.String(), `"uid":"`) {
		t.Fatalf("the export lacks sessions or identities:\n%s", buf.String())
	}

	dst := openTest(t, Config{})
	irep, err := dst.Import(t.Context(), bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if irep.Imported != rep || irep.Skipped != 0 || irep.Updated != (memory.ExportReport{}) {
		t.Fatalf("import report %+v, export report %+v", irep, rep)
	}
	got, _ := normalizedExport(t, dst)
	if got != want {
		t.Fatalf("round trip differs:\n got: %s\nwant: %s", got, want)
	}
	// The imported memories are searchable and scoped, skills resolve.
	r, err := dst.Recall(bob, memory.RecallInput{Query: "wifi password"})
	if err != nil || len(r.Results) == 0 || r.Results[0].Content != "the wifi password is on the fridge" {
		t.Fatalf("recall after import: %+v %v", r.Results, err)
	}
	m, _ := dst.Get(bob, r.Results[0].ID)
	if len(m.MergedFrom) != 1 {
		t.Fatalf("provenance lost: %+v", m)
	}
	if r, _ := dst.Recall(alice, memory.RecallInput{Query: "wifi password"}); len(r.Results) != 3 || r.Results[0].KeywordScore != nil {
		t.Fatalf("alice's recall: %+v", r.Results)
	}
	if sk, err := dst.ResolveSkill(alice, "weather"); err != nil || sk.Code != "return 'sunny'" || sk.Owner != "bob" {
		t.Fatalf("published skill after import: %+v %v", sk, err)
	}
	if sk, err := dst.ResolveSkill(bob, "weather"); err != nil || sk.Code != "return 'rainy'" || !sk.Published {
		t.Fatalf("bob's own copy after import: %+v %v", sk, err)
	}
}

// TestImportIdempotent is issue 9's "memory export && memory import
// doubles the store": importing an export into the store it came from, or
// twice into another, changes nothing; a newer version of a record
// replaces the stored one.
func TestImportIdempotent(t *testing.T) {
	clock := &testClock{t: time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)}
	src := openTest(t, Config{Now: clock.now})
	alice := as(t.Context(), "alice")
	for _, c := range []string{"the staging database moved to Frankfurt", "lunch is at noon", "lunch is at noon"} {
		mustRemember(t, src, alice, memory.RememberInput{Content: c, Entities: []string{"office"}})
	}
	src.Relate(alice, memory.RelateInput{From: "alice", To: "office", Type: "works_at"})
	src.SaveSkill(alice, memory.Skill{Name: "hello", Description: "Say hello.", Code: "return 'hi'"})
	src.PublishSkill(alice, "hello")
	src.WriteFile(alice, "notes.md", []byte("v1"))
	export := func(s *Store) []byte {
		var buf bytes.Buffer
		if _, err := s.Export(t.Context(), &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	backup := export(src)
	before, _ := normalizedExport(t, src)
	const records = 3 + 2 + 1 + 1 + 1 + 1 // memories, entities, relation, skill, published skill, file

	t.Run("into the same store", func(t *testing.T) {
		rep, err := src.Import(t.Context(), bytes.NewReader(backup))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Imported != (memory.ExportReport{}) || rep.Updated != (memory.ExportReport{}) || rep.Skipped != records {
			t.Fatalf("report %+v", rep)
		}
		if got := rep.String(); got != fmt.Sprintf("imported nothing; skipped %d already present", records) {
			t.Fatalf("report in words: %q", got)
		}
		if after, _ := normalizedExport(t, src); after != before {
			t.Fatalf("the import changed the store:\n got: %s\nwant: %s", after, before)
		}
	})

	t.Run("twice into another", func(t *testing.T) {
		dst := openTest(t, Config{})
		first, err := dst.Import(t.Context(), bytes.NewReader(backup))
		if err != nil || first.Imported.Memories != 3 || first.Skipped != 0 {
			t.Fatalf("first import: %+v %v", first, err)
		}
		if got := first.String(); got != "imported 3 memories, 2 entities, 1 relation, 1 skill, 1 published skill, 1 file" {
			t.Fatalf("report in words: %q", got)
		}
		once, _ := normalizedExport(t, dst)
		second, err := dst.Import(t.Context(), bytes.NewReader(backup))
		if err != nil || second.Imported != (memory.ExportReport{}) || second.Skipped != records {
			t.Fatalf("second import: %+v %v", second, err)
		}
		if twice, _ := normalizedExport(t, dst); twice != once {
			t.Fatalf("the second import changed the store:\n got: %s\nwant: %s", twice, once)
		}
	})

	t.Run("newer versions replace older", func(t *testing.T) {
		dst := openTest(t, Config{})
		if _, err := dst.Import(t.Context(), bytes.NewReader(backup)); err != nil {
			t.Fatal(err)
		}
		clock.t = clock.t.Add(time.Hour)
		src.WriteFile(alice, "notes.md", []byte("v2"))
		src.UpsertEntity(alice, memory.EntityInput{Name: "office", Description: "Berlin"})
		mustRemember(t, src, alice, memory.RememberInput{Content: "a new memory"})
		rep, err := dst.Import(t.Context(), bytes.NewReader(export(src)))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Imported != (memory.ExportReport{Memories: 1}) || rep.Updated != (memory.ExportReport{Entities: 1, Files: 1}) || rep.Skipped != records-2 {
			t.Fatalf("report %+v", rep)
		}
		if _, data, _ := dst.ReadFile(alice, "notes.md"); string(data) != "v2" {
			t.Fatalf("file after the newer import: %q", data)
		}
		// The older backup does not undo the newer state.
		if _, err := dst.Import(t.Context(), bytes.NewReader(backup)); err != nil {
			t.Fatal(err)
		}
		if _, data, _ := dst.ReadFile(alice, "notes.md"); string(data) != "v2" {
			t.Fatalf("an older backup replaced a newer file: %q", data)
		}
	})
}

// TestImportVersion1 imports an export written before exports carried
// identities and published skills: memories match by content, and skills
// of the former shared scope become the local user's, published.
func TestImportVersion1(t *testing.T) {
	v1 := `{"kind":"header","version":1,"embedder":"hash-384"}
{"kind":"memory","principal":"alice","memory":{"id":7,"layer":"semantic","content":"tea at four","tags":[],"metadata":{},"importance":0.5,"session":"abc","created_at":"2024-01-02T03:04:05.006Z","updated_at":"2024-01-02T03:04:05.006Z","access_count":2}}
{"kind":"skill","principal":"skills","skill":{"name":"shared","description":"d","code":"return 1","language":"javascript","version":3,"created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z"}}
{"kind":"skill","principal":"bob","skill":{"name":"mine","description":"d","code":"return 2","language":"javascript","version":1,"created_at":"2024-01-01T00:00:00Z","updated_at":"2024-01-01T00:00:00Z"}}
`
	s := openTest(t, Config{})
	rep, err := s.Import(t.Context(), strings.NewReader(v1))
	if err != nil || rep.Imported != (memory.ExportReport{Memories: 1, Skills: 2}) {
		t.Fatalf("import: %+v %v", rep, err)
	}
	rep, err = s.Import(t.Context(), strings.NewReader(v1))
	if err != nil || rep.Imported != (memory.ExportReport{}) || rep.Skipped != 3 {
		t.Fatalf("second import: %+v %v", rep, err)
	}
	if sk, err := s.ResolveSkill(as(t.Context(), "carol"), "shared"); err != nil || sk.Owner != "local" || sk.Version != 3 {
		t.Fatalf("shared skill: %+v %v", sk, err)
	}
	if _, err := s.ResolveSkill(as(t.Context(), "carol"), "mine"); err == nil {
		t.Fatal("bob's skill became callable by others")
	}
	r, err := s.Recall(as(t.Context(), "alice"), memory.RecallInput{Query: "tea"})
	if err != nil || len(r.Results) != 1 || r.Results[0].Session != "abc" || r.Results[0].AccessCount != 2 {
		t.Fatalf("recall: %+v %v", r.Results, err)
	}
}

// TestImportPublishedConflict: a published skill whose name another owner
// has published here is reported, not imported, and the rest is.
func TestImportPublishedConflict(t *testing.T) {
	src := openTest(t, Config{})
	src.SaveSkill(as(t.Context(), "bob"), memory.Skill{Name: "report", Description: "d", Code: "return 'bob'"})
	src.PublishSkill(as(t.Context(), "bob"), "report")
	var buf bytes.Buffer
	src.Export(t.Context(), &buf)

	dst := openTest(t, Config{})
	dst.SaveSkill(as(t.Context(), "carol"), memory.Skill{Name: "report", Description: "d", Code: "return 'carol'"})
	dst.PublishSkill(as(t.Context(), "carol"), "report")
	rep, err := dst.Import(t.Context(), &buf)
	if err != nil || rep.Imported != (memory.ExportReport{Skills: 1}) || len(rep.Conflicts) != 1 || !strings.Contains(rep.String(), "not imported: skill report of bob (carol has published that name)") {
		t.Fatalf("import: %+v %v\n%s", rep, err, rep)
	}
	if sk, _ := dst.ResolveSkill(as(t.Context(), "dave"), "report"); sk.Code != "return 'carol'" {
		t.Fatalf("the import replaced carol's published skill: %+v", sk)
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
			if !errors.Is(err, memory.ErrInvalid) && !errors.Is(err, memory.ErrInvalidPath) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
	st, _ := s.Stats(t.Context())
	if st.Memories != 0 || st.Skills != 0 || st.Files != 0 {
		t.Fatalf("failed imports changed the store: %+v", st)
	}
}
