package postgres_test

import (
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/storetest"
)

// The PostgreSQL store serves what the SQLite store serves: the server's
// state (mcpserver.Store), every group of memory's tools, and the
// contract suite's whole surface.
var (
	_ mcpserver.Store       = (*postgres.Store)(nil)
	_ storetest.Backend     = (*postgres.Store)(nil)
	_ memory.MemoryOps      = (*postgres.Store)(nil)
	_ memory.GraphOps       = (*postgres.Store)(nil)
	_ memory.TaskOps        = (*postgres.Store)(nil)
	_ memory.ConsolidateOps = (*postgres.Store)(nil)
	_ memory.WorkspaceOps   = (*postgres.Store)(nil)
)
