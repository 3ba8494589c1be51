package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Each principal's memories have a full-text index of their own, the FTS5
// table memory_fts_<id> named in memory_fts_tables, so that BM25's
// statistics (how many memories, how long on average, how many hold each
// word) are the principal's alone: scores say nothing of other principals'
// memories. A table is created with the principal's first memory and kept
// when its memories are gone.
//
// The cost: five schema entries per principal that has memories (the table
// and FTS5's shadow tables), which every connection parses when it opens
// and again after each new principal's first memory. That suits the
// principals of one server (auth tokens); a deployment with many
// thousands of principals belongs on the PostgreSQL store of DESIGN.md.

// ftsDefinition is the column and tokenizer definition of every index.
const ftsDefinition = `fts5 (content, tags, content = '', contentless_delete = 1,
	tokenize = 'porter unicode61 remove_diacritics 2')`

func ftsName(id int64) string { return fmt.Sprintf("memory_fts_%d", id) }

// ftsTable returns the name of the principal's full-text index, or false
// when the principal has none (no memory yet).
func ftsTable(ctx context.Context, q queryer, principal string) (string, bool, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM memory_fts_tables WHERE principal = ?`, principal).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("full-text index: %w", err)
	}
	return ftsName(id), true, nil
}

// ensureFTSTable returns the name of the principal's full-text index,
// creating it in tx if needed.
func ensureFTSTable(ctx context.Context, tx *sql.Tx, principal string) (string, error) {
	name, ok, err := ftsTable(ctx, tx, principal)
	if err != nil || ok {
		return name, err
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO memory_fts_tables (principal) VALUES (?) RETURNING id`, principal).Scan(&id); err != nil {
		return "", fmt.Errorf("create full-text index: %w", err)
	}
	name = ftsName(id)
	if _, err := tx.ExecContext(ctx, `CREATE VIRTUAL TABLE `+name+` USING `+ftsDefinition); err != nil {
		return "", fmt.Errorf("create full-text index: %w", err)
	}
	return name, nil
}

// indexText adds (or, with replace, replaces) memory id of principal in
// the principal's full-text index.
func indexText(ctx context.Context, tx *sql.Tx, principal string, id int64, content string, tags []string, replace bool) error {
	table, err := ensureFTSTable(ctx, tx, principal)
	if err != nil {
		return err
	}
	if replace {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE rowid = ?`, id); err != nil {
			return fmt.Errorf("index memory text: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (rowid, content, tags) VALUES (?, ?, ?)`, id, content, strings.Join(tags, " ")); err != nil {
		return fmt.Errorf("index memory text: %w", err)
	}
	return nil
}

// unindexText removes memories of principal from its full-text index.
func unindexText(ctx context.Context, tx *sql.Tx, principal string, ids []int64) error {
	table, ok, err := ftsTable(ctx, tx, principal)
	if err != nil || !ok {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE rowid = ?`, id); err != nil {
			return fmt.Errorf("unindex memory %d: %w", id, err)
		}
	}
	return nil
}

// migrateFTSPerPrincipal is the Go step of migration 6: it indexes each
// principal's memories in an index of its own, from the stored content
// and tags (the shared index keeps no text: it is contentless), and drops
// the shared index.
func migrateFTSPerPrincipal(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT principal FROM memories ORDER BY principal`)
	if err != nil {
		return fmt.Errorf("split full-text index: %w", err)
	}
	var principals []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return fmt.Errorf("split full-text index: %w", err)
		}
		principals = append(principals, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("split full-text index: %w", err)
	}
	for _, p := range principals {
		table, err := ensureFTSTable(ctx, tx, p)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (rowid, content, tags)
			SELECT m.id, m.content, coalesce((SELECT group_concat(j.value, ' ' ORDER BY j.key) FROM json_each(m.tags) j), '')
			FROM memories m WHERE m.principal = ? ORDER BY m.id`, p); err != nil {
			return fmt.Errorf("index the memories of a principal: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE memory_fts`); err != nil {
		return fmt.Errorf("drop the shared full-text index: %w", err)
	}
	return nil
}
