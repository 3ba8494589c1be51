package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"slices"
	"testing"

	"github.com/codecell/codecell/tools"
)

func TestGraph(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	e, created, err := s.UpsertEntity(ctx, memory.EntityInput{Name: "Alice", Type: "person", Properties: json.RawMessage(`{"team":"payments","x":1}`)})
	if err != nil || !created || e.Type != "person" {
		t.Fatalf("create entity: %+v %v %v", e, created, err)
	}
	e, created, err = s.UpsertEntity(ctx, memory.EntityInput{Name: "alice", Description: "backend engineer", Properties: json.RawMessage(`{"x":null,"tz":"CET"}`)})
	if err != nil || created || e.Name != "Alice" || e.Type != "person" || e.Description != "backend engineer" || string(e.Properties) != `{"team":"payments","tz":"CET"}` {
		t.Fatalf("update entity: %+v %v %v", e, created, err)
	}
	// alice -works_on-> billing -depends_on-> postgres; bob -works_on-> billing; carol isolated.
	rel := func(from, to, typ string) memory.RelateResult {
		t.Helper()
		r, err := s.Relate(ctx, memory.RelateInput{From: from, To: to, Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := rel("alice", "billing", "works_on")
	if !r.Created || !slices.Equal(r.CreatedEntities, []string{"billing"}) || r.Relation.From != "Alice" {
		t.Fatalf("relate: %+v", r)
	}
	rel("billing", "postgres", "depends_on")
	rel("bob", "billing", "works_on")
	rel("postgres", "backups", "stored_in")
	if r := rel("alice", "billing", "works_on"); r.Created {
		t.Fatal("relating again created a second relation")
	}
	s.UpsertEntity(ctx, memory.EntityInput{Name: "carol"})
	mustRemember(t, s, ctx, memory.RememberInput{Content: "billing is written in Go", Entities: []string{"Billing"}})

	names := func(ns []memory.Neighbor) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Entity.Name)
		}
		return out
	}
	cases := []struct {
		name string
		in   memory.NeighborsInput
		want []string
	}{
		{"depth 1 both", memory.NeighborsInput{Entity: "alice"}, []string{"billing"}},
		{"depth 2 both", memory.NeighborsInput{Entity: "alice", Depth: 2}, []string{"billing", "bob", "postgres"}},
		{"depth 3", memory.NeighborsInput{Entity: "alice", Depth: 3}, []string{"billing", "bob", "postgres", "backups"}},
		{"out only", memory.NeighborsInput{Entity: "billing", Direction: memory.Out}, []string{"postgres"}},
		{"in only", memory.NeighborsInput{Entity: "billing", Direction: memory.In}, []string{"Alice", "bob"}},
		{"types", memory.NeighborsInput{Entity: "billing", Types: []string{"depends_on"}}, []string{"postgres"}},
		{"limit", memory.NeighborsInput{Entity: "billing", Limit: 1}, []string{"Alice"}},
		{"isolated", memory.NeighborsInput{Entity: "carol", Depth: 5}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Neighbors(ctx, c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res.Neighbors); !slices.Equal(got, c.want) {
				t.Fatalf("neighbors %v, want %v", got, c.want)
			}
		})
	}
	res, _ := s.Neighbors(ctx, memory.NeighborsInput{Entity: "alice", Depth: 2, Memories: true})
	if res.Neighbors[0].Depth != 1 || res.Neighbors[0].Via.Type != "works_on" || len(res.Neighbors[0].Memories) != 1 {
		t.Fatalf("neighbor details: %+v", res.Neighbors[0])
	}
	p, err := s.Path(ctx, memory.PathInput{From: "alice", To: "backups"})
	if err != nil || !p.Found || p.Length != 3 || !slices.Equal(p.Entities, []string{"Alice", "billing", "postgres", "backups"}) {
		t.Fatalf("path: %+v %v", p, err)
	}
	p, _ = s.Path(ctx, memory.PathInput{From: "alice", To: "bob"})
	if !p.Found || p.Length != 2 || p.Steps[1].From != "bob" {
		t.Fatalf("path against an edge's direction: %+v", p)
	}
	p, _ = s.Path(ctx, memory.PathInput{From: "alice", To: "bob", Direction: memory.Out})
	if p.Found {
		t.Fatalf("directed path found: %+v", p)
	}
	p, _ = s.Path(ctx, memory.PathInput{From: "alice", To: "backups", MaxDepth: 2})
	if p.Found {
		t.Fatalf("path beyond max_depth found: %+v", p)
	}
	p, _ = s.Path(ctx, memory.PathInput{From: "alice", To: "carol"})
	if p.Found {
		t.Fatal("path to an isolated entity")
	}
	_, err = s.Path(ctx, memory.PathInput{From: "alice", To: "nobody"})
	wantCode(t, err, tools.CodeNotFound)
	_, err = s.Neighbors(ctx, memory.NeighborsInput{Entity: "alice", Depth: 9})
	wantCode(t, err, tools.CodeInvalidArguments)
	_, err = s.Relate(ctx, memory.RelateInput{From: "a", To: "b"})
	wantCode(t, err, tools.CodeInvalidArguments)
	// Scoped to the principal.
	_, err = s.Neighbors(as(ctx, "mallory"), memory.NeighborsInput{Entity: "alice"})
	wantCode(t, err, tools.CodeNotFound)
}

func TestNeighborsRelationsWithinResult(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	for _, r := range [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}} {
		if _, err := s.Relate(ctx, memory.RelateInput{From: r[0], To: r[1], Type: "links"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Neighbors(ctx, memory.NeighborsInput{Entity: "a", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Neighbors) != 1 || len(res.Relations) != 1 || !res.Truncated {
		t.Fatalf("truncated neighbourhood: %+v", res)
	}
}
