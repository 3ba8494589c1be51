package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// CopyTx is a write transaction on a Store's database taken for a bulk
// copy into it (package memory/storecopy): it holds the lock every writer
// of the binary codes takes, and the store's embedder and quantizer stay
// those given until it ends (Reindex waits).
type CopyTx struct {
	pgx.Tx
	Embedder  memory.Embedder
	Quantizer *memory.Quantizer
}

// CopyIn runs fn in one transaction for a bulk copy into the store's
// database, committed when fn returns nil.
func (s *Store) CopyIn(ctx context.Context, fn func(CopyTx) error) error {
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(codesLock)); err != nil {
			return err
		}
		return fn(CopyTx{Tx: tx, Embedder: s.emb, Quantizer: s.quant})
	})
}

// NotifySkills tells the instances on the database that any skill may
// have changed (delivered when the transaction commits).
func (t CopyTx) NotifySkills(ctx context.Context) error {
	var v int64
	if err := t.QueryRow(ctx, `SELECT coalesce((SELECT value::bigint FROM meta WHERE key = 'skills_version'), 0)`).Scan(&v); err != nil {
		return err
	}
	payload, err := json.Marshal(notice{Origin: "copy", Kind: memory.SkillPublished, Version: v})
	if err != nil {
		return err
	}
	_, err = t.Exec(ctx, `SELECT pg_notify($1, $2)`, skillsChannel, string(payload))
	return err
}

// FillEmbeddings gives every stored vector its pgvector embedding when
// the database has memory_embeddings (pgvector.go), and returns how many
// it added; exists is false when the database has no such table.
func (t CopyTx) FillEmbeddings(ctx context.Context) (n int64, exists bool, err error) {
	if _, exists, err = embeddingDims(ctx, t.Tx); err != nil || !exists {
		return 0, exists, err
	}
	n, err = fillEmbeddings(ctx, t.Tx)
	return n, true, err
}
