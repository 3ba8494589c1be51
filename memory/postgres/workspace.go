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
	err := s.db.QueryRow(ctx, `SELECT path, size, stored_size, sha256, data, created_at, updated_at, provenance FROM workspace_files
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

// StatFile describes the caller's file at path p, reading no data and
// no other file's row.
func (s *Store) StatFile(ctx context.Context, p string) (memory.FileInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return memory.FileInfo{}, memory.PathToolError(err)
	}
	var fi memory.FileInfo
	var c, u int64
	var prov *string
	err := s.db.QueryRow(ctx, `SELECT path, size, stored_size, sha256, created_at, updated_at, provenance FROM workspace_files
		WHERE principal = $1 AND path = $2`, principal, p).Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &c, &u, &prov)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.FileInfo{}, memory.NotFound("no file %s in the workspace; workspace.list() shows the files", p)
	}
	if err != nil {
		return memory.FileInfo{}, fmt.Errorf("stat file %s: %w", p, err)
	}
	fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provOf(prov)
	return fi, nil
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
	tag, err := s.db.Exec(ctx, `DELETE FROM workspace_files WHERE principal = $1 AND path = $2`, principal, p)
	if err != nil {
		return false, fmt.Errorf("remove file: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}
