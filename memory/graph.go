package memory

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Entity is a node of the knowledge graph: a person, project, service,
// concept… Names are unique per principal, compared without case.
type Entity struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description,omitempty"`
	Properties  json.RawMessage `json:"properties"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	// Provenance is the tool sources its data came from, every write's
	// together (see WithProvenance and UnionProvenance); absent when none
	// was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// Relation is a directed, typed edge between two entities.
type Relation struct {
	ID         int64           `json:"id"`
	From       string          `json:"from"`
	To         string          `json:"to"`
	Type       string          `json:"type"`
	Weight     float64         `json:"weight"`
	Properties json.RawMessage `json:"properties"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	// Provenance is the tool sources its data came from, every write's
	// together; absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// EntityInput creates or updates an entity. Empty fields keep the stored
// values; Properties are merged into the stored ones (null removes a key).
type EntityInput struct {
	Name        string          `json:"name"`
	Type        string          `json:"type,omitempty"`
	Description string          `json:"description,omitempty"`
	Properties  json.RawMessage `json:"properties,omitempty"`
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's. It joins the stored one (UnionProvenance): what an
	// entity holds keeps the sources of every write.
	Provenance json.RawMessage `json:"-"`
}

const maxTypeLen = 64

func validateType(field, t string) error {
	if len(t) > maxTypeLen {
		return Invalid("%s is %d bytes; the limit is %d", field, len(t), maxTypeLen)
	}
	if strings.IndexFunc(t, func(r rune) bool { return r < ' ' }) >= 0 {
		return Invalid("%s may not contain control characters", field)
	}
	return nil
}

// PrepareEntity checks an entity to upsert as UpsertEntity does and
// returns it trimmed, with its properties compacted.
func PrepareEntity(in EntityInput, lim Limits) (EntityInput, json.RawMessage, error) {
	lim = lim.Defaults()
	in.Name = strings.TrimSpace(in.Name)
	if err := ValidateEntityName("name", in.Name); err != nil {
		return in, nil, err
	}
	if err := validateType("type", in.Type); err != nil {
		return in, nil, err
	}
	if err := validateText("description", in.Description, lim.MaxContentBytes, false); err != nil {
		return in, nil, err
	}
	props, err := normalizeObject("properties", in.Properties, lim.MaxMetadataBytes)
	return in, props, err
}

// MergeEntity returns the stored entity cur updated by the prepared in
// and props at time now, as UpsertEntity does: a non-empty type or
// description replaces the stored one, properties are merged.
func MergeEntity(cur Entity, in EntityInput, props json.RawMessage, lim Limits, now time.Time) (Entity, error) {
	e := cur
	if in.Type != "" {
		e.Type = in.Type
	}
	if in.Description != "" {
		e.Description = in.Description
	}
	if len(in.Properties) > 0 {
		merged, err := mergeObjects(e.Properties, props)
		if err != nil {
			return e, err
		}
		if e.Properties, err = normalizeObject("properties", merged, lim.Defaults().MaxMetadataBytes); err != nil {
			return e, err
		}
	}
	e.UpdatedAt = now
	return e, nil
}

