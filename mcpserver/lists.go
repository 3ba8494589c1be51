package mcpserver

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Lists are paged: one page of tools/list, prompts/list, resources/list
// or resources/templates/list holds at most Config.ListPageSize entries,
// and its nextCursor asks for the next (attack15 L2: a bridged server's
// 10,000 prompts made every client's prompts/list a 16 MB answer). A host
// that does not follow nextCursor gets the first page, an ordinary
// answer.
//
// codecell pages a list itself, after every hook has filtered it (a
// resource of a category the caller does not reach) or added to it (the
// bridged servers' templates), in the order of a key that is unique in
// it — a tool's or prompt's name, a resource's URI, a template's URI
// template — rather than with mcp-go's WithPaginationLimit: mcp-go pages
// before those hooks run, and by name, which two resources may share
// (an entry at a page's edge with the name of the last was skipped).
// mcp-go still reads the cursor first, as base64 of a name after which
// it lists; codecell's cursor is base64 of "\x00" and the last key, which
// mcp-go reads as "from the first name on" (every name it lists is
// non-empty), so that it hands the hooks the whole list.

// DefaultListPageSize is Config.ListPageSize's default: code mode's lists
// fit one page; a catalogue in direct mode, or many bridged servers'
// prompts and resources, take several.
const DefaultListPageSize = 200

// cursorMark begins the key a cursor of codecell's carries.
const cursorMark = "\x00"

// listPageSize is how many entries a page holds.
func (s *Server) listPageSize() int {
	if s.cfg.ListPageSize > 0 {
		return s.cfg.ListPageSize
	}
	return DefaultListPageSize
}

// pageHooks page the four lists.
func (s *Server) pageHooks(h *server.Hooks) {
	size := s.listPageSize()
	h.AddAfterListTools(func(_ context.Context, _ any, req *mcp.ListToolsRequest, r *mcp.ListToolsResult) {
		r.Tools, r.NextCursor = page(r.Tools, func(t mcp.Tool) string { return t.Name }, req.Params.Cursor, size)
	})
	h.AddAfterListPrompts(func(_ context.Context, _ any, req *mcp.ListPromptsRequest, r *mcp.ListPromptsResult) {
		r.Prompts, r.NextCursor = page(r.Prompts, func(p mcp.Prompt) string { return p.Name }, req.Params.Cursor, size)
	})
	h.AddAfterListResources(func(_ context.Context, _ any, req *mcp.ListResourcesRequest, r *mcp.ListResourcesResult) {
		r.Resources, r.NextCursor = page(r.Resources, func(res mcp.Resource) string { return res.URI }, req.Params.Cursor, size)
	})
	h.AddAfterListResourceTemplates(func(_ context.Context, _ any, req *mcp.ListResourceTemplatesRequest, r *mcp.ListResourceTemplatesResult) {
		r.ResourceTemplates, r.NextCursor = page(r.ResourceTemplates, templateRaw, req.Params.Cursor, size)
	})
}

// page returns the entries of list after the cursor's key, at most size
// of them in the order of key, and the cursor of the next page ("" at the
// end). A cursor that is not codecell's (mcp-go has refused one that is
// not base64) is read as a key too.
func page[T any](list []T, key func(T) string, cursor mcp.Cursor, size int) ([]T, mcp.Cursor) {
	slices.SortStableFunc(list, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	if cursor != "" {
		after, _ := base64.StdEncoding.DecodeString(string(cursor))
		last := strings.TrimPrefix(string(after), cursorMark)
		i, found := slices.BinarySearchFunc(list, last, func(e T, k string) int { return cmp.Compare(key(e), k) })
		if found {
			i++
		}
		list = list[i:]
	}
	if len(list) <= size {
		if list == nil {
			list = []T{} // a list's entries are a required array
		}
		return list, ""
	}
	list = list[:size]
	return list, mcp.Cursor(base64.StdEncoding.EncodeToString([]byte(cursorMark + key(list[size-1]))))
}
