package sqlite

import (
	"github.com/codecell/codecell/memory"

	"github.com/codecell/codecell/tools"
)

// Register describes both categories in r and registers the memory and
// workspace tools.
func (s *Store) Register(r *tools.Registry) error {
	return memory.RegisterTools(r, s.ToolSet())
}

// ToolSet is the store's operations for the memory and workspace tools.
func (s *Store) ToolSet() memory.ToolSet {
	return memory.ToolSet{Limits: s.lim, Now: s.now, Memories: s, Graph: s, Tasks: s, Consolidator: s, Workspace: s}
}

var (
	_ memory.MemoryOps      = (*Store)(nil)
	_ memory.GraphOps       = (*Store)(nil)
	_ memory.TaskOps        = (*Store)(nil)
	_ memory.ConsolidateOps = (*Store)(nil)
	_ memory.WorkspaceOps   = (*Store)(nil)
)

// Tools returns the memory tools (category "memory"). Their handlers act
// for tools.CallerFrom(ctx).Principal.
func (s *Store) Tools() []tools.Tool { return s.ToolSet().MemoryTools() }

// WorkspaceTools returns the workspace tools (category "workspace"),
// callable positionally from programs: workspace.write(path, data),
// workspace.read(path), workspace.list(prefix?), workspace.remove(path).
func (s *Store) WorkspaceTools() []tools.Tool { return s.ToolSet().WorkspaceTools() }
