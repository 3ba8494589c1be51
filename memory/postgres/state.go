package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The server's own state: audit log, stored results, workspace files and
// tool shapes, as memory/audit.go, results.go, workspace.go and
// toolshapes.go keep them on SQLite.

// RecordExecution inserts or updates the audit record e.ID.
func (s *Store) RecordExecution(ctx context.Context, e memory.Execution) error {
	if e.ID == "" || len(e.ID) > 200 {
		return fmt.Errorf("record execution: %w: id must be 1 to 200 bytes", memory.ErrInvalid)
	}
	if e.CodeHash == "" {
		e.CodeHash = memory.Hash([]byte(e.Code))
	}
	if len(e.Code) > memory.AuditCodeLimit {
		e.Code = e.Code[:memory.AuditCodeLimit]
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = s.now()
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO executions (id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (id) DO UPDATE SET plan_hash = excluded.plan_hash, status = excluded.status, error_kind = excluded.error_kind,
			error_message = excluded.error_message, duration_us = excluded.duration_us, tool_calls = excluded.tool_calls,
			result_bytes = excluded.result_bytes, updated_at = excluded.updated_at`,
			e.ID, e.Principal, e.Session, e.Language, e.Code, e.CodeHash, e.Status, e.ErrorKind, memory.Clip(e.ErrorMessage, 4000),
			e.Duration.Microseconds(), e.ToolCalls, e.ResultBytes, memory.Clip(e.Toolset, 200), memory.Clip(e.ToolsetDescription, 4000),
			ms(e.StartedAt), ms(s.now()), e.Mode, e.PlanHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("record execution %s: %w", e.ID, err)
	}
	return nil
}

// RecordToolCalls appends tool-call records; their execution must have
// been recorded first.
func (s *Store) RecordToolCalls(ctx context.Context, calls ...memory.ToolCall) error {
	if len(calls) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, c := range calls {
			if c.ArgsHash == "" {
				c.ArgsHash = memory.Hash(c.Args)
			}
			if c.StartedAt.IsZero() {
				c.StartedAt = s.now()
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tool_calls (execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, c.ExecutionID, c.Tool, c.ArgsHash, c.Status, c.ErrorCode, c.Duration.Microseconds(), ms(c.StartedAt),
				flag(c.Cached), flag(c.Planned)); err != nil {
				if isCode(err, foreignKeyViolation) {
					return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, c.ExecutionID)
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	return nil
}

// GetExecution returns an audit record with its tool calls.
func (s *Store) GetExecution(ctx context.Context, id string) (memory.Execution, []memory.ToolCall, error) {
	e, err := scanExecution(s.pool.QueryRow(ctx, `SELECT `+fmt.Sprintf(executionColumns, "code")+` FROM executions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Execution{}, nil, fmt.Errorf("execution %s: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Execution{}, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE execution_id = $1 ORDER BY id`, id)
	if err != nil {
		return e, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	calls, err := pgx.CollectRows(rows, scanToolCall)
	if err != nil {
		return e, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	return e, calls, nil
}

// RecordHTTPRequests appends HTTP request records; their execution must
// have been recorded first.
func (s *Store) RecordHTTPRequests(ctx context.Context, reqs ...memory.HTTPRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, r := range reqs {
			if r.StartedAt.IsZero() {
				r.StartedAt = s.now()
			}
			if _, err := tx.Exec(ctx, `INSERT INTO http_requests (execution_id, tool, method, host, status, error, attempt, duration_us, started_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r.ExecutionID, memory.Clip(r.Tool, 200), memory.Clip(r.Method, 16), memory.Clip(r.Host, 255),
				r.Status, memory.Clip(r.Error, 64), max(r.Attempt, 1), r.Duration.Microseconds(), ms(r.StartedAt)); err != nil {
				if isCode(err, foreignKeyViolation) {
					return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, r.ExecutionID)
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record http requests: %w", err)
	}
	return nil
}

// HTTPRequests returns the HTTP requests of an execution, in the order
// they were sent.
func (s *Store) HTTPRequests(ctx context.Context, executionID string) ([]memory.HTTPRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT execution_id, tool, method, host, status, error, attempt, duration_us, started_at
		FROM http_requests WHERE execution_id = $1 ORDER BY id`, executionID)
	if err != nil {
		return nil, fmt.Errorf("http requests of %s: %w", executionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.HTTPRequest, error) {
		var r memory.HTTPRequest
		var us, started int64
		err := row.Scan(&r.ExecutionID, &r.Tool, &r.Method, &r.Host, &r.Status, &r.Error, &r.Attempt, &us, &started)
		r.Duration, r.StartedAt = time.Duration(us)*time.Microsecond, fromMS(started)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("http requests of %s: %w", executionID, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
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

// WriteFile stores data at path p in the caller's workspace; created
// reports a new file.
func (s *Store) WriteFile(ctx context.Context, p string, data []byte) (memory.FileInfo, bool, error) {
	return s.PutFile(ctx, memory.FileInput{Path: p, Data: data})
}

// PutFile is WriteFile with provenance.
func (s *Store) PutFile(ctx context.Context, in memory.FileInput) (memory.FileInfo, bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	p, data := in.Path, in.Data
	if err := memory.ValidatePath(p); err != nil {
		return memory.FileInfo{}, false, memory.PathToolError(err)
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.FileInfo{}, false, err
	}
	if int64(len(data)) > s.lim.MaxFileBytes {
		return memory.FileInfo{}, false, memory.TooLarge("file %s is %d bytes; the limit per file is %d bytes", p, len(data), s.lim.MaxFileBytes)
	}
	blob := s.enc.EncodeAll(data, nil)
	now := s.now().UTC().Truncate(time.Millisecond)
	fi := memory.FileInfo{Path: p, Size: int64(len(data)), StoredSize: int64(len(blob)), SHA256: memory.Hash(data), CreatedAt: now, UpdatedAt: now, Provenance: prov}
	var created bool
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// Serialize the principal's writes: the quota check reads what
		// the others wrote.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('workspace:' || $1, 0))`, principal); err != nil {
			return err
		}
		var total, count, old, oldCreated int64
		err := tx.QueryRow(ctx, `SELECT size, created_at FROM workspace_files WHERE principal = $1 AND path = $2`, principal, p).Scan(&old, &oldCreated)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			created = true
		case err != nil:
			return err
		default:
			fi.CreatedAt = fromMS(oldCreated)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(size), 0), count(*) FROM workspace_files WHERE principal = $1`, principal).Scan(&total, &count); err != nil {
			return err
		}
		if created && count >= int64(s.lim.MaxWorkspaceFiles) {
			return memory.Quota("the workspace holds %d files, the limit; remove some first", count)
		}
		if after := total - old + fi.Size; after > s.lim.MaxWorkspaceBytes {
			return memory.Quota("writing %s (%d bytes) would bring the workspace to %d bytes; the limit is %d bytes; remove files first",
				p, fi.Size, after, s.lim.MaxWorkspaceBytes)
		}
		_, err = tx.Exec(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
			sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
			principal, p, fi.Size, fi.StoredSize, fi.SHA256, blob, ms(fi.CreatedAt), ms(now), provArg(prov))
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return memory.FileInfo{}, false, te
		}
		return memory.FileInfo{}, false, fmt.Errorf("write file: %w", err)
	}
	return fi, created, nil
}

// ReadFile returns the caller's file at path p.
func (s *Store) ReadFile(ctx context.Context, p string) (memory.FileInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return memory.FileInfo{}, nil, memory.PathToolError(err)
	}
	var fi memory.FileInfo
	var blob []byte
	var c, u int64
	var prov *string
	err := s.pool.QueryRow(ctx, `SELECT path, size, stored_size, sha256, data, created_at, updated_at, provenance FROM workspace_files
		WHERE principal = $1 AND path = $2`, principal, p).Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &blob, &c, &u, &prov)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.FileInfo{}, nil, memory.NotFound("no file %s in the workspace; workspace.list() shows the files", p)
	}
	if err != nil {
		return memory.FileInfo{}, nil, fmt.Errorf("read file %s: %w", p, err)
	}
	fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provOf(prov)
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, fi.Size))
	if err != nil {
		return memory.FileInfo{}, nil, fmt.Errorf("read file %s: decompress: %w", p, err)
	}
	return fi, data, nil
}

// ListFiles returns the caller's files whose path starts with prefix.
func (s *Store) ListFiles(ctx context.Context, prefix string) (memory.WorkspaceListing, error) {
	principal := tools.CallerFrom(ctx).Principal
	if len(prefix) > memory.MaxPathBytes || containsNUL(prefix) || (len(prefix) > 0 && prefix[0] == '/') {
		return memory.WorkspaceListing{}, memory.PathToolError(&memory.PathError{Path: memory.Clip(prefix, 80), Reason: "not a valid prefix: relative, no NUL, at most 256 bytes"})
	}
	out := memory.WorkspaceListing{Files: []memory.FileInfo{}, QuotaBytes: s.lim.MaxWorkspaceBytes, QuotaFiles: s.lim.MaxWorkspaceFiles}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT path, size, stored_size, sha256, created_at, updated_at, provenance FROM workspace_files
			WHERE principal = $1 AND left(path, $2) = $3 ORDER BY path COLLATE "C"`, principal, len([]rune(prefix)), prefix)
		if err != nil {
			return err
		}
		files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.FileInfo, error) {
			var fi memory.FileInfo
			var c, u int64
			var prov *string
			err := r.Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &c, &u, &prov)
			fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provOf(prov)
			return fi, err
		})
		if err != nil {
			return err
		}
		out.Files = append(out.Files, files...)
		return tx.QueryRow(ctx, `SELECT coalesce(sum(size), 0) FROM workspace_files WHERE principal = $1`, principal).Scan(&out.TotalBytes)
	})
	if err != nil {
		return memory.WorkspaceListing{}, fmt.Errorf("list files: %w", err)
	}
	out.Count = len(out.Files)
	return out, nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// RemoveFile removes the caller's file at path p; removed is false when
// there was none.
func (s *Store) RemoveFile(ctx context.Context, p string) (bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return false, memory.PathToolError(err)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM workspace_files WHERE principal = $1 AND path = $2`, principal, p)
	if err != nil {
		return false, fmt.Errorf("remove file: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// PutToolShape stores what a tool source learned about a tool's results.
func (s *Store) PutToolShape(ctx context.Context, source, tool string, shape json.RawMessage) error {
	compact, err := memory.CheckToolShape(source, tool, shape)
	if err != nil {
		return err
	}
	now := ms(s.now())
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO tool_shapes (source, tool, shape, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (source, tool) DO UPDATE SET shape = excluded.shape, updated_at = excluded.updated_at`,
			source, tool, compact, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM tool_shapes WHERE source = $1 AND tool NOT IN (
			SELECT tool FROM tool_shapes WHERE source = $1 ORDER BY updated_at DESC, tool = $2 DESC, tool LIMIT $3)`,
			source, tool, memory.MaxToolShapes)
		return err
	})
	if err != nil {
		return fmt.Errorf("put tool shape: %w", err)
	}
	return nil
}

// ToolShapes returns the shapes stored for source's tools.
func (s *Store) ToolShapes(ctx context.Context, source string) (map[string]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT tool, shape FROM tool_shapes WHERE source = $1`, source)
	if err != nil {
		return nil, fmt.Errorf("read tool shapes: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var tool, shape string
		if err := rows.Scan(&tool, &shape); err != nil {
			return nil, fmt.Errorf("read tool shapes: %w", err)
		}
		out[tool] = json.RawMessage(shape)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tool shapes: %w", err)
	}
	return out, nil
}
