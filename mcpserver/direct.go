package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools"
)

// Expose says which MCP tools the server lists.
type Expose string

// The exposure modes.
const (
	// ExposeCode lists only the code-mode tools: execute_code and the
	// discovery tools. The catalogue is reached from programs.
	ExposeCode Expose = "code"
	// ExposeDirect lists every catalogue tool as an ordinary MCP tool, and
	// not the code-mode tools: the classic one-call-at-a-time server, for
	// hosts and comparisons that want it.
	ExposeDirect Expose = "direct"
	// ExposeBoth lists the code-mode tools and every catalogue tool.
	ExposeBoth Expose = "both"
)

// ParseExpose checks an exposure mode given on the command line.
func ParseExpose(s string) (Expose, error) {
	switch e := Expose(strings.ToLower(s)); e {
	case "", ExposeCode:
		return ExposeCode, nil
	case ExposeDirect, ExposeBoth:
		return e, nil
	}
	return "", fmt.Errorf("expose %q: want code, direct or both", s)
}

// DirectName is the MCP tool name of a catalogue tool in direct mode:
// the qualified name with "__" for the dot, since some hosts accept only
// [A-Za-z0-9_-] in tool names.
func DirectName(qualified string) string {
	return strings.Replace(qualified, ".", "__", 1)
}

// maxDirectName is the longest tool name that hosts accept everywhere.
const maxDirectName = 64

// syncDirect makes the direct-mode MCP tools match the catalogue: it adds
// and replaces the changed tools and deletes the removed ones, at once,
// so that tools/list is the catalogue's. mcp-go tells connected clients
// the list changed, at each change: direct mode's tools/list_changed are
// not coalesced (listChanges).
func (s *Server) syncDirect(ch tools.Change) {
	var del []string
	for _, name := range ch.Removed {
		del = append(del, DirectName(name))
	}
	if len(del) > 0 {
		s.mcp.DeleteTools(del...)
	}
	var add []server.ServerTool
	for _, name := range ch.Added {
		t, ok := s.reg.Get(name)
		if !ok {
			continue
		}
		if st, ok := s.directTool(t); ok {
			add = append(add, st)
		}
	}
	if len(add) > 0 {
		s.mcp.AddTools(add...)
	}
}

func (s *Server) directTools() []server.ServerTool {
	var out []server.ServerTool
	for _, t := range s.reg.List() {
		if st, ok := s.directTool(t); ok {
			out = append(out, st)
		}
	}
	return out
}

// directTool describes a catalogue tool as an MCP tool whose calls go
// through the same validation and dispatch as a program's calls.
func (s *Server) directTool(t *tools.Tool) (server.ServerTool, bool) {
	name := DirectName(t.Name)
	if len(name) > maxDirectName {
		s.log.Warn("tool name too long for direct mode; reach it from code", "tool", t.Name)
		return server.ServerTool{}, false
	}
	desc := t.Summary
	if t.Description != "" {
		desc += "\n\n" + t.Description
	}
	// A source's words are marked as the source's before they begin.
	if src := s.reg.View(tools.Caller{}).CategorySource(t.Category()); src != "" {
		desc = "From " + src + " (its words, not codecell's): " + desc
	}
	mt := mcp.Tool{
		Name:           name,
		Description:    desc,
		RawInputSchema: t.InputDocument(),
		// What codecell knows, not what an untrusted source claims: hosts
		// approve read-only tools with less care.
		Annotations: mcp.ToolAnnotation{
			Title:           t.Name,
			ReadOnlyHint:    mcp.ToBoolPtr(t.Annotations.KnownReadOnly()),
			DestructiveHint: mcp.ToBoolPtr(t.Annotations.MayDestroy()),
			IdempotentHint:  mcp.ToBoolPtr(t.Annotations.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(t.Annotations.OpenWorld),
		},
	}
	// No output schema: the MCP specification requires structuredContent
	// to conform to an advertised one, and after filtering a result need
	// not (a token replaces an e-mail address of format "email", or a card
	// number of type number; the budget cuts arrays). The filtered result
	// is sent as JSON text, which is what a host hands the model.
	qualified := t.Name
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.RawArguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		text, failed, err := s.eng.CallTool(ctx, s.caller(ctx), isLocal(ctx), qualified, args)
		switch {
		case err != nil:
			return nil, err
		case failed:
			return mcp.NewToolResultError(text), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}, nil
	}
	return server.ServerTool{Tool: mt, Handler: handler}, true
}

// filterDirectTools is direct mode's tool filter: of the catalogue tools
// listed as MCP tools, it keeps those in the caller's view. mcp-go applies
// it to tools/list and to tools/call, where a filtered tool is "not
// found" exactly as a tool that was never listed.
func (s *Server) filterDirectTools(ctx context.Context, list []mcp.Tool) []mcp.Tool {
	c := s.caller(ctx)
	if !s.eng.Restricts(c) {
		return list
	}
	view := s.reg.View(c)
	out := make([]mcp.Tool, 0, len(list))
	for _, mt := range list {
		q := mt.Annotations.Title // a direct tool's title is its qualified name
		if !tools.ValidName(q) || DirectName(q) != mt.Name {
			out = append(out, mt) // the server's own tools
			continue
		}
		if t, ok := view.Get(q); ok && t.Name == q {
			out = append(out, mt)
		}
	}
	return out
}
