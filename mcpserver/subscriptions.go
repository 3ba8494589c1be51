package mcpserver

import (
	"context"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// subscriptions remembers which sessions subscribed to which resources,
// so that a change of the tool tree reaches them as
// notifications/resources/updated.
type subscriptions struct {
	// follows says whether the caller of ctx may be told of uri's changes,
	// and who it is: a bridged server's resource only when the caller
	// reaches its category (attack15: bob, denied secret.*, learnt when
	// alice's subscription made its server report a change).
	follows func(ctx context.Context, uri string) (tools.Caller, bool)

	mu   sync.Mutex
	subs map[string]map[string]tools.Caller // session → URIs → who subscribed
}

func (ss *subscriptions) hooks(h *server.Hooks) {
	ss.boundRequests(h)
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil {
			return
		}
		caller, ok := ss.follows(ctx, req.Params.URI)
		if !ok {
			return
		}
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.subs == nil {
			ss.subs = map[string]map[string]tools.Caller{}
		}
		if ss.subs[cs.SessionID()] == nil {
			ss.subs[cs.SessionID()] = map[string]tools.Caller{}
		}
		ss.subs[cs.SessionID()][req.Params.URI] = caller
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			ss.mu.Lock()
			delete(ss.subs[cs.SessionID()], req.Params.URI)
			ss.mu.Unlock()
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		ss.mu.Lock()
		delete(ss.subs, cs.SessionID())
		ss.mu.Unlock()
	})
}

// matching returns, per session, the subscribed URIs with the prefix.
func (ss *subscriptions) matching(prefix string) map[string][]string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := map[string][]string{}
	for session, uris := range ss.subs {
		for uri := range uris {
			if strings.HasPrefix(uri, prefix) {
				out[session] = append(out[session], uri)
			}
		}
	}
	return out
}

// subscribers returns the sessions subscribed to uri, with who
// subscribed in each.
func (ss *subscriptions) subscribers(uri string) map[string]tools.Caller {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := map[string]tools.Caller{}
	for session, uris := range ss.subs {
		if c, ok := uris[uri]; ok {
			out[session] = c
		}
	}
	return out
}

// toolTreeChanged tells subscribers of tool-tree resources that they may
// have changed.
func (s *Server) toolTreeChanged() {
	for session, uris := range s.subs.matching(ResourcePrefix) {
		for _, uri := range uris {
			if err := s.mcp.SendNotificationToSpecificClient(session, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri}); err != nil {
				s.log.Debug("resource updated notification", "session_hash", engine.SessionHash(session), "err", err)
			}
		}
	}
}
