package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// PutResult compresses and stores a result and returns its description;
// the ID addresses it (codecell://results/{id}).
func (s *Store) PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error) {
	c := tools.CallerFrom(ctx)
	if int64(len(in.Data)) > s.lim.MaxResultBytes {
		return memory.ResultInfo{}, memory.TooLarge("result is %d bytes; the limit for stored results is %d bytes", len(in.Data), s.lim.MaxResultBytes)
	}
	if in.ContentType == "" {
		in.ContentType = "application/json"
	}
	if in.Session == "" {
		in.Session = c.Session
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.ResultInfo{}, err
	}
	info := memory.ResultInfo{Provenance: prov,
		ID: memory.NewID(), Principal: c.Principal, Session: in.Session, ExecutionID: in.ExecutionID, ContentType: in.ContentType,
		Size: int64(len(in.Data)), SHA256: memory.Hash(in.Data), CreatedAt: s.now().UTC().Truncate(time.Millisecond),
	}
	blob := s.enc.EncodeAll(in.Data, nil)
	info.StoredSize = int64(len(blob))
	if err := memory.CheckResultQuota(info.StoredSize, s.lim); err != nil {
		return memory.ResultInfo{}, err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO results (id, principal, session, execution_id, content_type, size, stored_size, sha256, data, created_at, provenance)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, info.ID, info.Principal, info.Session, info.ExecutionID, info.ContentType,
			info.Size, info.StoredSize, info.SHA256, blob, ms(info.CreatedAt), provenanceArg(prov))
		if err != nil {
			return err
		}
		return s.boundResults(ctx, tx, info.Principal, info.ID)
	})
	if err != nil {
		return memory.ResultInfo{}, fmt.Errorf("put result: %w", err)
	}
	return info, nil
}

// boundResults keeps the stored results within the store's bounds once
// id, principal's result, is written: past the principal's bound it
// deletes that principal's oldest results; past the bound of all, the
// oldest of the principal holding the most bytes, then of the next. The
// result just written stays (CheckResultQuota has refused one that
// cannot fit).
func (s *Store) boundResults(ctx context.Context, tx *sql.Tx, principal, id string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM results WHERE id IN (SELECT id FROM
		(SELECT id, sum(stored_size) OVER (ORDER BY id = ? DESC, created_at DESC, id DESC) AS total FROM results WHERE principal = ?) WHERE total > ?)`,
		id, principal, s.lim.MaxPrincipalResultsBytes)
	if err != nil {
		return err
	}
	own, _ := res.RowsAffected()
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(stored_size), 0) FROM results`).Scan(&total); err != nil {
		return err
	}
	var others int
	if total > s.lim.MaxResultsBytes {
		held := map[string]int64{}
		rows, err := tx.QueryContext(ctx, `SELECT principal, SUM(stored_size) FROM results GROUP BY principal`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p string
			var n int64
			if err := rows.Scan(&p, &n); err != nil {
				rows.Close()
				return err
			}
			held[p] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for total > s.lim.MaxResultsBytes {
			p := memory.LargestHolder(held)
			if p == "" {
				break
			}
			var victim string
			var n int64
			err := tx.QueryRowContext(ctx, `SELECT id, stored_size FROM results WHERE principal = ? AND id <> ? ORDER BY created_at, id LIMIT 1`, p, id).Scan(&victim, &n)
			if errors.Is(err, sql.ErrNoRows) {
				held[p] = 0
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM results WHERE id = ?`, victim); err != nil {
				return err
			}
			held[p] -= n
			total -= n
			others++
		}
	}
	if own > 0 || others > 0 {
		s.log.Info("stored results over their bound: evicted the oldest", "own", own, "largest_holders", others,
			"max_principal_results_bytes", s.lim.MaxPrincipalResultsBytes, "max_results_bytes", s.lim.MaxResultsBytes)
	}
	return nil
}

const resultColumns = `id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance`

func scanResult(sc interface{ Scan(...any) error }, extra ...any) (memory.ResultInfo, error) {
	var r memory.ResultInfo
	var at int64
	var prov sql.NullString
	dest := append([]any{&r.ID, &r.Principal, &r.Session, &r.ExecutionID, &r.ContentType, &r.Size, &r.StoredSize, &r.SHA256, &at, &prov}, extra...)
	err := sc.Scan(dest...)
	r.CreatedAt, r.Provenance = fromMS(at), provenanceOf(prov)
	return r, err
}

// StatResult describes the caller's result id without reading it.
func (s *Store) StatResult(ctx context.Context, id string) (memory.ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r memory.ResultInfo
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanResult(tx.QueryRowContext(ctx, `SELECT `+resultColumns+` FROM results WHERE id = ? AND principal = ?`, id, principal))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("result %q not found (results expire; run the code again to recreate it)", memory.Clip(id, 40))
		}
		return err
	})
	return r, err
}

// GetResult returns the caller's result id, decompressed. A result of
// another principal is reported as not found.
func (s *Store) GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r memory.ResultInfo
	var blob []byte
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanResult(tx.QueryRowContext(ctx, `SELECT `+resultColumns+`, data FROM results WHERE id = ? AND principal = ?`, id, principal), &blob)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("result %q not found (results expire; run the code again to recreate it)", memory.Clip(id, 40))
		}
		return err
	})
	if err != nil {
		return memory.ResultInfo{}, nil, err
	}
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, r.Size))
	if err != nil {
		return memory.ResultInfo{}, nil, fmt.Errorf("get result %s: decompress: %w", id, err)
	}
	return r, data, nil
}

// ReadResult returns bytes [offset, offset+length) of the caller's result,
// decompressed (fewer at the end; none past it), for paging. A negative
// length means to the end.
func (s *Store) ReadResult(ctx context.Context, id string, offset, length int64) (memory.ResultInfo, []byte, error) {
	return memory.ReadResult(ctx, s, id, offset, length)
}

// ListResults returns the caller's results, newest first; session, if
// not empty, selects one session's.
func (s *Store) ListResults(ctx context.Context, session string, limit int) ([]memory.ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out := []memory.ResultInfo{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		q := `SELECT ` + resultColumns + ` FROM results WHERE principal = ?`
		args := []any{principal}
		if session != "" {
			q += ` AND session = ?`
			args = append(args, session)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY created_at DESC, id LIMIT ?`, append(args, limit)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanResult(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	return out, nil
}

// DeleteResult deletes the caller's result id.
func (s *Store) DeleteResult(ctx context.Context, id string) error {
	principal := tools.CallerFrom(ctx).Principal
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM results WHERE id = ? AND principal = ?`, id, principal)
		if err != nil {
			return fmt.Errorf("delete result: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return memory.NotFound("result %q not found", memory.Clip(id, 40))
		}
		return nil
	})
}
