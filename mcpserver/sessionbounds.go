package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools"
)

// What a session keeps of its client's requests is bounded: mcp-go keeps
// an initialize's clientInfo and capabilities, and each subscription's
// URI, for the session's life (attack15 I5, I6).
const (
	// maxInitializeBytes bounds an initialize request; a client's is a
	// few hundred bytes.
	maxInitializeBytes = 16 << 10
	// maxClientValues bounds the JSON values of a client's identity and
	// capabilities: a client's are a few dozen, and mcp-go keeps them
	// decoded, which 16 KiB of nested objects made 0.9 MB (attack23 M1).
	maxClientValues = 512
	// maxSubscriptionURIBytes bounds a resource URI subscribed to.
	maxSubscriptionURIBytes = 2 << 10
	// maxSubscriptions bounds the resources one session subscribes to.
	maxSubscriptions = 256
)

// boundRequests refuses an initialize past maxInitializeBytes or
// maxClientValues, a request whose _meta carries a client's identity and
// capabilities past the same bounds, and a resources/subscribe past its
// bounds, before mcp-go keeps any of them. The method is read as mcp-go
// decodes it (JSON may spell any character as an escape); a message with
// neither the bytes that could name it nor an escape, small and of few
// values, is not decoded.
func (ss *subscriptions) boundRequests(h *server.Hooks) {
	h.AddOnRequestInitialization(func(ctx context.Context, _ any, message any) error {
		raw, ok := message.(json.RawMessage)
		if !ok {
			return nil
		}
		escaped := bytes.IndexByte(raw, '\\') >= 0
		big := len(raw) > maxInitializeBytes
		subscribe := escaped || bytes.Contains(raw, []byte(mcp.MethodResourcesSubscribe))
		// mcp-go decodes an initialize's params into a struct, so its
		// field names match in any case (attack24 R3): an initialize is
		// counted whatever it spells them.
		client := escaped || bytes.Contains(raw, []byte(mcp.MethodInitialize)) || bytes.Contains(raw, []byte("apabilities")) || bytes.Contains(raw, []byte("lientInfo"))
		many := client && tools.JSONValues(raw, maxClientValues) > maxClientValues
		if !big && !many && !subscribe {
			return nil
		}
		// The method alone decides, decoded as mcp-go decodes it: a
		// message decoded whole could fail on a field mcp-go ignores
		// (a "uri" that is not a string) and pass unbounded (attack17 K5).
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw, &req) != nil {
			return nil // mcp-go cannot read it either, and answers so
		}
		if big || many {
			if err := boundMeta(raw); err != nil {
				return err
			}
		}
		switch mcp.MCPMethod(req.Method) {
		case mcp.MethodInitialize:
			if big {
				return fmt.Errorf("an initialize request is at most %d bytes (this one is %d): send a shorter clientInfo and capabilities", maxInitializeBytes, len(raw))
			}
			// Little else than clientInfo and capabilities has values.
			if many {
				return fmt.Errorf("an initialize request has at most %d JSON values: send a simpler clientInfo and capabilities", maxClientValues)
			}
		case mcp.MethodResourcesSubscribe:
			var params struct {
				URI string `json:"uri"`
			}
			if err := json.Unmarshal(req.Params, &params); err != nil {
				return fmt.Errorf("resources/subscribe: params.uri must be a string: %w", err)
			}
			return ss.admit(server.ClientSessionFromContext(ctx), params.URI)
		}
		return nil
	})
}

// boundMeta refuses a request whose _meta carries a client's identity and
// capabilities of more than maxInitializeBytes or maxClientValues
// together. From protocol
// 2026-07-28 on every request may carry them, whatever its method, and
// mcp-go keeps them on the session as an initialize's — on an SSE
// session for the session's life (attack22 P4: 64 SSE sessions' pings
// of a 3.9 MiB clientInfo kept 500 MiB). _meta is decoded as mcp-go
// decodes it: a params or _meta it cannot read, it does not keep.
func boundMeta(raw json.RawMessage) error {
	var req struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	info, caps := req.Params.Meta[mcp.MetaKeyClientInfo], req.Params.Meta[mcp.MetaKeyClientCapabilities]
	if n := len(info) + len(caps); n > maxInitializeBytes {
		return fmt.Errorf("a request's clientInfo and clientCapabilities are at most %d bytes together (these are %d): send shorter ones", maxInitializeBytes, n)
	}
	if tools.JSONValues(info, maxClientValues)+tools.JSONValues(caps, maxClientValues) > maxClientValues {
		return fmt.Errorf("a request's clientInfo and clientCapabilities have at most %d JSON values together: send simpler ones", maxClientValues)
	}
	return nil
}

// admit refuses a subscription of session to uri past the bounds.
func (ss *subscriptions) admit(cs server.ClientSession, uri string) error {
	if len(uri) > maxSubscriptionURIBytes {
		return fmt.Errorf("a resource URI to subscribe to is at most %d bytes (this one is %d)", maxSubscriptionURIBytes, len(uri))
	}
	if cs == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	mine := ss.subs[cs.SessionID()]
	if _, ok := mine[uri]; !ok && len(mine) >= maxSubscriptions {
		return fmt.Errorf("a session subscribes to at most %d resources: unsubscribe from one first (resources/unsubscribe)", maxSubscriptions)
	}
	return nil
}
