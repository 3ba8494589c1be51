package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// PutToolShape stores what the tool source named source learned about the
// results of its tool named tool — for an upstream MCP server's tool that
// declares no output schema, the schema inferred from observed results —
// replacing what it stored for that tool before. The content is the
// source's business: any JSON value, kept compacted, at most
// MaxToolShapeBytes. It is server state, not a principal's: every caller
// shares it.
func (s *Store) PutToolShape(ctx context.Context, source, tool string, shape json.RawMessage) error {
	compact, err := memory.CheckToolShape(source, tool, shape)
	if err != nil {
		return err
	}
	now := ms(s.now())
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tool_shapes (source, tool, shape, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (source, tool) DO UPDATE SET shape = excluded.shape, updated_at = excluded.updated_at`,
			source, tool, compact, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM tool_shapes WHERE source = ? AND tool NOT IN (
			SELECT tool FROM tool_shapes WHERE source = ? ORDER BY updated_at DESC, tool = ? DESC, tool LIMIT ?)`,
			source, source, tool, memory.MaxToolShapes)
		return err
	})
	if err != nil {
		return fmt.Errorf("put tool shape: %w", err)
	}
	return nil
}

// ToolShapes returns what the tool source named source stored with
// PutToolShape, by tool name; an empty map when nothing.
func (s *Store) ToolShapes(ctx context.Context, source string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT tool, shape FROM tool_shapes WHERE source = ?`, source)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tool, shape string
			if err := rows.Scan(&tool, &shape); err != nil {
				return err
			}
			out[tool] = json.RawMessage(shape)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read tool shapes: %w", err)
	}
	return out, nil
}
