package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools/upstream"
)

// store is what the commands need of a store, whichever its backend:
// what the MCP server keeps there (mcpserver.Store), the operations of
// the memory and workspace tools, what the tool sources keep there
// (learned tool shapes, binary results), the memory subcommands and the
// server's upkeep (pruning), and Close. Both backends have all of it.
type store interface {
	mcpserver.Store
	resultPutter
	upstream.Shapes
	ToolSet() memory.ToolSet
	pruner
	Stats(ctx context.Context) (memory.StoreStats, error)
	Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error)
	Export(ctx context.Context, w io.Writer) (memory.ExportReport, error)
	Import(ctx context.Context, r io.Reader) (memory.ImportReport, error)
	Reindex(ctx context.Context, e memory.Embedder) (memory.ReindexReport, error)
	// What search_tools learned from use (memory reset-learning).
	LearnSearch(ctx context.Context, terms, toolNames []string) error
	SearchLinks(ctx context.Context) ([]memory.SearchLink, error)
	ResetSearchLinks(ctx context.Context) (int64, error)
	Close() error
}

// pruner applies the store's retention (prunePeriodically).
type pruner interface {
	Prune(ctx context.Context) (memory.PruneReport, error)
}

// Both backends serve all of it, and the state instances share
// (clusterStore).
var (
	_ store        = (*sqlite.Store)(nil)
	_ store        = (*postgres.Store)(nil)
	_ clusterStore = (*sqlite.Store)(nil)
	_ clusterStore = (*postgres.Store)(nil)
)

// storePath is the database file the configuration names.
func storePath(cfg Config) (string, error) {
	if cfg.Memory.Path != "" {
		return cfg.Memory.Path, nil
	}
	dir, err := cfg.dataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "codecell.db"), nil
}

// backendOf is the configured backend's name: sqlite or postgres.
func backendOf(cfg Config) string {
	if cfg.Memory.Backend == backendPostgres {
		return backendPostgres
	}
	return backendSQLite
}

// embedder builds the configured embedder; nil means the offline default.
func embedder(cfg Config, log *slog.Logger) (memory.Embedder, error) {
	m := cfg.Memory
	if m.Embedder != "openai" {
		if m.EmbedderDimensions > 0 {
			return memory.NewHashEmbedder(m.EmbedderDimensions), nil
		}
		return nil, nil
	}
	e, err := memory.NewOpenAIEmbedder(memory.OpenAIConfig{
		URL:        m.EmbedderURL,
		Model:      m.EmbedderModel,
		Dimensions: m.EmbedderDimensions,
		APIKeyEnv:  m.EmbedderKeyEnv,
		Logger:     log.With("component", "embedder"),
	})
	if err != nil {
		return nil, fmt.Errorf("memory embedder: %w", err)
	}
	return e, nil
}

// storeLimits and storeRetention are the [memory] section's bounds (and
// the cache's as a whole), the same for either backend.
func storeLimits(cfg Config) memory.Limits {
	return memory.Limits{
		MaxFileBytes:             cfg.Memory.WorkspaceMaxFileBytes,
		MaxWorkspaceBytes:        cfg.Memory.WorkspaceMaxBytes,
		MaxCacheBytes:            cfg.Cache.MaxTotalBytes,
		MaxPrincipalResultsBytes: cfg.Memory.ResultsMaxPrincipalBytes,
		MaxResultsBytes:          cfg.Memory.ResultsMaxBytes,
		MaxPrincipalJournalBytes: cfg.Limits.MaxPrincipalJournalBytes,
		MaxPrincipalPlanBytes:    cfg.Limits.MaxPrincipalPlanBytes,
		MaxMemories:              cfg.Memory.MaxMemories,
		MaxMemoryBytes:           cfg.Memory.MaxMemoryBytes,
		MaxGraphEntities:         cfg.Memory.MaxGraphEntities,
		MaxGraphRelations:        cfg.Memory.MaxGraphRelations,
		MaxGraphBytes:            cfg.Memory.MaxGraphBytes,
	}
}

func storeRetention(cfg Config) memory.Retention {
	return memory.Retention{
		ExecutionsMaxAge: cfg.Memory.AuditMaxAge.D(),
		ResultsMaxAge:    cfg.Memory.ResultsMaxAge.D(),
		ResultsMaxBytes:  cfg.Memory.ResultsMaxBytes,
	}
}

// openStore opens the store the configuration names, creating it (and
// the directory of a SQLite file, or the schema of a PostgreSQL
// database) on first use.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (store, error) {
	if backendOf(cfg) == backendPostgres {
		return openPostgres(ctx, cfg, log, false)
	}
	return openSQLite(ctx, cfg, log, false)
}

// openStoreReadOnly opens the store the configuration names for reading:
// it creates nothing, and says so when there is no store. A SQLite store
// is opened read-only; a PostgreSQL database must hold codecell's schema
// already (opening it then changes nothing, the schema being current).
func openStoreReadOnly(ctx context.Context, cfg Config, log *slog.Logger) (store, error) {
	if backendOf(cfg) == backendPostgres {
		return openPostgres(ctx, cfg, log, true)
	}
	return openSQLite(ctx, cfg, log, true)
}

func openSQLite(ctx context.Context, cfg Config, log *slog.Logger, readOnly bool) (*sqlite.Store, error) {
	path, err := storePath(cfg)
	if err != nil {
		return nil, err
	}
	emb, err := embedder(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, sqlite.Config{
		Path:      path,
		ReadOnly:  readOnly,
		Embedder:  emb,
		Limits:    storeLimits(cfg),
		Retention: storeRetention(cfg),
	}, log)
	if errors.Is(err, memory.ErrNoStore) {
		return nil, fmt.Errorf("%w: nothing has been stored there yet (a server creates the store when it first runs; -data-dir or memory.path in the configuration name another)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return st, nil
}

// openPostgres opens the PostgreSQL store of memory.dsn. The DSN is never
// printed: it may hold a password.
func openPostgres(ctx context.Context, cfg Config, log *slog.Logger, mustExist bool) (*postgres.Store, error) {
	if mustExist {
		ok, err := hasSchema(ctx, cfg.Memory.DSN)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("open postgres store: %w: the database of memory.dsn holds no codecell schema yet (a server creates it when it first runs; codecell memory migrate copies a SQLite store into it)", memory.ErrNoStore)
		}
	}
	emb, err := embedder(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, postgres.Config{
		DSN:       cfg.Memory.DSN,
		Vectors:   cfg.Memory.PGVectors,
		Embedder:  emb,
		Limits:    storeLimits(cfg),
		Retention: storeRetention(cfg),
	}, log)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return st, nil
}

// hasSchema reports whether the database of dsn holds codecell's schema
// (its migrations table).
func hasSchema(ctx context.Context, dsn string) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var ok bool
	err = conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&ok)
	return ok, err
}
