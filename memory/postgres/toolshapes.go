package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// PutToolShape stores what a tool source learned about a tool's results.
func (s *Store) PutToolShape(ctx context.Context, source, tool string, shape json.RawMessage) error {
	compact, err := memory.CheckToolShape(source, tool, shape)
	if err != nil {
		return err
	}
	now := ms(s.now())
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO tool_shapes (source, tool, shape, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (source, tool) DO UPDATE SET shape = excluded.shape, updated_at = excluded.updated_at`,
			source, tool, compact, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM tool_shapes WHERE source = $1 AND tool NOT IN (
			SELECT tool FROM tool_shapes WHERE source = $1 ORDER BY updated_at DESC, tool = $2 DESC, tool LIMIT $3)`,
			source, tool, memory.MaxToolShapes)
		return err
	})
	if err != nil {
		return fmt.Errorf("put tool shape: %w", err)
	}
	return nil
}

// ToolShapes returns the shapes stored for source's tools.
func (s *Store) ToolShapes(ctx context.Context, source string) (map[string]json.RawMessage, error) {
	rows, err := s.db.Query(ctx, `SELECT tool, shape FROM tool_shapes WHERE source = $1`, source)
	if err != nil {
		return nil, fmt.Errorf("read tool shapes: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var tool, shape string
		if err := rows.Scan(&tool, &shape); err != nil {
			return nil, fmt.Errorf("read tool shapes: %w", err)
		}
		out[tool] = json.RawMessage(shape)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tool shapes: %w", err)
	}
	return out, nil
}
