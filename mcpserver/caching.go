package mcpserver

import (
	"context"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Caching hints of protocol 2026-07-28 (ttlMs and cacheScope on list and
// read results). mcp-go puts a default on every such result (0 ms,
// private); these hooks say what codecell knows of each: which lists are
// the same for every caller (public) and which depend on the principal
// (private: its toolset, its session, its files), and how long each may
// be reused. Notifications (list_changed) still invalidate at once.

// How long a result may be reused.
const (
	// ttlStatic: what changes only with codecell's version — code mode's
	// three tools, server/discover.
	ttlStatic = 10 * time.Minute
	// ttlSources: lists that change when a tool source loads, reloads or
	// says its list changed.
	ttlSources = time.Minute
	// ttlStored: a stored result, which never changes under its id.
	ttlStored = time.Hour
)

// cacheHooks sets the caching hints of tools/list, prompts/list,
// resources/list, resources/templates/list and resources/read on the
// requests of protocol 2026-07-28 (earlier ones have no such fields).
func (s *Server) cacheHooks(h *server.Hooks) {
	h.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, r *mcp.ListToolsResult) {
		ttl := ttlStatic
		if s.cfg.Expose != ExposeCode {
			ttl = ttlSources // the catalogue's tools, as MCP tools
		}
		setHints(ctx, &r.CacheableResult, ttl, s.listScope(s.cfg.Expose != ExposeCode))
	})
	h.AddAfterListPrompts(func(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, r *mcp.ListPromptsResult) {
		setHints(ctx, &r.CacheableResult, ttlSources, s.listScope(true))
	})
	h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, r *mcp.ListResourcesResult) {
		setHints(ctx, &r.CacheableResult, ttlSources, s.listScope(true))
	})
	h.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, r *mcp.ListResourceTemplatesResult) {
		setHints(ctx, &r.CacheableResult, ttlSources, s.listScope(true))
	})
	h.AddAfterReadResource(func(ctx context.Context, _ any, req *mcp.ReadResourceRequest, r *mcp.ReadResourceResult) {
		// Every resource is read as its caller sees it: the tool tree
		// through the caller's toolset and scope, results and workspace
		// files are the principal's, the ledger the session's, an
		// upstream's resource through the caller's toolset.
		var ttl time.Duration
		if strings.HasPrefix(req.Params.URI, ResultsPrefix) {
			ttl = ttlStored
		}
		setHints(ctx, &r.CacheableResult, ttl, mcp.CacheScopePrivate)
	})
}

// listScope is a list's cache scope: private when filtered may be true
// and the caller's toolset filters it, public when it is the same for
// everyone.
func (s *Server) listScope(filtered bool) mcp.CacheScope {
	if filtered && s.eng.HasAccessRules() {
		return mcp.CacheScopePrivate
	}
	return mcp.CacheScopePublic
}

// setHints sets r's hints on a request of protocol 2026-07-28.
func setHints(ctx context.Context, r *mcp.CacheableResult, ttl time.Duration, scope mcp.CacheScope) {
	if !mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return
	}
	r.SetCacheHints(ttl.Milliseconds(), scope)
}

// discoverHints is server/discover's hints: the same answer for every
// caller, changed only by a new version.
func discoverHints() server.ServerOption {
	return server.WithMethodCacheHints(mcp.MethodServerDiscover, ttlStatic.Milliseconds(), mcp.CacheScopePublic)
}
