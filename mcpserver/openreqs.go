package mcpserver

import (
	"fmt"
	"net/http"
	"sync"
)

// Requests that stay open — event streams (a Streamable HTTP GET, a
// 2026-07-28 subscriptions/listen, an SSE connection) and calls in flight
// — each hold a descriptor and some memory of the server for as long as
// the client keeps them. Where tokens or OAuth tell principals apart, one
// principal may hold openPerSession of them for each session it may have
// (sessions_per_principal); all together openTotal, well below a
// process's descriptor limit. Past either, a request is refused with 429
// before it is served.
const (
	openPerSession = 4
	openTotal      = 8192
)

// openRequests counts the requests open per principal.
type openRequests struct {
	mu          sync.Mutex
	byPrincipal map[string]int
	total       int
	perPrinc    int
}

func newOpenRequests(sessionsPerPrincipal int) *openRequests {
	if sessionsPerPrincipal <= 0 {
		sessionsPerPrincipal = 64 // engine.SessionLimits' default
	}
	return &openRequests{byPrincipal: map[string]int{}, perPrinc: openPerSession * sessionsPerPrincipal}
}

// enter counts a request of principal open, unless a bound is reached;
// the caller calls leave once it is answered.
func (o *openRequests) enter(principal string, shared bool) (ok bool, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case shared && o.byPrincipal[principal] >= o.perPrinc:
		return false, fmt.Sprintf("too many requests open at once for this principal (%d: event streams and calls in flight); close some streams or wait for calls to finish", o.perPrinc)
	case o.total >= openTotal:
		return false, fmt.Sprintf("too many requests open at once on this server (%d); retry shortly", openTotal)
	}
	o.byPrincipal[principal]++
	o.total++
	return true, ""
}

func (o *openRequests) leave(principal string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byPrincipal[principal]--; o.byPrincipal[principal] <= 0 {
		delete(o.byPrincipal, principal)
	}
	o.total--
}

// bounded serves r through next while it is counted open for its
// principal; shared says principals are told apart.
func (o *openRequests) bounded(w http.ResponseWriter, r *http.Request, principal string, shared bool, refused func(), next http.Handler) {
	ok, msg := o.enter(principal, shared)
	if !ok {
		refused()
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusTooManyRequests, msg)
		return
	}
	defer o.leave(principal)
	next.ServeHTTP(w, r)
}
