package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// LearnSearch records that a search whose terms were terms was followed
// by a run that called toolNames (memory.Store.LearnSearch).
func (s *Store) LearnSearch(ctx context.Context, terms, toolNames []string) error {
	if err := memory.CheckSearchLinks(terms, toolNames); err != nil {
		return err
	}
	if len(terms) == 0 || len(toolNames) == 0 {
		return nil
	}
	now := ms(s.now())
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, term := range terms {
			for _, tool := range toolNames {
				if _, err := tx.Exec(ctx, `INSERT INTO search_links (term, tool, count, updated_at) VALUES ($1, $2, 1, $3)
					ON CONFLICT (term, tool) DO UPDATE SET count = search_links.count + 1, updated_at = excluded.updated_at`, term, tool, now); err != nil {
					return err
				}
			}
		}
		_, err := tx.Exec(ctx, `DELETE FROM search_links WHERE (term, tool) IN (
			SELECT term, tool FROM search_links ORDER BY updated_at DESC, term, tool OFFSET $1)`, memory.MaxSearchLinks)
		return err
	})
	if err != nil {
		return fmt.Errorf("learn search: %w", err)
	}
	return nil
}

// SearchLinks returns every link learned, most counted first.
func (s *Store) SearchLinks(ctx context.Context) ([]memory.SearchLink, error) {
	rows, err := s.db.Query(ctx, `SELECT term, tool, count FROM search_links ORDER BY count DESC, term, tool`)
	if err != nil {
		return nil, fmt.Errorf("read search links: %w", err)
	}
	defer rows.Close()
	var out []memory.SearchLink
	for rows.Next() {
		var l memory.SearchLink
		var n int64
		if err := rows.Scan(&l.Term, &l.Tool, &n); err != nil {
			return nil, fmt.Errorf("read search links: %w", err)
		}
		l.Count = int(n)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read search links: %w", err)
	}
	return out, nil
}

// ResetSearchLinks forgets everything learning from use learned.
func (s *Store) ResetSearchLinks(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM search_links`)
	if err != nil {
		return 0, fmt.Errorf("reset search links: %w", err)
	}
	return tag.RowsAffected(), nil
}
