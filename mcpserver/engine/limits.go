package engine

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound the load one principal, and all of them together, can put
// on the server. Zero fields take their defaults.
type Limits struct {
	// ExecutionsPerMinute and ExecutionBurst limit each principal's runs.
	// Defaults 600 and 60.
	ExecutionsPerMinute int
	ExecutionBurst      int
	// ToolCallsPerMinute and ToolCallBurst limit each principal's tool
	// calls, from programs and direct mode. Defaults 6000 and 1000 (at
	// least the tool calls a run may make).
	ToolCallsPerMinute int
	ToolCallBurst      int
	// MaxInFlight caps executions admitted at once over all principals;
	// MaxQueued caps those waiting for admission. Defaults 64 and 256.
	// One principal holds at most three quarters of each (rounded down,
	// all but one of a small number): the rest is kept for the others.
	MaxInFlight int
	MaxQueued   int
	// MaxBodyBytes caps an HTTP request body. Default 4 MiB.
	MaxBodyBytes int64
	// ResultBytesInFlight and ResultBytesInFlightPerRun bound the bytes
	// of tool results in flight — called for and not yet handed to the
	// program — over every run and in one run: each call of a tool
	// whose results come from outside (an upstream server, an API)
	// reserves its tool's tools.Tool.MaxResultBytes until its result is
	// handed over (inflight.go). Defaults DefaultResultBytesInFlight and
	// DefaultResultBytesInFlightPerRun.
	ResultBytesInFlight       int64
	ResultBytesInFlightPerRun int64
	// MaxJournalBytes bounds what one run of protocol 2026-07-28 keeps
	// to be replayed if it asks the client: what its calls returned
	// before it asks (mrtrjournal.go). Default DefaultMaxJournalBytes.
	MaxJournalBytes int
	// AuditCallRowsPerDay is how many of a principal's tool calls a day
	// the audit keeps a row each (with the hash of their arguments);
	// past it, a run's calls are kept as one row per tool and outcome,
	// with their count (memory.ToolCall's Calls). Default
	// DefaultAuditCallRowsPerDay.
	AuditCallRowsPerDay int
	// Stdio applies the per-principal rate limits (ExecutionsPerMinute,
	// ExecutionBurst, ToolCallsPerMinute, ToolCallBurst) to requests over
	// stdio as well. By default they apply to HTTP principals only: stdio
	// serves one local user, whose agent or benchmark loop they would
	// only get in the way of.
	Stdio bool
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ExecutionsPerMinute, 600)
	def(&l.ExecutionBurst, 60)
	def(&l.ToolCallsPerMinute, 6000)
	def(&l.ToolCallBurst, 1000)
	def(&l.MaxInFlight, 64)
	def(&l.AuditCallRowsPerDay, DefaultAuditCallRowsPerDay)
	if l.MaxQueued < 0 {
		l.MaxQueued = 0
	} else if l.MaxQueued == 0 {
		l.MaxQueued = 256
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 4 << 20
	}
	if l.ResultBytesInFlight <= 0 {
		l.ResultBytesInFlight = DefaultResultBytesInFlight
	}
	if l.ResultBytesInFlightPerRun <= 0 {
		l.ResultBytesInFlightPerRun = DefaultResultBytesInFlightPerRun
	}
	def(&l.MaxJournalBytes, DefaultMaxJournalBytes)
	return l
}

// Refusal is a request turned away by a limit: which one, and when a
// retry may succeed.
type Refusal struct {
	limit      string
	message    string
	retryAfter time.Duration
}

func (r *Refusal) Error() string {
	if r.retryAfter > 0 {
		return fmt.Sprintf("%s; retry in %s", r.message, roundUp(r.retryAfter))
	}
	return r.message
}

// Limit names the limit that refused: the label of its metric.
func (r *Refusal) Limit() string { return r.limit }

func (r *Refusal) ErrorCode() string { return "rate_limited" }
func (r *Refusal) ErrorTool() string { return "" }

func roundUp(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Duration(math.Ceil(float64(d)/float64(100*time.Millisecond))) * 100 * time.Millisecond
	}
	return d.Round(time.Second)
}

