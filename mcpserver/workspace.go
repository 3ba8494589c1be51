package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// WorkspacePrefix is the URI prefix of the caller's workspace files.
const WorkspacePrefix = "codecell://workspace/"

// addWorkspace serves the caller's workspace files as resources.
func (s *Server) addWorkspace() {
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(WorkspacePrefix+"{+path}", "Workspace file",
		mcp.WithTemplateDescription("A file your programs saved with workspace.write; it persists across sessions."),
	), s.readWorkspaceResource)
}

func (s *Server) readWorkspaceResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	p, ok := strings.CutPrefix(uri, WorkspacePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a workspace URI", errResourceNotFound, uri)
	}
	caller := s.caller(ctx)
	ctx = tools.WithCaller(ctx, caller)
	// A read is work outside any run, held as a stored result's read is:
	// the file, the text made of it, the filter's work and the answer's
	// encoding, about six times its bytes. 64 reads at once of an 8 MB
	// file, held by nothing, grew the server by 686 MiB (attack14 I6).
	size, err := s.workspaceFileSize(ctx, p)
	if err != nil {
		return nil, err
	}
	release, err := s.eng.HoldRead(ctx, caller.Principal, fmt.Sprintf("reading workspace file %q takes about %d bytes (six times its %d)", p, 6*size, size), 6*size)
	if err != nil {
		return nil, fmt.Errorf("read workspace file %q: %w", p, err)
	}
	defer untilAnswered(ctx, release)()
	_, data, err := s.cfg.Store.ReadFile(ctx, p)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return nil, fmt.Errorf("%w: no workspace file %q", errResourceNotFound, p)
	case errors.Is(err, memory.ErrInvalidPath):
		return nil, fmt.Errorf("%w: %v", errResourceNotFound, err)
	case err != nil:
		return nil, fmt.Errorf("read workspace file: %w", err)
	}
	if utf8.Valid(data) {
		// A program wrote it: it is filtered and budgeted as anything
		// else the model reads.
		c := s.caller(ctx)
		opts := filter.Options{}
		if sess, err := s.eng.Session(c); err == nil {
			opts.Vault = sess.Vault()
			defer s.eng.Flush(ctx, sess)
		}
		var text string
		if len(data) > 0 {
			opts.Budget = s.maxBudget
			text = s.filter.ApplyText(string(data), opts).Text
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeOf(p), Text: text}}, nil
	}
	// Bytes that are not text pass the filter as an artifact's do
	// (filter.ApplyBytes): a sensitive value in their printable runs is
	// masked in place (attack14 I7: a card number after one 0xFF byte
	// was served as it was).
	out := s.filter.ApplyBytes(data, filter.Options{})
	var meta map[string]any
	if out.Report.Masked > 0 {
		meta = map[string]any{"codecell/filter": map[string]any{"masked": out.Report.Masked, "findings": out.Report.Findings,
			"note": "sensitive values in this file's text were overwritten with '*'"}}
	}
	return []mcp.ResourceContents{mcp.BlobResourceContents{Meta: meta, URI: uri, MIMEType: "application/octet-stream", Blob: base64.StdEncoding.EncodeToString(out.Data)}}, nil
}

// workspaceFileSize returns the size of the caller's workspace file p, or
// 0 when it has none (the read then says so). It reads the file's row
// alone: a listing of its path as a prefix read up to
// max_workspace_files rows a read.
func (s *Server) workspaceFileSize(ctx context.Context, p string) (int64, error) {
	fi, err := s.cfg.Store.StatFile(ctx, p)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return 0, nil
	case errors.Is(err, memory.ErrInvalidPath):
		return 0, fmt.Errorf("%w: %v", errResourceNotFound, err)
	case err != nil:
		return 0, fmt.Errorf("read workspace file: %w", err)
	}
	return fi.Size, nil
}
