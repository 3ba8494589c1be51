package memory

import (
	"context"
	"math"

	"github.com/codecell/codecell/tools"
)

// A store tool builds its result from rows it reads — 500 tasks of 32
// KiB, 1,000 entities with their properties, a survivor's merge records
// — and the registry holds a result's decoded size (tools.HoldDecoded)
// only once it is built: 32 task_list calls at once of a run, every one
// refused result_bytes_limit in the end, took the server from 207 to 856
// MiB (issue 19, attack18 K8). So the backends hold each row in the
// call's results in flight as they read it (tools.HoldMore), before they
// read the next, and stop at the bound: what a call has read is held
// before the result is made of it.

// rowFields is what a row's fixed fields take once encoded — ids,
// times, numbers, names of fields — in bytes and JSON values.
const (
	rowFieldBytes  = 256
	rowFieldValues = 16
)

// holdJSON is the bytes and values of a JSON text.
func holdJSON(b []byte) (int64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	return int64(len(b)), tools.JSONValues(b, math.MaxInt)
}

// HoldMemory holds the memory m, just read from the store, in the
// results in flight of the tool call of ctx (tools.HoldMore): a backend
// calls it for each memory it reads, before the next, and returns its
// error.
func HoldMemory(ctx context.Context, m *Memory) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	size, values := memorySize(m)
	return tools.HoldMore(ctx, size, values)
}

// memorySize is what m takes once encoded, in bytes and JSON values.
func memorySize(m *Memory) (int64, int) {
	size, values := holdJSON(m.Metadata)
	psize, pvalues := holdJSON(m.Provenance)
	size += psize + int64(len(m.Content)+len(m.Source)) + rowFieldBytes
	values += pvalues + rowFieldValues + len(m.Tags) + len(m.Entities)
	for _, t := range m.Tags {
		size += int64(len(t)) + 3
	}
	for _, e := range m.Entities {
		size += int64(len(e)) + 3
	}
	return size, values
}

// HoldMerged holds one record of a memory merged into another (Get's
// merged_from), as HoldMemory does a memory.
func HoldMerged(ctx context.Context, m *MergedMemory) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	size, values := int64(len(m.Content)+len(m.ContentSHA256))+rowFieldBytes, rowFieldValues
	if m.Record != nil {
		rsize, rvalues := memorySize(m.Record)
		size, values = size+rsize, values+rvalues
	}
	return tools.HoldMore(ctx, size, values)
}

// holdEntity, holdRelation and holdLink hold what a graph walk read
// (WalkNeighbors), as HoldMemory does a memory.
func holdEntity(ctx context.Context, e *Entity) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	size, values := holdJSON(e.Properties)
	psize, pvalues := holdJSON(e.Provenance)
	return tools.HoldMore(ctx, size+psize+int64(len(e.Name)+len(e.Type)+len(e.Description))+rowFieldBytes, values+pvalues+rowFieldValues)
}

func holdRelation(ctx context.Context, r *Relation) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	size, values := holdJSON(r.Properties)
	psize, pvalues := holdJSON(r.Provenance)
	return tools.HoldMore(ctx, size+psize+int64(len(r.From)+len(r.To)+len(r.Type))+rowFieldBytes, values+pvalues+rowFieldValues)
}

func holdLinks(ctx context.Context, ls []MemoryLink) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	var size int64
	var values int
	for i := range ls {
		psize, pvalues := holdJSON(ls[i].Provenance)
		size += psize + int64(len(ls[i].Content)) + rowFieldBytes
		values += pvalues + rowFieldValues
	}
	return tools.HoldMore(ctx, size, values)
}

// HoldFile holds one workspace file's listing entry (ListFiles), as
// HoldMemory does a memory.
func HoldFile(ctx context.Context, f *FileInfo) error {
	if !tools.HoldsDecoded(ctx) {
		return nil
	}
	size, values := holdJSON(f.Provenance)
	return tools.HoldMore(ctx, size+int64(len(f.Path)+len(f.SHA256))+rowFieldBytes, values+rowFieldValues)
}
