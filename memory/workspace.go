package memory

import (
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

// WorkspaceListing is the caller's files under a prefix, with the usage of
// the whole workspace.
type WorkspaceListing struct {
	Files      []FileInfo `json:"files"`
	Count      int        `json:"count"`
	TotalBytes int64      `json:"total_bytes"`
	QuotaBytes int64      `json:"quota_bytes"`
	QuotaFiles int        `json:"quota_files"`
}
