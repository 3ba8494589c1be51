package mcpserver

import (
	"context"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
)

// Store is what the server keeps in the store: what the engine keeps
// there (engine.Store: the audit log, stored results, skills, plans, the
// cache), and what the resources read back, stored results and workspace
// files. Both of memory's backends implement it (checked in
// cmd/codecell).
type Store interface {
	engine.Store
	resultReader
	workspaceFiles
}

// resultReader reads the whole results that the model got cut.
type resultReader interface {
	StatResult(ctx context.Context, id string) (memory.ResultInfo, error)
	GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error)
}

// workspaceFiles reads the caller's workspace files, and a file's size
// before it is read (one row, not a listing).
type workspaceFiles interface {
	ReadFile(ctx context.Context, path string) (memory.FileInfo, []byte, error)
	StatFile(ctx context.Context, path string) (memory.FileInfo, error)
}
