package sqlite

import (
	"database/sql"
	"strings"
	"testing"
)

// TestListingsReadNoRows (issue 19, attack14 I2): a listing reads what
// describes each item from an index that covers it, never the table's
// rows — in a row, the columns after a large value (a skill's code, a
// file's or a result's data) sit behind its overflow pages, which SQLite
// walks to reach them: a workspace.list of 16 files of 8 MiB read all
// 128 MiB.
func TestListingsReadNoRows(t *testing.T) {
	s := openTest(t, Config{})
	for _, c := range []struct {
		name, query string
		args        []any
	}{
		{"skills", listCallableSkillsQuery, []any{"alice", "", "", "alice", 101}},
		{"workspace", listFilesQuery, []any{"alice", 0, ""}},
		{"workspace file's stat", statFileQuery, []any{"alice", "a.txt"}},
		{"results", `SELECT ` + resultColumns + ` FROM results WHERE principal = ? ORDER BY created_at DESC, id LIMIT ?`, []any{"alice", 100}},
		{"results of a session", `SELECT ` + resultColumns + ` FROM results WHERE principal = ? AND session = ? ORDER BY created_at DESC, id LIMIT ?`, []any{"alice", "s", 100}},
		{"results' eviction", `SELECT id, stored_size FROM results WHERE principal = ? AND id <> ? ORDER BY created_at, id LIMIT 1`, []any{"alice", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plan []string
			err := s.read(t.Context(), func(tx *sql.Tx) error {
				rows, err := tx.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+c.query, c.args...)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id, parent, unused int
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						return err
					}
					plan = append(plan, detail)
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range plan {
				if (strings.HasPrefix(step, "SCAN ") || strings.HasPrefix(step, "SEARCH ")) && !strings.Contains(step, "COVERING INDEX") {
					t.Errorf("a step reads the table's rows: %q (plan %q)", step, plan)
				}
			}
		})
	}
}
