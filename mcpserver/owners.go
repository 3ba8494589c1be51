package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"
)

// sessionOwners binds every MCP session ID, Streamable HTTP and SSE
// alike, to the principal that opened it. The HTTP guard refuses a
// session ID presented by anyone else, as if it did not exist, and IDs
// that were never issued or have ended: the answer to both is 404, so a
// caller learns nothing about other principals' sessions.
type sessionOwners struct {
	fallback string // the principal of requests that carry none

	mu    sync.Mutex
	owner map[string]string    // live session ID → principal
	ended map[string]time.Time // ended session IDs, kept a while to answer 404
}

func newSessionOwners(fallback string) *sessionOwners {
	return &sessionOwners{fallback: fallback, owner: map[string]string{}, ended: map[string]time.Time{}}
}

// maxEnded bounds the ended IDs remembered; older ones are forgotten
// (and then answered as unknown, which is also 404).
const maxEnded = 10000

// add records that principal opened session id.
func (o *sessionOwners) add(id, principal string) {
	o.mu.Lock()
	o.owner[id] = principal
	o.mu.Unlock()
}

// end forgets session id and remembers that it ended.
func (o *sessionOwners) end(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.owner[id]; !ok {
		return
	}
	delete(o.owner, id)
	if len(o.ended) >= maxEnded {
		var oldest string
		var at time.Time
		for k, t := range o.ended {
			if oldest == "" || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(o.ended, oldest)
	}
	o.ended[id] = time.Now()
}

// check reports whether principal may use session id: it must be live and
// principal's own.
func (o *sessionOwners) check(id, principal string) (ok, ended bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, live := o.owner[id]; live {
		return p == principal, false
	}
	_, ended = o.ended[id]
	return false, ended
}

// sessionsOf returns the live sessions of principal.
func (o *sessionOwners) sessionsOf(principal string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for id, p := range o.owner {
		if p == principal {
			out = append(out, id)
		}
	}
	return out
}

// principalOf returns the principal a request is made for.
func (o *sessionOwners) principalOf(r *http.Request) string {
	if r != nil {
		if p, ok := principalFrom(r.Context()); ok {
			return p
		}
	}
	return o.fallback
}

func (o *sessionOwners) hooks(h *server.Hooks) {
	// SSE sessions are registered by the GET that opens the stream; its
	// context carries the principal the guard authenticated.
	h.AddOnRegisterSession(func(ctx context.Context, cs server.ClientSession) {
		if id := cs.SessionID(); id != "" {
			p, ok := principalFrom(ctx)
			if !ok {
				p = o.fallback
			}
			o.mu.Lock()
			if _, known := o.owner[id]; !known {
				o.owner[id] = p
			}
			o.mu.Unlock()
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		o.end(cs.SessionID())
	})
}

// ResolveSessionIdManager gives mcp-go's Streamable HTTP server a session
// ID manager bound to the request's principal.
func (o *sessionOwners) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		// The idle sweeper terminates sessions of any principal.
		return ownedIDs{o: o, any: true}
	}
	return ownedIDs{o: o, principal: o.principalOf(r)}
}

var _ server.SessionIdManagerResolver = (*sessionOwners)(nil)

// ownedIDs issues, validates and terminates session IDs for one
// principal.
type ownedIDs struct {
	o         *sessionOwners
	principal string
	any       bool
}

const sessionIDPrefix = "mcp-session-"

func (m ownedIDs) Generate() string {
	id := sessionIDPrefix + uuid.NewString()
	m.o.add(id, m.principal)
	return id
}

func (m ownedIDs) Validate(id string) (isTerminated bool, err error) {
	ok, ended := m.o.check(id, m.principal)
	switch {
	case ended:
		return true, nil
	case !ok && !m.any:
		return false, fmt.Errorf("unknown session")
	}
	return false, nil
}

func (m ownedIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if ok, _ := m.o.check(id, m.principal); !ok && !m.any {
		return true, nil
	}
	m.o.end(id)
	return false, nil
}
