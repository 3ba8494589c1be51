package memory

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
)

const pathSchema = `{"type": "string", "minLength": 1, "maxLength": 256, "description": "Relative path such as notes/todo.md: letters, digits, space and . _ - + @ = , in segments separated by /; no .., no leading /."}`

var (
	errPathDoc  = tools.ErrorDoc{Code: CodeInvalidPath, Description: "The path is not a clean relative path; the message says why."}
	errQuotaDoc = tools.ErrorDoc{Code: CodeQuotaExceeded, Description: "The workspace would exceed its total size or file count."}
)

type fileOut struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	StoredSize int64     `json:"stored_size"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Created    bool      `json:"created"`
}

type readOut struct {
	Path      string    `json:"path"`
	Data      string    `json:"data"`
	Encoding  string    `json:"encoding"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
	// Provenance names the tools the file's data came from, for the
	// data-flow rules.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// WorkspaceOps is what the workspace tools call.
type WorkspaceOps interface {
	WriteFile(ctx context.Context, p string, data []byte) (FileInfo, bool, error)
	ReadFile(ctx context.Context, p string) (FileInfo, []byte, error)
	ListFiles(ctx context.Context, prefix string) (WorkspaceListing, error)
	RemoveFile(ctx context.Context, p string) (bool, error)
}

