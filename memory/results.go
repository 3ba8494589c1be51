package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// ResultInfo describes a stored result. Results are kept zstd-compressed;
// Size is the uncompressed size, StoredSize the compressed one.
type ResultInfo struct {
	ID        string `json:"id"`
	Principal string `json:"principal"`
	// Session is kept for the server (ListResults selects by it), never
	// shown: a session id lets its holder act in the session.
	Session     string    `json:"-"`
	ExecutionID string    `json:"execution_id,omitempty"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	StoredSize  int64     `json:"stored_size"`
	SHA256      string    `json:"sha256"`
	CreatedAt   time.Time `json:"created_at"`
	// Provenance is the tool sources the result's data came from (see
	// WithProvenance); absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// PutResultInput is a result to store, uncompressed: the store compresses
// it. The principal comes from the context; Session defaults to the
// caller's.
type PutResultInput struct {
	Session     string
	ExecutionID string
	ContentType string // default application/json
	Data        []byte
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's.
	Provenance json.RawMessage
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random identifier of 26 lower-case letters and digits
// (128 bits), safe in URIs and file names, as the store gives results,
// memories (their uid) and stores.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return idEncoding.EncodeToString(b[:])
}

// PutResult compresses and stores a result and returns its description;
// the ID addresses it (codecell://results/{id}).
func (s *Store) PutResult(ctx context.Context, in PutResultInput) (ResultInfo, error) {
	c := tools.CallerFrom(ctx)
	if int64(len(in.Data)) > s.lim.MaxResultBytes {
		return ResultInfo{}, TooLarge("result is %d bytes; the limit for stored results is %d bytes", len(in.Data), s.lim.MaxResultBytes)
	}
	if in.ContentType == "" {
		in.ContentType = "application/json"
	}
	if in.Session == "" {
		in.Session = c.Session
	}
	prov, err := Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return ResultInfo{}, err
	}
	info := ResultInfo{Provenance: prov,
		ID: NewID(), Principal: c.Principal, Session: in.Session, ExecutionID: in.ExecutionID, ContentType: in.ContentType,
		Size: int64(len(in.Data)), SHA256: Hash(in.Data), CreatedAt: s.now().UTC().Truncate(time.Millisecond),
	}
	blob := s.enc.EncodeAll(in.Data, nil)
	info.StoredSize = int64(len(blob))
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO results (id, principal, session, execution_id, content_type, size, stored_size, sha256, data, created_at, provenance)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, info.ID, info.Principal, info.Session, info.ExecutionID, info.ContentType,
			info.Size, info.StoredSize, info.SHA256, blob, ms(info.CreatedAt), provenanceArg(prov))
		return err
	})
	if err != nil {
		return ResultInfo{}, fmt.Errorf("put result: %w", err)
	}
	return info, nil
}

const resultColumns = `id, principal, session, execution_id, content_type, size, stored_size, sha256, created_at, provenance`

func scanResult(sc interface{ Scan(...any) error }, extra ...any) (ResultInfo, error) {
	var r ResultInfo
	var at int64
	var prov sql.NullString
	dest := append([]any{&r.ID, &r.Principal, &r.Session, &r.ExecutionID, &r.ContentType, &r.Size, &r.StoredSize, &r.SHA256, &at, &prov}, extra...)
	err := sc.Scan(dest...)
	r.CreatedAt, r.Provenance = fromMS(at), provenanceOf(prov)
	return r, err
}

// StatResult describes the caller's result id without reading it.
func (s *Store) StatResult(ctx context.Context, id string) (ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r ResultInfo
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanResult(tx.QueryRowContext(ctx, `SELECT `+resultColumns+` FROM results WHERE id = ? AND principal = ?`, id, principal))
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("result %q not found (results expire; run the code again to recreate it)", Clip(id, 40))
		}
		return err
	})
	return r, err
}

// GetResult returns the caller's result id, decompressed. A result of
// another principal is reported as not found.
func (s *Store) GetResult(ctx context.Context, id string) (ResultInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	var r ResultInfo
	var blob []byte
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanResult(tx.QueryRowContext(ctx, `SELECT `+resultColumns+`, data FROM results WHERE id = ? AND principal = ?`, id, principal), &blob)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("result %q not found (results expire; run the code again to recreate it)", Clip(id, 40))
		}
		return err
	})
	if err != nil {
		return ResultInfo{}, nil, err
	}
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, r.Size))
	if err != nil {
		return ResultInfo{}, nil, fmt.Errorf("get result %s: decompress: %w", id, err)
	}
	return r, data, nil
}

// ReadResult returns bytes [offset, offset+length) of the caller's result,
// decompressed (fewer at the end; none past it), for paging. A negative
// length means to the end.
func (s *Store) ReadResult(ctx context.Context, id string, offset, length int64) (ResultInfo, []byte, error) {
	if offset < 0 {
		return ResultInfo{}, nil, Invalid("offset is %d; it must be 0 or more", offset)
	}
	r, data, err := s.GetResult(ctx, id)
	if err != nil {
		return ResultInfo{}, nil, err
	}
	if offset >= int64(len(data)) {
		return r, []byte{}, nil
	}
	end := int64(len(data))
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return r, data[offset:end], nil
}

// ListResults returns the caller's results, newest first; session, if
// not empty, selects one session's.
func (s *Store) ListResults(ctx context.Context, session string, limit int) ([]ResultInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out := []ResultInfo{}
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
			return NotFound("result %q not found", Clip(id, 40))
		}
		return nil
	})
}
