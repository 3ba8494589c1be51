// Package balancer is a small HTTP load balancer in front of codecell
// instances, for the multi-instance test and the load tool: it does what
// a production balancer must do for codecell, and nothing more.
//
//   - Streamable HTTP sessions live in the memory of the instance that
//     opened them: a request with an Mcp-Session-Id goes to that instance
//     (affinity, learnt from the initialize response). When that instance
//     cannot be reached, the balancer answers 404, which tells an MCP client to
//     initialize a new session (MCP's Streamable HTTP transport); the new
//     session lands on a live instance.
//   - A request without a session (initialize, and every request of the
//     stateless 2026-07-28 protocol) goes round robin. When the instance
//     refuses the connection, or answers 503 while it drains, the request
//     has not been processed and goes to the next instance.
//   - A request whose instance dies after receiving it is not retried: it
//     may have been processed. The client gets 502 and decides.
//
// It never buffers responses: event streams flow through as they come.
package balancer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
)

// sessionHeader is Streamable HTTP's session header.
const sessionHeader = "Mcp-Session-Id"

// Balancer spreads requests over backends. It is an http.Handler, safe for
// concurrent use.
type Balancer struct {
	backends  []*url.URL
	transport http.RoundTripper
	next      atomic.Uint64

	mu       sync.Mutex
	sessions map[string]int // session ID → backend

	// Counts, for reports.
	failovers atomic.Int64
	gone      atomic.Int64
}

// New returns a balancer over the backends' base URLs
// (http://127.0.0.1:7410).
func New(backends []string) (*Balancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("balancer: no backends")
	}
	b := &Balancer{
		sessions:  map[string]int{},
		transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true},
	}
	for _, s := range backends {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("balancer: backend %q is not a URL", s)
		}
		b.backends = append(b.backends, u)
	}
	return b, nil
}

// Stats says how often the balancer sent a request on to another backend
// (failover), and answered 404 for a session whose backend was gone.
func (b *Balancer) Stats() (failovers, sessionsGone int64) {
	return b.failovers.Load(), b.gone.Load()
}

// Sessions returns how many sessions each backend holds, by index.
func (b *Balancer) Sessions() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := make([]int, len(b.backends))
	for _, i := range b.sessions {
		n[i]++
	}
	return n
}

// errRetry marks a response that the next backend should answer instead.
var errRetry = errors.New("retry on the next backend")

func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if sid := r.Header.Get(sessionHeader); sid != "" {
		b.mu.Lock()
		i, ok := b.sessions[sid]
		b.mu.Unlock()
		if !ok {
			b.sessionGone(w, sid)
			return
		}
		b.forward(w, r, body, sid, []int{i})
		return
	}
	start := int(b.next.Add(1) % uint64(len(b.backends)))
	order := make([]int, len(b.backends))
	for k := range order {
		order[k] = (start + k) % len(b.backends)
	}
	b.forward(w, r, body, "", order)
}

// sessionGone answers 404 for a session whose instance is gone or was
// never known: the client initializes a new one.
func (b *Balancer) sessionGone(w http.ResponseWriter, sid string) {
	b.mu.Lock()
	delete(b.sessions, sid)
	b.mu.Unlock()
	b.gone.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"session not found: the instance that held it is gone; initialize a new session"}}`)
}

// forward sends the request to the backends in order until one takes it.
func (b *Balancer) forward(w http.ResponseWriter, r *http.Request, body []byte, sid string, order []int) {
	for k, i := range order {
		last := k == len(order)-1
		retry := false
		p := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(b.backends[i])
				pr.SetXForwarded()
			},
			Transport:     b.transport,
			FlushInterval: -1,
			ModifyResponse: func(resp *http.Response) error {
				if sid == "" && !last && resp.StatusCode == http.StatusServiceUnavailable {
					resp.Body.Close()
					return errRetry // draining: it did not take the request
				}
				b.mu.Lock()
				defer b.mu.Unlock()
				if id := resp.Header.Get(sessionHeader); id != "" && resp.StatusCode < 300 {
					b.sessions[id] = i
				}
				if sid != "" && (r.Method == http.MethodDelete || resp.StatusCode == http.StatusNotFound) {
					delete(b.sessions, sid)
				}
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				switch {
				case errors.Is(err, errRetry):
					retry = true
				case sid != "" && r.Context().Err() == nil:
					// The session's instance cannot be reached: refused,
					// or a kept-alive connection to it broke.
					b.sessionGone(w, sid)
				case refused(err) && !last:
					retry = true
				default:
					http.Error(w, "bad gateway: "+err.Error(), http.StatusBadGateway)
				}
			},
		}
		out := r.Clone(r.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		p.ServeHTTP(w, out)
		if !retry {
			return
		}
		b.failovers.Add(1)
	}
}

// refused reports an error of connecting: the backend never saw the
// request.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
