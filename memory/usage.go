package memory

// What a principal holds of memories and of the knowledge graph, kept by
// both backends in the same transaction as every change (their
// principal_usage tables), so that a write checks the principal's quotas
// (Limits.MaxMemories, MaxMemoryBytes, MaxGraphEntities,
// MaxGraphRelations, MaxGraphBytes) without counting.

// Kinds of Usage.
const (
	UsageMemories  = "memories"
	UsageEntities  = "entities"
	UsageRelations = "relations"
)

// Usage is what a principal holds, by kind: how many, and their bytes
// (a memory's content, tags and metadata, and the records consolidation
// keeps of merged memories, which add bytes and no entry; an entity's name, description
// and properties; a relation's type and properties).
type Usage map[string]UsageOf

// UsageOf is what a principal holds of one kind.
type UsageOf struct {
	Entries, Bytes int64
}

// CheckUsage reports, for a write that took a principal's usage from
// before to after, the first quota of l it passed: a measure over its
// quota that the write made larger. A write that leaves a measure as it
// was, or makes it smaller (a principal over a quota since lowered can
// still forget, shorten and update), passes.
func (l Limits) CheckUsage(before, after Usage) error {
	l = l.Defaults()
	graphBytes := func(u Usage) int64 { return u[UsageEntities].Bytes + u[UsageRelations].Bytes }
	for _, q := range []struct {
		before, after, max int64
		what, key, fix     string
	}{
		{before[UsageMemories].Entries, after[UsageMemories].Entries, int64(l.MaxMemories), "memories", "memory.max_memories", "forget some (memory.forget)"},
		{before[UsageMemories].Bytes, after[UsageMemories].Bytes, l.MaxMemoryBytes, "bytes of memories (content, tags and metadata, and consolidation's records of merged memories)", "memory.max_memory_bytes", "forget some (memory.forget; forgetting a consolidated memory drops the records of what was merged into it) or keep them shorter"},
		{before[UsageEntities].Entries, after[UsageEntities].Entries, int64(l.MaxGraphEntities), "graph entities", "memory.max_graph_entities", "update the entities it has (memory.entity_upsert of a name it holds) rather than add more"},
		{before[UsageRelations].Entries, after[UsageRelations].Entries, int64(l.MaxGraphRelations), "graph relations", "memory.max_graph_relations", "update the relations it has (memory.relate of a pair and type it holds) rather than add more"},
		{graphBytes(before), graphBytes(after), l.MaxGraphBytes, "bytes of graph entities and relations (names, descriptions, types, properties)", "memory.max_graph_bytes", "keep descriptions and properties shorter"},
	} {
		if q.after > q.max && q.after > q.before {
			return Quota("this write would take the caller to %d %s, past its quota of %d (%s): %s, or have the operator raise %s", q.after, q.what, q.max, q.key, q.fix, q.key)
		}
	}
	return nil
}
