package memory

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// SearchLink is what learning from use keeps for tool search: a word of
// a search query (an index term, as package search stems it), a tool a
// run of the same session called after that search, and how many times
// that happened.
type SearchLink struct {
	Term  string `json:"term"`
	Tool  string `json:"tool"`
	Count int    `json:"count"`
}

// Bounds of learning from use.
const (
	// MaxSearchLinks bounds the links the store keeps: learning one more
	// drops the ones learned least recently.
	MaxSearchLinks = 50000
	// MaxSearchLinkTerms and MaxSearchLinkTools bound one LearnSearch.
	MaxSearchLinkTerms = 32
	MaxSearchLinkTools = 16
	maxSearchLinkKey   = 128
)

// CheckSearchLinks checks the terms and tools of a LearnSearch, for every
// backend: each a short word or tool name of printable characters, within
// the bounds.
func CheckSearchLinks(terms, toolNames []string) error {
	if len(terms) > MaxSearchLinkTerms || len(toolNames) > MaxSearchLinkTools {
		return fmt.Errorf("learn search: %d terms and %d tools; at most %d and %d", len(terms), len(toolNames), MaxSearchLinkTerms, MaxSearchLinkTools)
	}
	for _, k := range slices.Concat(terms, toolNames) {
		if k == "" || len(k) > maxSearchLinkKey || strings.IndexFunc(k, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			return fmt.Errorf("learn search: %q: want 1 to %d printable bytes", k, maxSearchLinkKey)
		}
	}
	return nil
}

// LearnSearch records that a search whose terms were terms was followed
// by a run that called toolNames: each pair's count goes up by one. It
// keeps words and tool names only. It is installation state, not a
// principal's.
func (s *Store) LearnSearch(ctx context.Context, terms, toolNames []string) error {
	if err := CheckSearchLinks(terms, toolNames); err != nil {
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
			SELECT rowid FROM search_links ORDER BY updated_at DESC, term, tool LIMIT -1 OFFSET ?)`, MaxSearchLinks)
		return err
	})
	if err != nil {
		return fmt.Errorf("learn search: %w", err)
	}
	return nil
}

// SearchLinks returns every link learned, most counted first.
func (s *Store) SearchLinks(ctx context.Context) ([]SearchLink, error) {
	var out []SearchLink
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT term, tool, count FROM search_links ORDER BY count DESC, term, tool`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l SearchLink
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
