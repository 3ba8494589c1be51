package mcpserver

import (
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
)

// listChangedWindow is the longest a change of the catalogue waits to be
// announced, and so the shortest time between two announcements to one
// session: the changes of a window are told once, at its end.
const listChangedWindow = 250 * time.Millisecond

// listChanges tells clients that the catalogue changed: tools/list_changed
// and resources/list_changed (and resources/updated for the tree's
// subscribed resources) to every session for a change every caller sees,
// to the principal's sessions for a change of its own tools. It
// coalesces them: a change starts a window, the changes within it are
// told once when it ends, and none is lost (attack15 L1: each of one
// principal's skills.publish and skills.unpublish was told to every
// client at once).
type listChanges struct {
	window time.Duration
	// flush tells of what a window gathered: changes every caller sees
	// (global), and those of each scope.
	flush func(global bool, scopes []string)
	// after schedules f after d; time.AfterFunc but in tests.
	after func(d time.Duration, f func()) (stop func() bool)

	mu      sync.Mutex
	pending bool // a window is open
	global  bool
	scopes  map[string]bool
	stop    func() bool
	closed  bool
	running sync.WaitGroup // a window's end in progress
}

func newListChanges(window time.Duration, flush func(global bool, scopes []string)) *listChanges {
	return &listChanges{window: window, flush: flush, scopes: map[string]bool{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// changed records ch, to be told at the end of the current window (one
// starts if none is open).
func (l *listChanges) changed(ch tools.Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if ch.Scope == "" {
		l.global = true
	} else {
		l.scopes[ch.Scope] = true
	}
	if !l.pending {
		l.pending = true
		l.running.Add(1)
		l.stop = l.after(l.window, l.end)
	}
}

// end ends the window: what it gathered is told.
func (l *listChanges) end() {
	defer l.running.Done()
	l.mu.Lock()
	global, scopes := l.global, l.scopes
	l.global, l.scopes, l.pending = false, map[string]bool{}, false
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return
	}
	ss := make([]string, 0, len(scopes))
	for s := range scopes {
		ss = append(ss, s)
	}
	slices.Sort(ss)
	l.flush(global, ss)
}

// close drops what is not told yet, and waits for a window's end in
// progress.
func (l *listChanges) close() {
	l.mu.Lock()
	l.closed = true
	if l.pending && l.stop() {
		l.pending = false
		l.running.Done()
	}
	l.mu.Unlock()
	l.running.Wait()
}

// announce tells the sessions what a window of changes gathered (see
// listChanges). In direct mode, the tools changed were synced at once
// (syncDirect), and mcp-go told of them then.
func (s *Server) announce(direct bool) func(global bool, scopes []string) {
	return func(global bool, scopes []string) {
		for _, scope := range scopes {
			// A principal's own tools changed (its skills): only its
			// sessions' tree changed, and nobody else learns of it.
			for _, id := range s.owners.sessionsOf(scope) {
				s.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationToolsListChanged, nil)
				s.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourcesListChanged, nil)
			}
		}
		if !global {
			return
		}
		if !direct {
			s.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
		}
		// The tree's files changed, and with them what the templates list.
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
		s.toolTreeChanged()
	}
}
