package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/memory"
)

// testGraphProvenance (issue 19, a1): a value a program wrote into the
// knowledge graph or into a skill lost the sources it came from, so that
// a later session read it with no data-flow label. Entities, relations,
// the memories a walk shows, and skills keep the provenance the server
// states (WithProvenance) and return it on every read; a graph write
// joins the stored one, so that a later write of other data does not
// wash it away.
func testGraphProvenance(t *testing.T, open Opener) {
	st, _ := open(t)
	alice := as(t.Context(), "alice")
	from := func(p string) context.Context { return memory.WithProvenance(alice, json.RawMessage(p)) }
	want := func(what string, got json.RawMessage, p string) {
		t.Helper()
		if string(got) != p {
			t.Errorf("%s: provenance %s, want %s", what, got, p)
		}
	}
	e, _, err := st.UpsertEntity(from(`["crm"]`), memory.EntityInput{Name: "ann@example.com", Type: "person"})
	if err != nil {
		t.Fatal(err)
	}
	want("created entity", e.Provenance, `["crm"]`)
	if e, _, err = st.UpsertEntity(from(`["github"]`), memory.EntityInput{Name: "ann@example.com", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	want("entity written again", e.Provenance, `["crm","github"]`)
	if e, _, err = st.UpsertEntity(alice, memory.EntityInput{Name: "ann@example.com", Description: "e"}); err != nil {
		t.Fatal(err)
	}
	want("entity written with none", e.Provenance, `["crm","github"]`)
	r, err := st.Relate(from(`["crm"]`), memory.RelateInput{From: "ann@example.com", To: "bob@example.com", Type: "knows"})
	if err != nil {
		t.Fatal(err)
	}
	want("relation", r.Relation.Provenance, `["crm"]`)
	if r, err = st.Relate(from(`["vault"]`), memory.RelateInput{From: "ann@example.com", To: "bob@example.com", Type: "knows"}); err != nil {
		t.Fatal(err)
	}
	want("relation written again", r.Relation.Provenance, `["crm","vault"]`)
	if _, err := st.Remember(from(`["mail"]`), memory.RememberInput{Layer: memory.Semantic, Content: "ann's phone is 555-0100", Entities: []string{"ann@example.com", "carol@example.com"}}); err != nil {
		t.Fatal(err)
	}
	// Read in a new session, with no provenance of its own.
	n, err := st.Neighbors(alice, memory.NeighborsInput{Entity: "ann@example.com", Memories: true})
	if err != nil {
		t.Fatal(err)
	}
	want("entity read", n.Entity.Provenance, `["crm","github"]`)
	if len(n.Memories) != 1 {
		t.Fatalf("linked memories %+v", n.Memories)
	}
	want("linked memory", n.Memories[0].Provenance, `["mail"]`)
	for _, nb := range n.Neighbors {
		switch nb.Entity.Name {
		case "bob@example.com":
			want("entity a relation created", nb.Entity.Provenance, `["crm"]`)
			want("relation read", nb.Via.Provenance, `["crm","vault"]`)
		}
	}
	for _, r := range n.Relations {
		want("relation read", r.Provenance, `["crm","vault"]`)
	}
	if n, err = st.Neighbors(alice, memory.NeighborsInput{Entity: "carol@example.com"}); err != nil {
		t.Fatal(err)
	}
	want("entity a memory created", n.Entity.Provenance, `["mail"]`)

	// Skills: a save states its code's provenance (and replaces the
	// last one, as it replaces the code); a snapshot keeps its own.
	if _, err := st.SaveSkill(from(`["crm"]`), memory.Skill{Name: "laundry", Description: "d", Code: `return "ann@example.com"`}); err != nil {
		t.Fatal(err)
	}
	sk, err := st.GetSkill(alice, "laundry")
	if err != nil {
		t.Fatal(err)
	}
	want("skill", sk.Provenance, `["crm"]`)
	snap, err := st.PublishSkill(alice, "laundry")
	if err != nil {
		t.Fatal(err)
	}
	want("published snapshot", snap.Provenance, `["crm"]`)
	if _, err := st.SaveSkill(alice, memory.Skill{Name: "laundry", Description: "d", Code: `return 1`}); err != nil {
		t.Fatal(err)
	}
	if sk, err = st.GetSkill(alice, "laundry"); err != nil {
		t.Fatal(err)
	}
	want("skill saved again", sk.Provenance, ``)
	pub, err := st.PublishedSkills(as(t.Context(), "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pub) != 1 {
		t.Fatalf("published %+v", pub)
	}
	want("snapshot read by another principal", pub[0].Provenance, `["crm"]`)
}
