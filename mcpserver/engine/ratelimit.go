package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Rate limits shared by the instances of one store.
//
// Alone, an instance limits each principal with token buckets in memory
// (limits.go). Behind a load balancer that would let a principal make N
// times its limit over N instances, so with Config.Shared the limits are
// fixed windows counted in the store: a window lasts burst/rate (at least
// a second) and holds burst units, which is the bucket's rate and, at
// most, its burst. An instance reserves units from the store's counter in
// small batches (one atomic INSERT … ON CONFLICT DO UPDATE … RETURNING),
// spends them locally, and reserves again when they run out.
//
// Tolerance, for N instances and a batch of b units:
//   - never more than burst units in one window over all instances (the
//     counter is atomic); across a window's edge, up to 2·burst in a span
//     of one window — a bucket allows burst + rate·span there;
//   - at most N·(b−1) units reserved by an instance but not spent before
//     the window ends, which nobody gets (a refusal where a single
//     instance would have admitted);
//   - instances' clocks agree on window edges to within their skew.
//
// When the store cannot be reached, an instance falls back to its own
// buckets and says so in its log (once a minute): the limits then hold per
// instance until the store is back.

// quotaStore reserves units of a limit in a fixed window, across the
// instances of one store (the store's ReserveQuota).
type quotaStore interface {
	ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error)
}

// sharedQuota spends the per-principal limits from windows counted in a
// quotaStore.
type sharedQuota struct {
	store quotaStore
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex
	held     map[string]*reservation // by limit key
	lastWarn time.Time
}

// reservation is what this instance reserved of one limit's window and
// has not spent yet.
type reservation struct {
	mu         sync.Mutex
	start, end time.Time // the window
	left       int
}

func newSharedQuota(store quotaStore, log *slog.Logger) *sharedQuota {
	return &sharedQuota{store: store, log: log, now: time.Now, held: map[string]*reservation{}}
}

// errNotShared is what take returns on a nil *sharedQuota: the limits are
// this instance's own.
var errNotShared = errors.New("rate limits are not shared")

// sharedWindow is the window and quota that stand for a bucket of
// perMinute and burst: burst units per burst/rate, at least a second.
func sharedWindow(perMinute, burst int) (time.Duration, int) {
	w := time.Duration(burst) * time.Minute / time.Duration(perMinute)
	if w >= time.Second {
		return w, burst
	}
	return time.Second, max(1, perMinute/60)
}

// batchOf is how many units an instance reserves at once of a window's
// quota: a sixteenth, between 1 and 64.
func batchOf(quota int) int { return min(64, max(1, quota/16)) }

// take spends one unit of the limit key, or says how long until the next
// window. An error means the store could not be asked: the caller applies
// its own bucket instead.
func (q *sharedQuota) take(ctx context.Context, key string, perMinute, burst int) (time.Duration, bool, error) {
	if q == nil {
		return 0, false, errNotShared
	}
	window, quota := sharedWindow(perMinute, burst)
	now := q.now()
	start := now.Truncate(window)
	q.mu.Lock()
	r, ok := q.held[key]
	if !ok {
		r = &reservation{}
		q.held[key] = r
	}
	q.mu.Unlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.start.Equal(start) {
		r.start, r.end, r.left = start, start.Add(window), 0
	}
	if r.left == 0 {
		got, err := q.store.ReserveQuota(ctx, key, start, quota, batchOf(quota))
		if err != nil {
			q.warn(err)
			return 0, false, err
		}
		if got == 0 {
			return start.Add(window).Sub(now), false, nil
		}
		r.left = got
	}
	r.left--
	return 0, true, nil
}

// warn logs that the shared limits fell back to this instance's, at most
// once a minute.
func (q *sharedQuota) warn(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := q.now(); now.Sub(q.lastWarn) >= time.Minute {
		q.lastWarn = now
		q.log.Warn("shared rate limits unavailable; limiting per instance until the store answers", "err", err)
	}
}

// sweep forgets reservations of windows that have ended, so that the map
// holds only principals active in the current window.
func (q *sharedQuota) sweep() {
	if q == nil {
		return
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, r := range q.held {
		if r.mu.TryLock() {
			if now.After(r.end) {
				delete(q.held, k)
			}
			r.mu.Unlock()
		}
	}
}