// RelateInput is a directed relation between two entities, created if
// missing.
type RelateInput struct {
	From       string          `json:"from"`
	To         string          `json:"to"`
	Type       string          `json:"type"`
	Weight     *float64        `json:"weight,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's. It joins the relation's stored one, and is that of the
	// entities the relation creates (their names may be data too).
	Provenance json.RawMessage `json:"-"`
}

// RelateResult is the relation and what was created.
type RelateResult struct {
	Relation        Relation `json:"relation"`
	Created         bool     `json:"created"`
	CreatedEntities []string `json:"created_entities,omitempty"`
}

// PrepareRelation checks a relation to record as Relate does and returns
// it trimmed, with its weight (default 1) and compacted properties.
func PrepareRelation(in RelateInput, lim Limits) (RelateInput, float64, json.RawMessage, error) {
	in.From, in.To, in.Type = strings.TrimSpace(in.From), strings.TrimSpace(in.To), strings.TrimSpace(in.Type)
	if err := ValidateEntityName("from", in.From); err != nil {
		return in, 0, nil, err
	}
	if err := ValidateEntityName("to", in.To); err != nil {
		return in, 0, nil, err
	}
	if in.Type == "" {
		return in, 0, nil, Invalid("type is empty; name the relation, such as \"works_on\" or \"depends_on\"")
	}
	if err := validateType("type", in.Type); err != nil {
		return in, 0, nil, err
	}
	weight := 1.0
	if in.Weight != nil {
		if *in.Weight < 0 || *in.Weight > 1e6 || *in.Weight != *in.Weight {
			return in, 0, nil, Invalid("weight is %v; it must be between 0 and 1000000", *in.Weight)
		}
		weight = *in.Weight
	}
	props, err := normalizeObject("properties", in.Properties, lim.Defaults().MaxMetadataBytes)
	return in, weight, props, err
}

// Direction selects which edges a graph walk follows.
type Direction string

// Directions.
const (
	Out  Direction = "out"
	In   Direction = "in"
	Both Direction = "both"
)

// NeighborsInput asks for the entities within Depth edges of Entity.
type NeighborsInput struct {
	Entity    string    `json:"entity"`
	Depth     int       `json:"depth,omitempty"`     // 1..5, default 1
	Direction Direction `json:"direction,omitempty"` // default both
	Types     []string  `json:"types,omitempty"`     // relation types to follow; empty: all
	Limit     int       `json:"limit,omitempty"`     // default 100, at most 1000
	// Memories includes the memories linked to the entity and to each
	// neighbour (up to 20 each).
	Memories bool `json:"include_memories,omitempty"`
}

// Neighbor is an entity reached from the start, with the edge that first
// reached it.
type Neighbor struct {
	Entity   Entity       `json:"entity"`
	Depth    int          `json:"depth"`
	Via      Relation     `json:"via"`
	Memories []MemoryLink `json:"memories,omitempty"`
}

// MemoryLink is a short view of a memory linked to an entity.
type MemoryLink struct {
	ID      int64  `json:"id"`
	Layer   Layer  `json:"layer"`
	Content string `json:"content"`
	// Provenance is the memory's (see Memory.Provenance).
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// NeighborsResult is the start entity and its neighbourhood, in
// breadth-first order (by depth, then name).
type NeighborsResult struct {
	Entity    Entity       `json:"entity"`
	Memories  []MemoryLink `json:"memories,omitempty"`
	Neighbors []Neighbor   `json:"neighbors"`
	Relations []Relation   `json:"relations"`
	Truncated bool         `json:"truncated,omitempty"`
}

const (
	maxDepth     = 5
	maxPathDepth = 8
	maxNeighbors = 1000
	// LinkedPerEntity is how many linked memories Neighbors shows per entity.
	LinkedPerEntity = 20
)

func normalizeWalk(dir *Direction, types []string) ([]string, error) {
	if *dir == "" {
		*dir = Both
	}
	if *dir != Out && *dir != In && *dir != Both {
		return nil, Invalid("direction %q: use out, in or both", Clip(string(*dir), 20))
	}
	out := make([]string, 0, len(types))
	for i, t := range types {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, Invalid("types[%d] is empty", i)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Edge is one step of a walk: the relation Rel and the entity Next it
// leads to.
type Edge struct {
	Rel  int64
	Next int64
}

// GraphReader is what the graph walks (Neighbors, Path) read, within one
// snapshot of a backend's graph.
type GraphReader interface {
	// Edges returns the edges leaving each of ids, following dir and
	// types (all when empty), sorted by (node, next, relation).
	Edges(ctx context.Context, ids []int64, dir Direction, types []string) (map[int64][]Edge, error)
	EntityByID(ctx context.Context, id int64) (Entity, error)
	RelationByID(ctx context.Context, id int64) (Relation, error)
	// LinkedMemories returns up to LinkedPerEntity memories linked to
	// the entity, most important first, then newest.
	LinkedMemories(ctx context.Context, entity int64) ([]MemoryLink, error)
}

// NormalizeNeighbors sets a Neighbors walk's defaults, checks it and
// returns the relation types to follow.
func NormalizeNeighbors(in *NeighborsInput) ([]string, error) {
	if in.Depth == 0 {
		in.Depth = 1
	}
	if in.Depth < 1 || in.Depth > maxDepth {
		return nil, Invalid("depth is %d; it must be between 1 and %d", in.Depth, maxDepth)
	}
	if in.Limit == 0 {
		in.Limit = 100
	}
	if in.Limit < 1 || in.Limit > maxNeighbors {
		return nil, Invalid("limit is %d; it must be between 1 and %d", in.Limit, maxNeighbors)
	}
	return normalizeWalk(&in.Direction, in.Types)
}

// WalkNeighbors walks g breadth-first from start as the normalized in
// asks, as Neighbors does.
func WalkNeighbors(ctx context.Context, g GraphReader, start Entity, in NeighborsInput, types []string) (NeighborsResult, error) {
	res := NeighborsResult{Entity: start}
	err := func() error {
		seen := map[int64]bool{start.ID: true}
		frontier := []int64{start.ID}
		relIDs := map[int64]bool{}
		type found struct {
			id, via int64
			depth   int
		}
		var reached []found
	walk:
		for depth := 1; depth <= in.Depth && len(frontier) > 0; depth++ {
			es, err := g.Edges(ctx, frontier, in.Direction, types)
			if err != nil {
				return err
			}
			var next []int64
			for _, node := range frontier {
				for _, e := range es[node] {
					relIDs[e.Rel] = true
					if seen[e.Next] {
						continue
					}
					if len(reached) >= in.Limit {
						res.Truncated = true
						break walk
					}
					seen[e.Next] = true
					reached = append(reached, found{id: e.Next, via: e.Rel, depth: depth})
					next = append(next, e.Next)
				}
			}
			slices.Sort(next)
			frontier = next
		}
		res.Neighbors = make([]Neighbor, 0, len(reached))
		for _, f := range reached {
			e, err := g.EntityByID(ctx, f.id)
			if err != nil {
				return err
			}
			r, err := g.RelationByID(ctx, f.via)
			if err != nil {
				return err
			}
			res.Neighbors = append(res.Neighbors, Neighbor{Entity: e, Depth: f.depth, Via: r})
		}
		slices.SortStableFunc(res.Neighbors, func(a, b Neighbor) int {
			if a.Depth != b.Depth {
				return a.Depth - b.Depth
			}
			return strings.Compare(strings.ToLower(a.Entity.Name), strings.ToLower(b.Entity.Name))
		})
		ids := make([]int64, 0, len(relIDs))
		for id := range relIDs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		// Keep only the edges between the entities returned.
		kept := map[string]bool{strings.ToLower(start.Name): true}
		for _, n := range res.Neighbors {
			kept[strings.ToLower(n.Entity.Name)] = true
		}
		res.Relations = make([]Relation, 0, len(ids))
		for _, id := range ids {
			r, err := g.RelationByID(ctx, id)
			if err != nil {
				return err
			}
			if kept[strings.ToLower(r.From)] && kept[strings.ToLower(r.To)] {
				res.Relations = append(res.Relations, r)
			}
		}
		if in.Memories {
			var err error
			if res.Memories, err = g.LinkedMemories(ctx, start.ID); err != nil {
				return err
			}
			for i := range res.Neighbors {
				if res.Neighbors[i].Memories, err = g.LinkedMemories(ctx, res.Neighbors[i].Entity.ID); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	if err != nil {
		return NeighborsResult{}, err
	}
	return res, nil
}

// PathInput asks for a shortest path between two entities.
type PathInput struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	MaxDepth  int       `json:"max_depth,omitempty"` // 1..8, default 4
	Direction Direction `json:"direction,omitempty"` // default both
	Types     []string  `json:"types,omitempty"`
}

// PathResult is a shortest path, if one exists within MaxDepth: the
// entities from start to end and the relation of each step (in its stored
// direction).
type PathResult struct {
	Found    bool       `json:"found"`
	Length   int        `json:"length"`
	Entities []string   `json:"entities"`
	Steps    []Relation `json:"steps"`
	// Provenance is that of the entities along the path, together
	// (UnionProvenance): their names are data of those sources.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// NormalizePath sets a Path search's defaults, checks it and returns the
// relation types to follow.
func NormalizePath(in *PathInput) ([]string, error) {
	if in.MaxDepth == 0 {
		in.MaxDepth = 4
	}
	if in.MaxDepth < 1 || in.MaxDepth > maxPathDepth {
		return nil, Invalid("max_depth is %d; it must be between 1 and %d", in.MaxDepth, maxPathDepth)
	}
	return normalizeWalk(&in.Direction, in.Types)
}

// FindPath searches g for a shortest path between two entities as the
// normalized in asks, as Path does.
func FindPath(ctx context.Context, g GraphReader, from, to Entity, in PathInput, types []string) (PathResult, error) {
	res := PathResult{Entities: []string{}, Steps: []Relation{}}
	if from.ID == to.ID {
		res.Found = true
		res.Entities = []string{from.Name}
		res.Provenance = from.Provenance
		return res, nil
	}
	parent := map[int64]Edge{from.ID: {}}
	frontier := []int64{from.ID}
	for depth := 1; depth <= in.MaxDepth && len(frontier) > 0; depth++ {
		es, err := g.Edges(ctx, frontier, in.Direction, types)
		if err != nil {
			return PathResult{}, err
		}
		var next []int64
		for _, node := range frontier {
			for _, e := range es[node] {
				if _, ok := parent[e.Next]; ok {
					continue
				}
				parent[e.Next] = Edge{Rel: e.Rel, Next: node}
				if e.Next == to.ID {
					err := buildPath(ctx, g, parent, from.ID, to.ID, &res)
					return res, err
				}
				next = append(next, e.Next)
			}
		}
		slices.Sort(next)
		frontier = next
	}
	return res, nil
}

func buildPath(ctx context.Context, g GraphReader, parent map[int64]Edge, from, to int64, res *PathResult) error {
	var nodes []int64
	var rels []int64
	for n := to; n != from; n = parent[n].Next {
		nodes = append(nodes, n)
		rels = append(rels, parent[n].Rel)
	}
	nodes = append(nodes, from)
	slices.Reverse(nodes)
	slices.Reverse(rels)
	for _, n := range nodes {
		e, err := g.EntityByID(ctx, n)
		if err != nil {
			return err
		}
		res.Entities = append(res.Entities, e.Name)
		res.Provenance = UnionProvenance(res.Provenance, e.Provenance)
	}
	for _, r := range rels {
		rel, err := g.RelationByID(ctx, r)
		if err != nil {
			return err
		}
		res.Steps = append(res.Steps, rel)
	}
	res.Found = true
	res.Length = len(rels)
	return nil
}
