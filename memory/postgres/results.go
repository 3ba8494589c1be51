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
	r, err := scanResult(s.pool.QueryRow(ctx, `SELECT `+resultColumns+` FROM results WHERE id = $1 AND principal = $2`, id, principal))
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
	rows, err := s.pool.Query(ctx, q+` ORDER BY created_at DESC, id COLLATE "C" LIMIT `+a.p(limit), a...)
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM results WHERE id = $1 AND principal = $2`, id, principal)
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
	err = s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO results (id, principal, session, execution_id, content_type, size, stored_size, sha256, data, created_at, provenance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, info.ID, info.Principal, info.Session, info.ExecutionID, info.ContentType,
			info.Size, info.StoredSize, info.SHA256, blob, ms(info.CreatedAt), provArg(prov))
		return err
	})
	if err != nil {
		return memory.ResultInfo{}, fmt.Errorf("put result: %w", err)
	}
	return info, nil
}

// GetResult returns the caller's result id, decompressed. A result of
// another principal is reported as not found.
func (s *Store) GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r memory.ResultInfo
	var at int64
	var prov *string
	var blob []byte
	err := s.pool.QueryRow(ctx, `SELECT id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance, data
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
