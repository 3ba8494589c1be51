package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/codecell/codecell/memory"
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

// openStore opens the store the configuration names, creating it and its
// directory on first use.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (*memory.Store, error) {
	return openStoreMode(ctx, cfg, log, false)
}

// openStoreReadOnly opens the store the configuration names for reading
// only: it creates nothing, and says so when there is no store.
func openStoreReadOnly(ctx context.Context, cfg Config, log *slog.Logger) (*memory.Store, error) {
	return openStoreMode(ctx, cfg, log, true)
}

func openStoreMode(ctx context.Context, cfg Config, log *slog.Logger, readOnly bool) (*memory.Store, error) {
	path, err := storePath(cfg)
	if err != nil {
		return nil, err
	}
	emb, err := embedder(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := memory.Open(ctx, memory.Config{
		Path:     path,
		ReadOnly: readOnly,
		Embedder: emb,
		Limits: memory.Limits{
			MaxFileBytes:      cfg.Memory.WorkspaceMaxFileBytes,
			MaxWorkspaceBytes: cfg.Memory.WorkspaceMaxBytes,
		},
		Retention: memory.Retention{
			ExecutionsMaxAge: cfg.Memory.AuditMaxAge.D(),
			ResultsMaxAge:    cfg.Memory.ResultsMaxAge.D(),
		},
	}, log)
	if errors.Is(err, memory.ErrNoStore) {
		return nil, fmt.Errorf("%w: nothing has been stored there yet (a server creates the store when it first runs; -data-dir or memory.path in the configuration name another)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return st, nil
}
