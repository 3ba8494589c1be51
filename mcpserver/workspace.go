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
	ctx = tools.WithCaller(ctx, s.caller(ctx))
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
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: "application/octet-stream", Blob: base64.StdEncoding.EncodeToString(data)}}, nil
}
