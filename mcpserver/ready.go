package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Operations behind a load balancer: /readyz says whether an instance
// should get traffic, and a draining instance (SIGTERM during a rolling
// restart) says no at once, refuses new sessions and stateless requests
// with 503, and finishes what its sessions have in flight.

// PathReady is the readiness endpoint: 200 when the instance can serve,
// 503 with the reason otherwise. /healthz only says the process answers.
const PathReady = "/readyz"

// errDraining is the reason a draining instance gives.
var errDraining = errors.New("draining: the instance is shutting down")

// storeReadiness is a store that can say whether it is ready
// (the stores of memory/sqlite and memory/postgres: reachable, schema
// current).
type storeReadiness interface {
	Ready(ctx context.Context) error
}

// poolStatser is a store that reports its connection pool
// (a SQLite store's database/sql pools; a PostgreSQL store's pgxpool the
// same way).
type poolStatser interface {
	PoolStats() memory.PoolStats
}

// readyTimeout bounds the store's part of a readiness check.
const readyTimeout = 2 * time.Second

// ready returns nil when the server can take traffic, or the reason it
// cannot.
func (s *Server) ready(ctx context.Context) error {
	if s.draining.Load() {
		return errDraining
	}
	if !s.poolWarm.Load() {
		st := s.exec.Stats()
		if st.Ready == 0 && st.Running == 0 {
			return fmt.Errorf("executor pool not ready: no sandbox prepared yet (pool of %d)", st.Size)
		}
		// Once warm, a busy pool with nothing prepared is load, not a
		// fault: the queue serves it.
		s.poolWarm.Store(true)
	}
	if rs, ok := s.cfg.Store.(storeReadiness); ok {
		ctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if err := rs.Ready(ctx); err != nil {
			return fmt.Errorf("%w: %w", errStoreNotReady, err)
		}
	}
	return nil
}

// errStoreNotReady is the reason an instance whose store is not ready
// gives without a token: the store's own error may name its host.
var errStoreNotReady = errors.New("store not ready")

// readyz answers PathReady. Tool sources that are loading or unavailable
// do not make the instance unready — it serves, and says so of them — but
// are counted, and listed with where they stand. Where principals are
// kept apart, anyone who reaches the port reads /readyz (a balancer has
// no token): without a principal's token it says only whether the
// instance is ready, why not in a word, and how many sources are loading
// or unavailable; with one, it lists the sources that principal sees.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	answer := struct {
		Status      string                 `json:"status"`
		Reason      string                 `json:"reason,omitempty"`
		Loading     int                    `json:"sources_loading,omitempty"`
		Unavailable int                    `json:"sources_unavailable,omitempty"`
		Sources     map[string]sourceState `json:"sources,omitempty"`
	}{Status: "ready"}
	detail, view := true, (*tools.View)(nil)
	if s.authRequired() {
		detail = false
		if r.Header.Get("Authorization") != "" {
			if id, err := s.authenticate(r); err == nil {
				detail, view = true, s.reg.View(tools.Caller{Principal: id.principal, Scopes: id.scopes})
			}
		}
	}
	sources := s.sourceStates(view)
	for _, st := range sources {
		if st.State == "loading" {
			answer.Loading++
		} else {
			answer.Unavailable++
		}
	}
	if detail {
		answer.Sources = sources
	}
	if err := s.ready(r.Context()); err != nil {
		answer.Status, answer.Reason = "unavailable", err.Error()
		if !detail && errors.Is(err, errStoreNotReady) {
			answer.Reason = errStoreNotReady.Error()
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(answer)
}

// sourceState is where a tool source that is not ready stands, as
// /readyz lists it.
type sourceState struct {
	// State is "loading" or "unavailable".
	State string `json:"state"`
	// Detail says what it does and when it should be ready, or why it is
	// unavailable.
	Detail string `json:"detail"`
	// Done and Total count a loading source's work, when it counts it.
	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`
	// ReadyInSeconds estimates when a loading source is ready, when it
	// can be estimated.
	ReadyInSeconds float64 `json:"ready_in_s,omitempty"`
}

// sourceStates lists the categories whose source is loading or
// unavailable: all of them, or those view holds when it is not nil.
func (s *Server) sourceStates(view *tools.View) map[string]sourceState {
	var out map[string]sourceState
	for c, st := range s.reg.Statuses() {
		if !st.Absent() || view != nil && !slices.Contains(view.Categories(), c) {
			continue
		}
		if out == nil {
			out = map[string]sourceState{}
		}
		if !st.Loading {
			// Anyone who reaches the port reads /readyz: with principals
			// to keep apart, why a source is unavailable is theirs to
			// read (read_tools) and the operator's (the log).
			detail := st.Reason
			if len(s.cfg.Auth) > 0 || s.cfg.OAuth != nil {
				detail = "see read_tools /" + c + "/index.json with a token, or the server's log"
			}
			out[c] = sourceState{State: "unavailable", Detail: detail}
			continue
		}
		ls := st.Load.State()
		out[c] = sourceState{State: "loading", Detail: ls.Describe(st.Reason), Done: ls.Done, Total: ls.Total,
			ReadyInSeconds: math.Round(ls.Left.Seconds()*10) / 10}
	}
	return out
}

// Drain makes the server refuse new work while it finishes what it has:
// /readyz answers 503 so that a balancer stops routing to it, and new
// sessions and stateless requests get 503 with Retry-After, while the
// requests of open sessions are still served. ServeHTTP drains before it
// shuts down.
func (s *Server) Drain() {
	if !s.draining.Swap(true) {
		s.log.Info("draining: refusing new sessions, finishing those in flight")
	}
}

// drainGate refuses, while the server drains, the Streamable HTTP
// requests that would start new work here: initialize (no session yet)
// and stateless requests. A client retries them, and the balancer sends
// them to another instance.
func (s *Server) drainGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() && r.Method == http.MethodPost &&
			(r.Header.Get(server.HeaderKeySessionID) == "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))) {
			s.eng.Metrics().Refused("draining")
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusServiceUnavailable, "this instance is shutting down; retry, and the balancer sends the request to another")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// initOperations registers the store's connection-pool gauges when the
// store reports them.
func (s *Server) initOperations() {
	ps, ok := s.cfg.Store.(poolStatser)
	if !ok {
		return
	}
	gauge := func(name, help string, f func(memory.PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(ps.PoolStats()) })
	}
	counter := func(name, help string, f func(memory.PoolStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(ps.PoolStats()) })
	}
	s.eng.Metrics().Register(
		gauge("codecell_store_connections_max", "Connections the store's pool may open (0: no limit).", func(p memory.PoolStats) float64 { return float64(p.MaxOpen) }),
		gauge("codecell_store_connections_open", "Connections the store's pool holds open.", func(p memory.PoolStats) float64 { return float64(p.Open) }),
		gauge("codecell_store_connections_in_use", "Connections of the store's pool in use.", func(p memory.PoolStats) float64 { return float64(p.InUse) }),
		gauge("codecell_store_connections_idle", "Idle connections of the store's pool.", func(p memory.PoolStats) float64 { return float64(p.Idle) }),
		counter("codecell_store_connection_waits_total", "Times a store operation waited for a free connection.", func(p memory.PoolStats) float64 { return float64(p.WaitCount) }),
		counter("codecell_store_connection_wait_seconds_total", "Time store operations waited for a free connection.", func(p memory.PoolStats) float64 { return p.WaitDuration.Seconds() }),
	)
}
