package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// This file finds out what a store can do beyond the store interface:
// each operation is an interface declared here and asked for by an
// assertion, so that a backend that gains it (the PostgreSQL store is
// growing) is used without more wiring, and one that lacks it is said to.

// errUnsupported: the store of this backend cannot do op (yet).
type errUnsupported struct {
	op      string
	backend string
}

func (e errUnsupported) Error() string {
	return fmt.Sprintf("%s: the %s store cannot do this yet", e.op, e.backend)
}

// Operations of the memory subcommands and of the server's upkeep.
type (
	pruner interface {
		Prune(ctx context.Context) (memory.PruneReport, error)
	}
	statser interface {
		Stats(ctx context.Context) (memory.StoreStats, error)
	}
	recaller interface {
		Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error)
	}
	exporter interface {
		Export(ctx context.Context, w io.Writer) (memory.ExportReport, error)
	}
	importer interface {
		Import(ctx context.Context, r io.Reader) (memory.ImportReport, error)
	}
	reindexer interface {
		Reindex(ctx context.Context, e memory.Embedder) (memory.ReindexReport, error)
	}
)

var (
	_ pruner    = (*memory.Store)(nil)
	_ statser   = (*memory.Store)(nil)
	_ recaller  = (*memory.Store)(nil)
	_ exporter  = (*memory.Store)(nil)
	_ importer  = (*memory.Store)(nil)
	_ reindexer = (*memory.Store)(nil)
)

// toolSet is the store's operations for the memory and workspace tools:
// the groups its ToolSet names, and those it implements without naming
// them. The memory tools need only remembering, recall, get and forget:
// a store that has those but not update or stats serves the tools, and
// memory.update or memory.stats say that this store cannot do it yet.
// A group the store lacks has no tools, as memory.RegisterTools does.
func toolSet(st store, backend string, log *slog.Logger) memory.ToolSet {
	ts := st.ToolSet()
	if ts.Memories == nil {
		if m, ok := st.(memory.MemoryOps); ok {
			ts.Memories = m
		} else if c, ok := st.(coreMemoryOps); ok {
			ts.Memories = partialMemories{coreMemoryOps: c, backend: backend}
			log.Info("memory.update and memory.stats are not available on this store yet", "backend", backend)
		}
	}
	if ts.Graph == nil {
		if g, ok := st.(memory.GraphOps); ok {
			ts.Graph = g
		}
	}
	if ts.Tasks == nil {
		if t, ok := st.(memory.TaskOps); ok {
			ts.Tasks = t
		}
	}
	if ts.Consolidator == nil {
		if c, ok := st.(memory.ConsolidateOps); ok {
			ts.Consolidator = c
		}
	}
	if ts.Workspace == nil {
		if w, ok := st.(memory.WorkspaceOps); ok {
			ts.Workspace = w
		}
	}
	var missing []string
	for name, absent := range map[string]bool{"graph": ts.Graph == nil, "tasks": ts.Tasks == nil, "consolidate": ts.Consolidator == nil,
		"memories": ts.Memories == nil, "workspace": ts.Workspace == nil} {
		if absent {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		log.Info("tools left out: the store cannot do their operations yet", "backend", backend, "groups", missing)
	}
	return ts
}

// coreMemoryOps is what memory.remember, recall, get and forget call.
type coreMemoryOps interface {
	Remember(ctx context.Context, in memory.RememberInput) (memory.Memory, error)
	Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error)
	Get(ctx context.Context, id int64) (memory.Memory, error)
	Forget(ctx context.Context, in memory.ForgetInput) (memory.ForgetResult, error)
}

// partialMemories serves the memory tools over a store that remembers,
// recalls, gets and forgets: update and stats call the store when it has
// them, and otherwise fail with a message the model can read.
type partialMemories struct {
	coreMemoryOps
	backend string
}

var _ memory.MemoryOps = partialMemories{}

func (p partialMemories) Update(ctx context.Context, in memory.UpdateInput) (memory.Memory, error) {
	if u, ok := p.coreMemoryOps.(interface {
		Update(context.Context, memory.UpdateInput) (memory.Memory, error)
	}); ok {
		return u.Update(ctx, in)
	}
	return memory.Memory{}, tools.Errorf(tools.CodeToolFailed, "memory.update is not available on this server's %s store yet; remember a corrected memory and forget the old one instead", p.backend)
}

func (p partialMemories) MemoryStats(ctx context.Context) (memory.MemoryStats, error) {
	if s, ok := p.coreMemoryOps.(interface {
		MemoryStats(context.Context) (memory.MemoryStats, error)
	}); ok {
		return s.MemoryStats(ctx)
	}
	return memory.MemoryStats{}, tools.Errorf(tools.CodeToolFailed, "memory.stats is not available on this server's %s store yet", p.backend)
}
