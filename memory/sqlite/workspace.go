package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// WriteFile stores data at path in the caller's workspace, replacing any
// file there, and reports whether it created the file; the provenance is
// the context's (WithProvenance). See PutFile.
func (s *Store) WriteFile(ctx context.Context, p string, data []byte) (memory.FileInfo, bool, error) {
	return s.PutFile(ctx, memory.FileInput{Path: p, Data: data})
}

// PutFile stores in.Data at in.Path in the caller's workspace, with its
// provenance, replacing any file there (and its provenance), and reports
// whether it created the file. The file counts against the limits
// uncompressed.
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
	err = s.write(ctx, func(tx *sql.Tx) error {
		var total, count, old, oldCreated int64
		err := tx.QueryRowContext(ctx, `SELECT size, created_at FROM workspace_files WHERE principal = ? AND path = ?`, principal, p).Scan(&old, &oldCreated)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
		case err != nil:
			return err
		default:
			fi.CreatedAt = fromMS(oldCreated)
		}
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(size), 0), count(*) FROM workspace_files WHERE principal = ?`, principal).Scan(&total, &count); err != nil {
			return err
		}
		if created && count >= int64(s.lim.MaxWorkspaceFiles) {
			return memory.Quota("the workspace holds %d files, the limit; remove some first", count)
		}
		if after := total - old + fi.Size; after > s.lim.MaxWorkspaceBytes {
			return memory.Quota("writing %s (%d bytes) would bring the workspace to %d bytes; the limit is %d bytes; remove files first",
				p, fi.Size, after, s.lim.MaxWorkspaceBytes)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
			sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
			principal, p, fi.Size, fi.StoredSize, fi.SHA256, blob, ms(fi.CreatedAt), ms(now), provenanceArg(prov))
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

// ReadFile returns the caller's workspace file at path.
func (s *Store) ReadFile(ctx context.Context, p string) (memory.FileInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return memory.FileInfo{}, nil, memory.PathToolError(err)
	}
	var fi memory.FileInfo
	var blob []byte
	err := s.read(ctx, func(tx *sql.Tx) error {
		var c, u int64
		var prov sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT path, size, stored_size, sha256, data, created_at, updated_at, provenance FROM workspace_files WHERE principal = ? AND path = ?`,
			principal, p).Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &blob, &c, &u, &prov)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("no file %s in the workspace; workspace.list() shows the files", p)
		}
		fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provenanceOf(prov)
		return err
	})
	if err != nil {
		return memory.FileInfo{}, nil, err
	}
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, fi.Size))
	if err != nil {
		return memory.FileInfo{}, nil, fmt.Errorf("read file %s: decompress: %w", p, err)
	}
	return fi, data, nil
}

// StatFile describes the caller's workspace file at path, reading no
// data and no other file's row.
func (s *Store) StatFile(ctx context.Context, p string) (memory.FileInfo, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return memory.FileInfo{}, memory.PathToolError(err)
	}
	var fi memory.FileInfo
	err := s.read(ctx, func(tx *sql.Tx) error {
		var c, u int64
		var prov sql.NullString
		err := tx.QueryRowContext(ctx, statFileQuery, principal, p).Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &c, &u, &prov)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("no file %s in the workspace; workspace.list() shows the files", p)
		}
		fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provenanceOf(prov)
		return err
	})
	if err != nil {
		return memory.FileInfo{}, err
	}
	return fi, nil
}

// ListFiles lists the caller's workspace files whose path starts with
// prefix ("" for all), sorted by path. A prefix "notes" matches
// "notes/a.md" and "notes.md".
func (s *Store) ListFiles(ctx context.Context, prefix string) (memory.WorkspaceListing, error) {
	principal := tools.CallerFrom(ctx).Principal
	if len(prefix) > memory.MaxPathBytes || strings.IndexByte(prefix, 0) >= 0 || strings.HasPrefix(prefix, "/") {
		return memory.WorkspaceListing{}, memory.PathToolError(&memory.PathError{Path: memory.Clip(prefix, 80), Reason: "not a valid prefix: relative, no NUL, at most 256 bytes"})
	}
	out := memory.WorkspaceListing{Files: []memory.FileInfo{}, QuotaBytes: s.lim.MaxWorkspaceBytes, QuotaFiles: s.lim.MaxWorkspaceFiles}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, listFilesQuery, principal, len(prefix), prefix)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var fi memory.FileInfo
			var c, u int64
			var prov sql.NullString
			if err := rows.Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &c, &u, &prov); err != nil {
				return err
			}
			fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provenanceOf(prov)
			out.Files = append(out.Files, fi)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT coalesce(sum(size), 0) FROM workspace_files WHERE principal = ?`, principal).Scan(&out.TotalBytes)
	})
	if err != nil {
		return memory.WorkspaceListing{}, fmt.Errorf("list files: %w", err)
	}
	out.Count = len(out.Files)
	return out, nil
}

// RemoveFile deletes the caller's workspace file at path and reports
// whether there was one.
func (s *Store) RemoveFile(ctx context.Context, p string) (bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.ValidatePath(p); err != nil {
		return false, memory.PathToolError(err)
	}
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM workspace_files WHERE principal = ? AND path = ?`, principal, p)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		removed = n > 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("remove file: %w", err)
	}
	return removed, nil
}

// statFileQuery reads StatFile's file from the listings' index, as
// listFilesQuery does: its row's columns after data sit behind the
// file's overflow pages (an 8 MiB file's), and the planner would take
// the primary key's index, which does not cover them.
const statFileQuery = `SELECT path, size, stored_size, sha256, created_at, updated_at, provenance FROM workspace_files
	INDEXED BY workspace_files_listing WHERE principal = ? AND path = ?`

// listFilesQuery reads ListFiles' files: an index covers it (migration
// 25), so that it reads no file's data.
const listFilesQuery = `SELECT path, size, stored_size, sha256, created_at, updated_at, provenance FROM workspace_files
	WHERE principal = ? AND substr(path, 1, ?) = ? ORDER BY path`
