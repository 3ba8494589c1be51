package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/codecell/codecell/memory"
)

// LearnSearch records that a search whose terms were terms was followed
// by a run that called toolNames: each pair's count goes up by one. It
// keeps words and tool names only. It is installation state, not a
// principal's.
func (s *Store) LearnSearch(ctx context.Context, terms, toolNames []string) error {
	if err := memory.CheckSearchLinks(terms, toolNames); err != nil {
		return err
	}
	if len(terms) == 0 || len(toolNames) == 0 {
		return nil
	}
	now := ms(s.now())
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, term := range terms {
			for _, tool := range toolNames {
				if _, err := tx.ExecContext(ctx, `INSERT INTO search_links (term, tool, count, updated_at) VALUES (?, ?, 1, ?)
					ON CONFLICT (term, tool) DO UPDATE SET count = count + 1, updated_at = excluded.updated_at`, term, tool, now); err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM search_links WHERE rowid IN (
			SELECT rowid FROM search_links ORDER BY updated_at DESC, term, tool LIMIT -1 OFFSET ?)`, memory.MaxSearchLinks)
		return err
	})
	if err != nil {
		return fmt.Errorf("learn search: %w", err)
	}
	return nil
}

// SearchLinks returns every link learned, most counted first.
func (s *Store) SearchLinks(ctx context.Context) ([]memory.SearchLink, error) {
	var out []memory.SearchLink
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT term, tool, count FROM search_links ORDER BY count DESC, term, tool`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l memory.SearchLink
			if err := rows.Scan(&l.Term, &l.Tool, &l.Count); err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read search links: %w", err)
	}
	return out, nil
}

// ResetSearchLinks forgets everything learning from use learned and
// returns how many links it dropped.
func (s *Store) ResetSearchLinks(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM search_links`)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reset search links: %w", err)
	}
	return n, nil
}
