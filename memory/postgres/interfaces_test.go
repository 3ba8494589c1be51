package postgres_test

import (
	"context"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/storetest"
)

// The PostgreSQL store serves what the SQLite store serves: every group
// of memory's tools and the contract suite's whole surface. That it
// serves the MCP server's state (mcpserver.Store, mcpserver.SharedStore)
// is checked where the two meet, in cmd/codecell (store.go): nothing but
// cmd imports mcpserver, tests included.
var (
	_ storetest.Backend     = (*postgres.Store)(nil)
	_ memory.MemoryOps      = (*postgres.Store)(nil)
	_ memory.GraphOps       = (*postgres.Store)(nil)
	_ memory.TaskOps        = (*postgres.Store)(nil)
	_ memory.ConsolidateOps = (*postgres.Store)(nil)
	_ memory.WorkspaceOps   = (*postgres.Store)(nil)
)

// mcpserver's optional interfaces are unexported (storeReadiness and
// poolStatser in ready.go, quotaStore in ratelimit.go), and cmd checks
// the filter key on the store it shares (config_multi.go): the same
// method sets, spelt out.
var (
	_ interface{ Ready(context.Context) error } = (*postgres.Store)(nil)
	_ interface{ PoolStats() memory.PoolStats } = (*postgres.Store)(nil)
	_ interface {
		CheckFilterKey(context.Context, string) error
	} = (*postgres.Store)(nil)
)
