package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

const resultColumns = `id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance`

func scanResult(sc interface{ Scan(...any) error }) (memory.ResultInfo, error) {
	var r memory.ResultInfo
	var at int64
	var prov *string
	err := sc.Scan(&r.ID, &r.Principal, &r.Session, &r.ExecutionID, &r.ContentType, &r.Size, &r.StoredSize, &r.SHA256, &at, &prov)
	r.CreatedAt, r.Provenance = fromMS(at), provOf(prov)
	return r, err
}

func resultNotFound(id string) error {
	return memory.NotFound("result %q not found (results expire; run the code again to recreate it)", memory.Clip(id, 40))
}

// StatResult describes the caller's result id without reading it.
func (s *Store) StatResult(ctx context.Context, id string) (memory.ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	r, err := scanResult(s.db.QueryRow(ctx, `SELECT `+resultColumns+` FROM results WHERE id = $1 AND principal = $2`, id, principal))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.ResultInfo{}, resultNotFound(id)
	}
	if err != nil {
		return memory.ResultInfo{}, fmt.Errorf("stat result %s: %w", id, err)
	}
	return r, nil
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
	a := args{principal}
	q := `SELECT ` + resultColumns + ` FROM results WHERE principal = $1`
	if session != "" {
		q += ` AND session = ` + a.p(session)
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY created_at DESC, id COLLATE "C" LIMIT `+a.p(limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.ResultInfo, error) { return scanResult(r) })
	if err != nil {
		return nil, fmt.Errorf("list results: %w", err)
	}
	if out == nil {
		out = []memory.ResultInfo{}
	}
	return out, nil
}

// DeleteResult deletes the caller's result id.
func (s *Store) DeleteResult(ctx context.Context, id string) error {
	principal := tools.CallerFrom(ctx).Principal
	tag, err := s.db.Exec(ctx, `DELETE FROM results WHERE id = $1 AND principal = $2`, id, principal)
	if err != nil {
		return fmt.Errorf("delete result: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return memory.NotFound("result %q not found", memory.Clip(id, 40))
	}
	return nil
}

// PutResult compresses and stores a result and returns its description.
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
	info := memory.ResultInfo{Provenance: prov, ID: memory.NewID(), Principal: c.Principal, Session: in.Session, ExecutionID: in.ExecutionID,
		ContentType: in.ContentType, Size: int64(len(in.Data)), SHA256: memory.Hash(in.Data), CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	blob := s.enc.EncodeAll(in.Data, nil)
	info.StoredSize = int64(len(blob))
	if err := memory.CheckResultQuota(info.StoredSize, s.lim); err != nil {
		return memory.ResultInfo{}, err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// One writer at a time across instances, so that each sees the
		// others' results when it counts (taken before any row is).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, 0)`, resultsLockClass); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO results (id, principal, session, execution_id, content_type, size, stored_size, sha256, data, created_at, provenance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, info.ID, info.Principal, info.Session, info.ExecutionID, info.ContentType,
			info.Size, info.StoredSize, info.SHA256, blob, ms(info.CreatedAt), provArg(prov))
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

// resultsLockClass is the first key of the lock a PutResult holds.
const resultsLockClass = 0x72736c74 // "rslt"

// boundResults keeps the stored results within the store's bounds once
// id, principal's result, is written: past the principal's bound it
// deletes that principal's oldest results; past the bound of all, the
// oldest of the principal holding the most bytes, then of the next. The
// result just written stays (CheckResultQuota has refused one that
// cannot fit).
func (s *Store) boundResults(ctx context.Context, tx pgx.Tx, principal, id string) error {
	tag, err := tx.Exec(ctx, `DELETE FROM results WHERE id IN (SELECT id FROM
		(SELECT id, sum(stored_size) OVER (ORDER BY id = $1 DESC, created_at DESC, id COLLATE "C" DESC) AS total FROM results WHERE principal = $2) t WHERE total > $3)`,
		id, principal, s.lim.MaxPrincipalResultsBytes)
	if err != nil {
		return err
	}
	own := tag.RowsAffected()
	var total int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(stored_size), 0)::bigint FROM results`).Scan(&total); err != nil {
		return err
	}
	var others int
	if total > s.lim.MaxResultsBytes {
		held := map[string]int64{}
		rows, err := tx.Query(ctx, `SELECT principal, SUM(stored_size)::bigint FROM results GROUP BY principal`)
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
			err := tx.QueryRow(ctx, `SELECT id, stored_size FROM results WHERE principal = $1 AND id <> $2 ORDER BY created_at, id COLLATE "C" LIMIT 1`, p, id).Scan(&victim, &n)
			if errors.Is(err, pgx.ErrNoRows) {
				held[p] = 0
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM results WHERE id = $1`, victim); err != nil {
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

// GetResult returns the caller's result id, decompressed. A result of
// another principal is reported as not found.
func (s *Store) GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r memory.ResultInfo
	var at int64
	var prov *string
	var blob []byte
	err := s.db.QueryRow(ctx, `SELECT id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance, data
		FROM results WHERE id = $1 AND principal = $2`, id, principal).Scan(
		&r.ID, &r.Principal, &r.Session, &r.ExecutionID, &r.ContentType, &r.Size, &r.StoredSize, &r.SHA256, &at, &prov, &blob)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.ResultInfo{}, nil, memory.NotFound("result %q not found (results expire; run the code again to recreate it)", memory.Clip(id, 40))
	}
	if err != nil {
		return memory.ResultInfo{}, nil, fmt.Errorf("get result %s: %w", id, err)
	}
	r.CreatedAt, r.Provenance = fromMS(at), provOf(prov)
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, r.Size))
	if err != nil {
		return memory.ResultInfo{}, nil, fmt.Errorf("get result %s: decompress: %w", id, err)
	}
	return r, data, nil
}
