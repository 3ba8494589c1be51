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
	fallback     string // the principal of requests that carry none
	perPrincipal int    // a principal's Streamable HTTP sessions at most
	mu           sync.Mutex
	// evict ends a Streamable HTTP session as a DELETE of it would: set
	// with the transport, nil until then.
	evict func(id string)
	owner map[string]string // live session ID → principal
	// ended holds the IDs of ended sessions, kept a while to answer 404,
	// in the order they ended: endedRing holds them too, endedNext at the
	// oldest once the ring is full, so that remembering one more forgets
	// the oldest at once (attack16: a scan of all 10,000 under the lock).
	ended     map[string]struct{}
	endedRing []string
	endedNext int
	// used holds, per principal, when each of its Streamable HTTP
	// sessions was last presented.
	used map[string]map[string]time.Time
}

func newSessionOwners(fallback string, perPrincipal int) *sessionOwners {
	if perPrincipal <= 0 {
		perPrincipal = 64 // engine.SessionLimits' default
	}
	return &sessionOwners{
		fallback:     fallback,
		perPrincipal: perPrincipal,
		owner:        map[string]string{},
		ended:        map[string]struct{}{},
		used:         map[string]map[string]time.Time{},
	}
}

// maxEnded bounds the ended IDs remembered; older ones are forgotten
// (and then answered as unknown, which is also 404).
const maxEnded = 10000

// open records that principal opened Streamable HTTP session id, and
// returns its least recently used other session when principal now has
// more than perPrincipal: each session keeps what its initialize sent
// (attack15 I6), as the engine keeps a session's state, which it bounds
// the same way.
func (o *sessionOwners) open(id, principal string) (old string, evict func(string)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	evict = o.evict
	o.owner[id] = principal
	mine := o.used[principal]
	if mine == nil {
		mine = map[string]time.Time{}
		o.used[principal] = mine
	}
	mine[id] = time.Now()
	if len(mine) <= o.perPrincipal {
		return "", nil
	}
	var at time.Time
	for other, t := range mine {
		if other != id && (old == "" || t.Before(at)) {
			old, at = other, t
		}
	}
	return old, evict
}

// setEvict sets how a session is ended when its principal opens one too
// many.
func (o *sessionOwners) setEvict(evict func(id string)) {
	o.mu.Lock()
	o.evict = evict
	o.mu.Unlock()
}

// end forgets session id and remembers that it ended.
func (o *sessionOwners) end(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.owner[id]; !ok {
		return
	}
	if mine := o.used[o.owner[id]]; mine != nil {
		delete(mine, id)
		if len(mine) == 0 {
			delete(o.used, o.owner[id])
		}
	}
	delete(o.owner, id)
	o.rememberEnded(id)
}

// rememberEnded remembers that session id ended, forgetting the oldest
// ended ID once maxEnded are remembered.
func (o *sessionOwners) rememberEnded(id string) {
	if _, ok := o.ended[id]; ok {
		return
	}
	if len(o.endedRing) < maxEnded {
		o.endedRing = append(o.endedRing, id)
	} else {
		delete(o.ended, o.endedRing[o.endedNext])
		o.endedRing[o.endedNext] = id
		o.endedNext = (o.endedNext + 1) % maxEnded
	}
	o.ended[id] = struct{}{}
}

// check reports whether principal may use session id: it must be live and
// principal's own.
func (o *sessionOwners) check(id, principal string) (ok, ended bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, live := o.owner[id]; live {
		if p != principal {
			return false, false
		}
		if mine := o.used[p]; mine != nil {
			if _, ok := mine[id]; ok {
				mine[id] = time.Now()
			}
		}
		return true, false
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
	if r == nil || r.Context().Value(evictingKey{}) != nil {
		// The idle sweeper, and an eviction, terminate sessions of any
		// principal.
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
	if old, evict := m.o.open(id, m.principal); old != "" && evict != nil {
		evict(old)
	}
	return id
}

// evictingKey marks the DELETE that ends a principal's least recently
// used session.
type evictingKey struct{}

// evictWith returns an evict that ends a session through h, as a DELETE
// of it does: mcp-go keeps the session's state in h, and only its
// DELETE and its idle sweep give it back.
func evictWith(h http.Handler) func(id string) {
	return func(id string) {
		r, err := http.NewRequestWithContext(context.WithValue(context.Background(), evictingKey{}, true), http.MethodDelete, PathStreamable, nil)
		if err != nil {
			return
		}
		r.Header.Set(server.HeaderKeySessionID, id)
		h.ServeHTTP(discardResponse{header: http.Header{}}, r)
	}
}

// discardResponse is the response to an eviction's DELETE, which nobody
// reads.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header       { return d.header }
func (discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (discardResponse) WriteHeader(int)             {}

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
