package postgres

import (
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// ToolSet is the store's operations for memory.RegisterTools.
func (s *Store) ToolSet() memory.ToolSet {
	return memory.ToolSet{Limits: s.lim, Now: s.now, Memories: s, Graph: s, Tasks: s, Consolidator: s, Workspace: s}
}

// Register describes memory's categories in r and registers every memory
// and workspace tool over this store (memory.RegisterTools).
func (s *Store) Register(r *tools.Registry) error { return memory.RegisterTools(r, s.ToolSet()) }
