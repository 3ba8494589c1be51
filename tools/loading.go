package tools

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A source that takes a while to make its tools (an OpenAPI description
// of thousands of operations, fetched and compiled) says so through a
// Load, so that while it loads the manifest lists it as loading, search
// and the tree answer "loading, ready in about N s", and a program that
// calls it gets an error of code CodeLoading rather than a ReferenceError:
//
//	load, err := reg.BeginLoad("github", "fetching the description")
//	…
//	load.Progress(tools.LoadProgress{Stage: "compiling operations", Done: 120, Total: 1100})
//	…
//	reg.Register(ts...)
//	load.Done()             // or load.Fail("what failed, and what to change")
//
// Progress is cheap: it changes no version, so views, trees and search
// indexes are not rebuilt; readers see it live through CategoryStatus.Load.
// BeginLoad, Done and Fail are changes like SetCategoryStatus.

// Codes of a call to a category whose source is not there (View.Call,
// Registry.Call): still loading, or unavailable, with the reason.
const (
	CodeLoading     = "loading"
	CodeUnavailable = "unavailable"
)

// LoadProgress is what a loading source reports of itself.
type LoadProgress struct {
	// Stage says what it is doing, in a few words: "fetching the
	// description", "compiling operations".
	Stage string
	// Done counts the units of work finished out of Total (operations,
	// bytes); Total 0 means unknown.
	Done, Total int
	// Left is the source's own estimate of the time left, when it has one
	// (from how long its last load took, say); 0 lets the registry
	// estimate it from Done, Total and the time since BeginLoad.
	Left time.Duration
}

// LoadState is a load as readers see it.
type LoadState struct {
	Stage       string
	Done, Total int
	// Elapsed is the time since BeginLoad.
	Elapsed time.Duration
	// Left estimates the time until the load ends; 0 when nothing gives
	// an estimate yet.
	Left time.Duration
}

// Load is one source's loading of its category's tools, from
// Registry.BeginLoad to Done or Fail. Its methods are safe for concurrent
// use; those of a nil *Load do nothing.
type Load struct {
	reg      *Registry
	category string
	started  time.Time

	mu    sync.Mutex
	p     LoadProgress
	ended bool
}

// BeginLoad marks category as loading, with stage saying what the source
// does first, until the returned Load's Done or Fail. A loading category
// is listed (in views without a toolset) even before it holds tools.
func (r *Registry) BeginLoad(category, stage string) (*Load, error) {
	if !ValidCategory(category) {
		return nil, fmt.Errorf("category name %q: want a lower-case identifier ([a-z][a-z0-9_]*)", category)
	}
	l := &Load{reg: r, category: category, started: time.Now(), p: LoadProgress{Stage: stage}}
	r.mu.Lock()
	r.statuses[category] = CategoryStatus{Loading: true, Reason: stage, Load: l}
	r.loads[l] = struct{}{}
	if len(r.loads) == 1 {
		r.loadsIdle = make(chan struct{})
	}
	ch := Change{}
	subs := r.changed(&ch)
	r.mu.Unlock()
	notify(subs, ch)
	return l, nil
}

// Progress reports how far the load got. It does not change the
// registry's version.
func (l *Load) Progress(p LoadProgress) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.ended {
		if p.Stage == "" {
			p.Stage = l.p.Stage
		}
		l.p = p
	}
	l.mu.Unlock()
}

// Done ends the load: the source's tools are registered, and the
// category's status is cleared.
func (l *Load) Done() { l.end(CategoryStatus{}) }

// Fail ends the load with the category unavailable: reason says what
// failed and what to change.
func (l *Load) Fail(reason string) { l.end(CategoryStatus{Unavailable: true, Reason: reason}) }

func (l *Load) end(st CategoryStatus) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	l.mu.Unlock()
	r := l.reg
	r.mu.Lock()
	delete(r.loads, l)
	if len(r.loads) == 0 && r.loadsIdle != nil {
		close(r.loadsIdle)
		r.loadsIdle = nil
	}
	var subs []func(Change)
	ch := Change{}
	// A status set since (SetCategoryStatus, another load) stays.
	if cur := r.statuses[l.category]; cur.Load == l {
		if st == (CategoryStatus{}) {
			delete(r.statuses, l.category)
		} else {
			r.statuses[l.category] = st
		}
		subs = r.changed(&ch)
	}
	r.mu.Unlock()
	notify(subs, ch)
}

// State returns what the load reported, with the time since it began and
// an estimate of the time left: the source's own, else the time so far
// scaled by the work left, once a tenth of it is done.
func (l *Load) State() LoadState {
	if l == nil {
		return LoadState{}
	}
	l.mu.Lock()
	p := l.p
	l.mu.Unlock()
	st := LoadState{Stage: p.Stage, Done: p.Done, Total: p.Total, Elapsed: time.Since(l.started)}
	switch {
	case p.Left > 0:
		st.Left = p.Left
	case p.Total > 0 && p.Done*10 >= p.Total:
		st.Left = time.Duration(float64(st.Elapsed) * float64(p.Total-min(p.Done, p.Total)) / float64(p.Done))
	}
	return st
}

// WaitLoads waits until no load is in progress, or ctx ends; it returns
// ctx's error then.
func (r *Registry) WaitLoads(ctx context.Context) error {
	r.mu.RLock()
	idle := r.loadsIdle
	r.mu.RUnlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Statuses returns the categories whose status is set (loading or
// unavailable), with their status.
func (r *Registry) Statuses() map[string]CategoryStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]CategoryStatus, len(r.statuses))
	for c, st := range r.statuses {
		out[c] = st
	}
	return out
}

// Describe says in a few words where a category's source stands, for
// people and models: "" when it is available, else "loading (compiling
// operations, 420 of 1100; ready in about 12 s)" or "unavailable (the
// reason)".
func (st CategoryStatus) Describe() string {
	switch {
	case st.Loading:
		return "loading (" + st.Load.State().Describe(st.Reason) + ")"
	case st.Unavailable:
		return "unavailable (" + st.Reason + ")"
	}
	return ""
}

// Describe renders a load's state: its stage (stage when it reported
// none), its count, and when it should be ready.
func (s LoadState) Describe(stage string) string {
	if s.Stage != "" {
		stage = s.Stage
	}
	out := stage
	if s.Total > 0 {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%d of %d", min(s.Done, s.Total), s.Total)
	}
	if out != "" {
		out += "; "
	}
	return out + s.ReadyIn()
}

// ReadyIn says when the load should end: "ready in about 12 s", or, with
// no estimate yet, how long it has been loading.
func (s LoadState) ReadyIn() string {
	if s.Left > 0 {
		return "ready in about " + roughDuration(s.Left)
	}
	return "loading for " + roughDuration(s.Elapsed) + ", no estimate yet"
}

// RetryAfter is when to try again: the estimate, else a few seconds.
func (s LoadState) RetryAfter() time.Duration {
	if s.Left > 0 {
		return s.Left
	}
	return 5 * time.Second
}

// roughDuration renders d for people: "3 s", "2 min".
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "1 s"
	case d < 100*time.Second:
		return fmt.Sprintf("%d s", int((d+time.Second/2)/time.Second))
	default:
		return fmt.Sprintf("%d min", int((d+time.Minute/2)/time.Minute))
	}
}
