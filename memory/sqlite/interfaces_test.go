package sqlite_test

import (
	"context"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storetest"
)

// The SQLite store serves what the PostgreSQL store serves: every group
// of memory's tools (tools.go) and the contract suite's whole surface.
// That it serves the MCP server's state (mcpserver.Store,
// mcpserver.SharedStore) is checked where the two meet, in cmd/codecell
// (store.go): nothing but cmd imports mcpserver, tests included.
var _ storetest.Backend = (*sqlite.Store)(nil)

// mcpserver's optional interfaces are unexported (storeReadiness and
// poolStatser in ready.go, quotaStore in ratelimit.go), and cmd checks
// the filter key on the store it shares (config_multi.go): the same
// method sets, spelt out.
var (
	_ interface{ Ready(context.Context) error } = (*sqlite.Store)(nil)
	_ interface{ PoolStats() memory.PoolStats } = (*sqlite.Store)(nil)
	_ interface {
		CheckFilterKey(context.Context, string) error
	} = (*sqlite.Store)(nil)
)