// WorkspaceTools returns the workspace tools when ts has a Workspace.
func (ts ToolSet) WorkspaceTools() []tools.Tool {
	s := ts.Workspace
	if s == nil {
		return nil
	}
	lim := ts.Limits.Defaults()
	return storedTools([]tools.Tool{
		{
			Name:    "workspace.write",
			Summary: "Write a file (text, or base64 with encoding: \"base64\") to the persistent workspace, replacing any file there.",
			Description: fmt.Sprintf("Write stores data at path in the caller's workspace, which persists across runs, sessions and restarts. "+
				"data is a string: UTF-8 text, or base64 when encoding is base64. To store an object, JSON.stringify it. Limits: %d bytes per file, "+
				"%d bytes and %d files per workspace.", lim.MaxFileBytes, lim.MaxWorkspaceBytes, lim.MaxWorkspaceFiles),
			InputSchema: raw(`{"type": "object", "properties": {
				"path": ` + pathSchema + `,
				"data": {"type": "string", "description": "The content."},
				"encoding": {"type": "string", "enum": ["utf8", "base64"], "default": "utf8"}
			}, "required": ["path", "data"], "additionalProperties": false}`),
			OutputSchema: raw(`{"type": "object", "properties": {"path": {"type": "string"}, "size": {"type": "integer"}, "stored_size": {"type": "integer"},
				"sha256": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"},
				"created": {"type": "boolean"}}, "required": ["path", "size", "created"]}`),
			Annotations: tools.Annotations{Idempotent: true},
			Examples: []tools.Example{{Title: "Save notes", Args: raw(`{"path": "notes/todo.md", "data": "- ship it\n"}`),
				Result: raw(`{"path": "notes/todo.md", "size": 10, "stored_size": 19, "sha256": "…", "created": true}`)}},
			Errors:     []tools.ErrorDoc{errInvalidDoc, errPathDoc, errTooLarge, errQuotaDoc},
			Related:    []string{"workspace.read", "workspace.list"},
			Positional: []string{"path", "data", "encoding"},
			Handler: tools.Handle(func(ctx context.Context, in struct {
				Path     string `json:"path"`
				Data     string `json:"data"`
				Encoding string `json:"encoding"`
			}) (fileOut, error) {
				var data []byte
				switch in.Encoding {
				case "", "utf8":
					data = []byte(in.Data)
				case "base64":
					b, err := base64.StdEncoding.DecodeString(in.Data)
					if err != nil {
						return fileOut{}, Invalid("data is not valid base64 (standard alphabet, padded): %v", err)
					}
					data = b
				default:
					return fileOut{}, Invalid("encoding %q: use utf8 or base64", Clip(in.Encoding, 20))
				}
				fi, created, err := s.WriteFile(ctx, in.Path, data)
				if err != nil {
					return fileOut{}, err
				}
				return fileOut{Path: fi.Path, Size: fi.Size, StoredSize: fi.StoredSize, SHA256: fi.SHA256, CreatedAt: fi.CreatedAt, UpdatedAt: fi.UpdatedAt, Created: created}, nil
			}),
		},
		{
			Name:    "workspace.read",
			Summary: "Read a workspace file; returns {path, data, encoding, size}.",
			Description: "Read returns the file at path. data is the text when the file is valid UTF-8 (encoding utf8), else base64 " +
				"(encoding base64); pass encoding to force one.",
			InputSchema: raw(`{"type": "object", "properties": {
				"path": ` + pathSchema + `,
				"encoding": {"type": "string", "enum": ["utf8", "base64"]}
			}, "required": ["path"], "additionalProperties": false}`),
			OutputSchema: raw(`{"type": "object", "properties": {"path": {"type": "string"}, "data": {"type": "string"}, "encoding": {"type": "string", "enum": ["utf8", "base64"]},
				"size": {"type": "integer"}, "updated_at": {"type": "string", "format": "date-time"},
				"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools the data came from, when known."}}, "required": ["path", "data", "encoding", "size"]}`),
			Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
			Examples:    []tools.Example{{Args: raw(`{"path": "notes/todo.md"}`), Result: raw(`{"path": "notes/todo.md", "data": "- ship it\n", "encoding": "utf8", "size": 10}`)}},
			Errors:      []tools.ErrorDoc{errInvalidDoc, errPathDoc, errNotFound},
			Related:     []string{"workspace.write", "workspace.list"},
			Positional:  []string{"path", "encoding"},
			// The file and its text are held at once while the result
			// is made (issue 19, attack9 D7: 64 reads at once of a
			// 7.5 MiB file took 1.45 GiB); the JSON it becomes is held
			// as the registry counts it.
			MaxResultBytes: 2 * lim.MaxFileBytes,
			// The file's bytes in base64 are its data too: the flow knows
			// them decoded (issue 19, attack21 P2).
			Stored: &tools.StoredFields{Provenance: []string{"provenance"}, Base64: []string{"data"}},
			Handler: tools.Handle(func(ctx context.Context, in struct {
				Path     string `json:"path"`
				Encoding string `json:"encoding"`
			}) (readOut, error) {
				fi, data, err := s.ReadFile(ctx, in.Path)
				if err != nil {
					return readOut{}, err
				}
				out := readOut{Path: fi.Path, Size: fi.Size, UpdatedAt: fi.UpdatedAt, Provenance: fi.Provenance}
				switch {
				case in.Encoding == "base64" || (in.Encoding == "" && !utf8.Valid(data)):
					out.Encoding, out.Data = "base64", base64.StdEncoding.EncodeToString(data)
				case in.Encoding == "" || in.Encoding == "utf8":
					if !utf8.Valid(data) {
						return readOut{}, Invalid("file %s is not UTF-8 text; read it with encoding: \"base64\"", in.Path)
					}
					out.Encoding, out.Data = "utf8", string(data)
				default:
					return readOut{}, Invalid("encoding %q: use utf8 or base64", Clip(in.Encoding, 20))
				}
				return out, nil
			}),
		},
		{
			Name:        "workspace.list",
			Summary:     "List workspace files (optionally under a path prefix) with sizes and the workspace's usage and quota.",
			Description: "List returns the caller's files whose path starts with prefix, sorted by path, with the total size of the workspace and its limits.",
			InputSchema: raw(`{"type": "object", "properties": {
				"prefix": {"type": "string", "maxLength": 256, "description": "Path prefix such as notes/; empty lists everything."}
			}, "additionalProperties": false}`),
			OutputSchema: raw(`{"type": "object", "properties": {
				"files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "size": {"type": "integer"},
					"stored_size": {"type": "integer"}, "sha256": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"},
					"updated_at": {"type": "string", "format": "date-time"},
					"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools the file's data came from, when known."}}}},
				"count": {"type": "integer"}, "total_bytes": {"type": "integer"}, "quota_bytes": {"type": "integer"}, "quota_files": {"type": "integer"}
			}, "required": ["files", "count", "total_bytes", "quota_bytes"]}`),
			Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
			Examples:    []tools.Example{{Args: raw(`{"prefix": "notes/"}`)}},
			Errors:      []tools.ErrorDoc{errPathDoc},
			Related:     []string{"workspace.read", "workspace.remove"},
			Positional:  []string{"prefix"},
			Handler: tools.Handle(func(ctx context.Context, in struct {
				Prefix string `json:"prefix"`
			}) (WorkspaceListing, error) {
				return s.ListFiles(ctx, in.Prefix)
			}),
		},
		{
			Name:         "workspace.remove",
			Summary:      "Delete a workspace file; returns {removed: false} if there was none.",
			Description:  "Remove deletes the file at path from the caller's workspace.",
			InputSchema:  raw(`{"type": "object", "properties": {"path": ` + pathSchema + `}, "required": ["path"], "additionalProperties": false}`),
			OutputSchema: raw(`{"type": "object", "properties": {"path": {"type": "string"}, "removed": {"type": "boolean"}}, "required": ["path", "removed"]}`),
			Annotations:  tools.Annotations{Destructive: true, Idempotent: true},
			Examples:     []tools.Example{{Args: raw(`{"path": "notes/todo.md"}`), Result: raw(`{"path": "notes/todo.md", "removed": true}`)}},
			Errors:       []tools.ErrorDoc{errPathDoc},
			Related:      []string{"workspace.list"},
			Positional:   []string{"path"},
			Handler: tools.Handle(func(ctx context.Context, in struct {
				Path string `json:"path"`
			}) (map[string]any, error) {
				removed, err := s.RemoveFile(ctx, in.Path)
				if err != nil {
					return nil, err
				}
				return map[string]any{"path": in.Path, "removed": removed}, nil
			}),
		},
	})
}
