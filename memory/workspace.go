package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
)

// Workspace path rules.
const (
	MaxPathBytes    = 256
	MaxSegmentBytes = 128
	MaxPathDepth    = 16
)

// ValidatePath checks a workspace path: relative, clean, at most
// MaxPathBytes bytes and MaxPathDepth segments of at most MaxSegmentBytes,
// made of letters, digits and . _ - + @ = , and space (not at the ends of a
// segment), separated by single slashes. It returns a *PathError saying
// what is wrong.
func ValidatePath(p string) error {
	bad := func(reason string) error { return &PathError{Path: Clip(p, 80), Reason: reason} }
	switch {
	case p == "":
		return bad("empty; give a relative path such as notes/todo.md")
	case len(p) > MaxPathBytes:
		return bad(fmt.Sprintf("%d bytes; the limit is %d", len(p), MaxPathBytes))
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return bad("contains a NUL byte")
	case strings.HasPrefix(p, "/"):
		return bad("absolute; workspace paths are relative, such as notes/todo.md")
	case strings.Contains(p, `\`):
		return bad(`contains a backslash; separate directories with "/"`)
	case strings.HasSuffix(p, "/"):
		return bad("ends with a slash; name a file")
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxPathDepth {
		return bad(fmt.Sprintf("%d segments deep; the limit is %d", len(segs), MaxPathDepth))
	}
	for _, seg := range segs {
		switch {
		case seg == "":
			return bad(`contains an empty segment ("//")`)
		case seg == "." || seg == "..":
			return bad(`contains "." or ".." segments; use a clean path without them`)
		case len(seg) > MaxSegmentBytes:
			return bad(fmt.Sprintf("segment of %d bytes; the limit is %d", len(seg), MaxSegmentBytes))
		case seg[0] == ' ' || seg[len(seg)-1] == ' ':
			return bad("a segment starts or ends with a space")
		}
		for _, r := range seg {
			if !pathRune(r) {
				return bad(fmt.Sprintf("contains %q; use letters, digits, space and . _ - + @ = ,", r))
			}
		}
	}
	if path.Clean(p) != p {
		return bad("not a clean path")
	}
	return nil
}

func pathRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case strings.ContainsRune("._-+@=, ", r):
		return true
	}
	return false
}

// PathToolError turns a *PathError from ValidatePath into the
// *tools.Error the workspace operations report.
func PathToolError(err error) error {
	var pe *PathError
	if errors.As(err, &pe) {
		return &tools.Error{Code: CodeInvalidPath, Message: pe.Error(), Err: pe}
	}
	return err
}

// FileInfo describes a workspace file.
type FileInfo struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	StoredSize int64     `json:"stored_size"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Provenance is the tool sources the data came from (see
	// WithProvenance); absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// FileInput is a workspace file to write.
type FileInput struct {
	Path string
	Data []byte
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's.
	Provenance json.RawMessage
}

// WriteFile stores data at path in the caller's workspace, replacing any
// file there, and reports whether it created the file; the provenance is
// the context's (WithProvenance). See PutFile.
func (s *Store) WriteFile(ctx context.Context, p string, data []byte) (FileInfo, bool, error) {
	return s.PutFile(ctx, FileInput{Path: p, Data: data})
}

// PutFile stores in.Data at in.Path in the caller's workspace, with its
// provenance, replacing any file there (and its provenance), and reports
// whether it created the file. The file counts against the limits
// uncompressed.
func (s *Store) PutFile(ctx context.Context, in FileInput) (FileInfo, bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	p, data := in.Path, in.Data
	if err := ValidatePath(p); err != nil {
		return FileInfo{}, false, PathToolError(err)
	}
	prov, err := Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return FileInfo{}, false, err
	}
	if int64(len(data)) > s.lim.MaxFileBytes {
		return FileInfo{}, false, TooLarge("file %s is %d bytes; the limit per file is %d bytes", p, len(data), s.lim.MaxFileBytes)
	}
	blob := s.enc.EncodeAll(data, nil)
	now := s.now().UTC().Truncate(time.Millisecond)
	fi := FileInfo{Path: p, Size: int64(len(data)), StoredSize: int64(len(blob)), SHA256: Hash(data), CreatedAt: now, UpdatedAt: now, Provenance: prov}
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
			return Quota("the workspace holds %d files, the limit; remove some first", count)
		}
		if after := total - old + fi.Size; after > s.lim.MaxWorkspaceBytes {
			return Quota("writing %s (%d bytes) would bring the workspace to %d bytes; the limit is %d bytes; remove files first",
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
			return FileInfo{}, false, te
		}
		return FileInfo{}, false, fmt.Errorf("write file: %w", err)
	}
	return fi, created, nil
}

// ReadFile returns the caller's workspace file at path.
func (s *Store) ReadFile(ctx context.Context, p string) (FileInfo, []byte, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := ValidatePath(p); err != nil {
		return FileInfo{}, nil, PathToolError(err)
	}
	var fi FileInfo
	var blob []byte
	err := s.read(ctx, func(tx *sql.Tx) error {
		var c, u int64
		var prov sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT path, size, stored_size, sha256, data, created_at, updated_at, provenance FROM workspace_files WHERE principal = ? AND path = ?`,
			principal, p).Scan(&fi.Path, &fi.Size, &fi.StoredSize, &fi.SHA256, &blob, &c, &u, &prov)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("no file %s in the workspace; workspace.list() shows the files", p)
		}
		fi.CreatedAt, fi.UpdatedAt, fi.Provenance = fromMS(c), fromMS(u), provenanceOf(prov)
		return err
	})
	if err != nil {
		return FileInfo{}, nil, err
	}
	data, err := s.dec.DecodeAll(blob, make([]byte, 0, fi.Size))
	if err != nil {
		return FileInfo{}, nil, fmt.Errorf("read file %s: decompress: %w", p, err)
	}
	return fi, data, nil
}

// WorkspaceListing is the caller's files under a prefix, with the usage of
// the whole workspace.
type WorkspaceListing struct {
	Files      []FileInfo `json:"files"`
	Count      int        `json:"count"`
	TotalBytes int64      `json:"total_bytes"`
	QuotaBytes int64      `json:"quota_bytes"`
	QuotaFiles int        `json:"quota_files"`
}

// ListFiles lists the caller's workspace files whose path starts with
// prefix ("" for all), sorted by path. A prefix "notes" matches
// "notes/a.md" and "notes.md".
func (s *Store) ListFiles(ctx context.Context, prefix string) (WorkspaceListing, error) {
	principal := tools.CallerFrom(ctx).Principal
	if len(prefix) > MaxPathBytes || strings.IndexByte(prefix, 0) >= 0 || strings.HasPrefix(prefix, "/") {
		return WorkspaceListing{}, PathToolError(&PathError{Path: Clip(prefix, 80), Reason: "not a valid prefix: relative, no NUL, at most 256 bytes"})
	}
	out := WorkspaceListing{Files: []FileInfo{}, QuotaBytes: s.lim.MaxWorkspaceBytes, QuotaFiles: s.lim.MaxWorkspaceFiles}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT path, size, stored_size, sha256, created_at, updated_at, provenance FROM workspace_files
			WHERE principal = ? AND substr(path, 1, ?) = ? ORDER BY path`, principal, len(prefix), prefix)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var fi FileInfo
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
		return WorkspaceListing{}, fmt.Errorf("list files: %w", err)
	}
	out.Count = len(out.Files)
	return out, nil
}

// RemoveFile deletes the caller's workspace file at path and reports
// whether there was one.
func (s *Store) RemoveFile(ctx context.Context, p string) (bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := ValidatePath(p); err != nil {
		return false, PathToolError(err)
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