// Limiter applies Limits.
type Limiter struct {
	lim Limits

	mu         sync.Mutex
	executions map[string]*rate.Limiter
	calls      map[string]*rate.Limiter

	// shared, when set, holds the per-principal rate limits across the
	// instances of one store instead of the buckets above, which then
	// serve only while the store cannot be reached (ratelimit.go).
	shared *sharedQuota

	admission admission
}

// MaxBodyBytes caps an HTTP request body.
func (l *Limiter) MaxBodyBytes() int64 { return l.lim.MaxBodyBytes }

func newLimiter(l Limits) *Limiter {
	l = l.withDefaults()
	return &Limiter{
		lim:        l,
		executions: map[string]*rate.Limiter{},
		calls:      map[string]*rate.Limiter{},
		admission:  newAdmission(l.MaxInFlight, l.MaxQueued),
	}
}

func (l *Limiter) bucket(m map[string]*rate.Limiter, principal string, perMinute, burst int) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := m[principal]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(perMinute)/60), burst)
		m[principal] = b
	}
	return b
}

// take spends one token of b, or says how long until one is available.
func take(b *rate.Limiter) (time.Duration, bool) {
	r := b.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, false
	}
	return 0, true
}

// AllowExecution spends one of principal's executions; local requests
// (stdio) are not rate-limited unless Limits.Stdio says so.
func (l *Limiter) AllowExecution(ctx context.Context, principal string, local bool) *Refusal {
	return l.allow(ctx, principal, local, rateKind{"executions", "executions_per_principal", "start %d executions", l.executions}, l.lim.ExecutionsPerMinute, l.lim.ExecutionBurst)
}

// allowToolCall spends one of principal's tool calls, as AllowExecution.
func (l *Limiter) allowToolCall(ctx context.Context, principal string, local bool) *Refusal {
	return l.allow(ctx, principal, local, rateKind{"tool_calls", "tool_calls_per_principal", "make %d tool calls", l.calls}, l.lim.ToolCallsPerMinute, l.lim.ToolCallBurst)
}

// rateKind is one of the per-principal rate limits: its key in the
// shared store, its name in refusals and metrics, what a refusal says the
// principal may do, and its buckets when nothing is shared.
type rateKind struct {
	key, limit, may string
	buckets         map[string]*rate.Limiter
}

// allow spends one of principal's perMinute (bursts of burst) of kind:
// in the shared store when there is one and it answers, in this process's
// bucket otherwise.
func (l *Limiter) allow(ctx context.Context, principal string, local bool, kind rateKind, perMinute, burst int) *Refusal {
	if local && !l.lim.Stdio {
		return nil
	}
	d, ok, err := l.shared.take(ctx, kind.key+"/"+principal, perMinute, burst)
	if err != nil {
		d, ok = take(l.bucket(kind.buckets, principal, perMinute, burst))
	}
	if !ok {
		return &Refusal{
			limit:      kind.limit,
			message:    fmt.Sprintf("rate limit: %q may "+kind.may+" per minute (bursts of %d)", principal, perMinute, burst),
			retryAfter: d,
		}
	}
	return nil
}

// Admit waits, up to wait, for one of the MaxInFlight places, and refuses
// at once when MaxQueued requests are already waiting, or the principal's
// share of them.
func (l *Limiter) Admit(ctx context.Context, principal string, wait time.Duration) (release func(), _ *Refusal) {
	return l.admission.acquire(ctx, principal, wait)
}

// admission shares the MaxInFlight places fairly between principals: a
// free place goes to the waiting request whose principal holds the fewest
// places, the earliest among equals, so one principal's burst cannot keep
// the others waiting. And no principal holds every place, or takes every
// place in the queue: a quarter of each (rounded up, at least one when
// there are two or more) is kept for the others, so that another
// principal's request is admitted while one principal's requests fill
// what it may take.
type admission struct {
	capacity, maxQueued int
	// perPrincipal and perQueued are the places, and the places in the
	// queue, one principal may take.
	perPrincipal, perQueued int

	mu      sync.Mutex
	inUse   int
	held    map[string]int // places held, by principal
	queued  map[string]int // requests waiting, by principal
	waiters []*waiter
}

