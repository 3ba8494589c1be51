package sqlite

import (
	"github.com/codecell/codecell/tools"
)

// WorkspaceTools returns the workspace tools (category "workspace"),
// callable positionally from programs: workspace.write(path, data),
// workspace.read(path), workspace.list(prefix?), workspace.remove(path).
func (s *Store) WorkspaceTools() []tools.Tool { return s.ToolSet().WorkspaceTools() }