type waiter struct {
	principal string
	granted   chan struct{} // closed when a place is handed over
}

func newAdmission(capacity, maxQueued int) admission {
	return admission{
		capacity:     capacity,
		maxQueued:    maxQueued,
		perPrincipal: capacity - reserved(capacity),
		perQueued:    maxQueued - reserved(maxQueued),
		held:         map[string]int{},
		queued:       map[string]int{},
	}
}

// reserved is the part of n places kept from any one principal: a
// quarter, rounded up, leaving it at least one.
func reserved(n int) int {
	return max(min((n+3)/4, n-1), 0)
}

func (a *admission) acquire(ctx context.Context, principal string, wait time.Duration) (func(), *Refusal) {
	release := func() { a.release(principal) }
	a.mu.Lock()
	if a.inUse < a.capacity && a.held[principal] < a.perPrincipal {
		// A free place that no waiter may take (the waiters hold their
		// share): this request's.
		a.grantLocked(principal)
		a.mu.Unlock()
		return release, nil
	}
	if len(a.waiters) >= a.maxQueued {
		a.mu.Unlock()
		return nil, &Refusal{
			limit:      "max_queued",
			message:    fmt.Sprintf("server busy: %d executions are running and %d more are waiting, the most allowed", a.capacity, a.maxQueued),
			retryAfter: time.Second,
		}
	}
	if a.queued[principal] >= a.perQueued {
		a.mu.Unlock()
		return nil, &Refusal{
			limit:      "max_queued",
			message:    fmt.Sprintf("server busy: %q has %d executions waiting to run, the most one principal may of the %d places in the queue", principal, a.queued[principal], a.maxQueued),
			retryAfter: time.Second,
		}
	}
	w := &waiter{principal: principal, granted: make(chan struct{})}
	a.waiters = append(a.waiters, w)
	a.queued[principal]++
	a.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var r *Refusal
	select {
	case <-w.granted:
		return release, nil
	case <-t.C:
		r = &Refusal{
			limit:      "max_in_flight",
			message:    fmt.Sprintf("server busy: %d executions stayed in flight for %s", a.capacity, wait),
			retryAfter: time.Second,
		}
		a.mu.Lock()
		if a.held[principal] >= a.perPrincipal {
			r.message = fmt.Sprintf("server busy: %q held %d executions in flight, the most one principal may of %d, for %s", principal, a.held[principal], a.capacity, wait)
		}
		a.mu.Unlock()
	case <-ctx.Done():
		r = &Refusal{limit: "canceled", message: "the request was cancelled while waiting to run"}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.granted: // handed over while giving up: pass it on
		a.releaseLocked(principal)
	default:
		for i, x := range a.waiters {
			if x == w {
				a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
				a.unqueueLocked(principal)
				break
			}
		}
	}
	return nil, r
}

func (a *admission) grantLocked(principal string) {
	a.inUse++
	a.held[principal]++
}

func (a *admission) unqueueLocked(principal string) {
	if a.queued[principal]--; a.queued[principal] <= 0 {
		delete(a.queued, principal)
	}
}

func (a *admission) release(principal string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(principal)
}

// releaseLocked frees principal's place and hands the free places to the
// fairest waiters.
func (a *admission) releaseLocked(principal string) {
	a.inUse--
	if a.held[principal]--; a.held[principal] <= 0 {
		delete(a.held, principal)
	}
	for a.inUse < a.capacity {
		best := -1
		for i, w := range a.waiters {
			if a.held[w.principal] >= a.perPrincipal {
				continue
			}
			if best < 0 || a.held[w.principal] < a.held[a.waiters[best].principal] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := a.waiters[best]
		a.waiters = append(a.waiters[:best], a.waiters[best+1:]...)
		a.unqueueLocked(w.principal)
		a.grantLocked(w.principal)
		close(w.granted)
	}
}
