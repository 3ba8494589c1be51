package mcpserver

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// eventStore keeps the recent events of each Streamable HTTP session so a
// client whose stream broke can resume it (Last-Event-ID). Unlike mcp-go's
// in-memory store it is bounded: each session keeps its last maxEvents
// events and maxBytes of them, the least recently active sessions are
// dropped past maxSessions, and past maxTotal bytes in all the oldest
// events go first, by principal: a principal past its share of the total
// (three quarters) loses the oldest events of its own largest session,
// and past the total the principal holding the most does — so a
// principal that fills its sessions with large answers loses its own
// events before another's small ones (attack15 I7: 8 MiB for each of
// 1,024 sessions was 8 GiB for anyone to fill; attack17 M2: the session
// holding the most lost its events whoever held it, and one principal's
// 64 sessions each a little smaller than another's one took that one's
// resumption). Resuming from an event that was dropped fails as an
// unknown event ID, and the client starts a new stream.
type eventStore struct {
	maxEvents, maxBytes, maxSessions, maxTotal, maxPrincipal int
	// principalOf names the principal of a session ("" when unknown).
	principalOf func(session string) string

	mu       sync.Mutex
	bytes    int            // of every session's events
	held     map[string]int // bytes of each principal's sessions' events
	seq      int64
	sessions map[string]*list.Element // of *eventLog
	lru      *list.List
}

type eventLog struct {
	session, principal string
	events             []storedEvent
	bytes              int
}

type storedEvent struct {
	id, stream string
	message    json.RawMessage
}

var _ server.EventStore = (*eventStore)(nil)

// newEventStore returns a store of the bounds given; principalOf names
// each session's principal (nil: one principal).
func newEventStore(maxEvents, maxBytes, maxSessions, maxTotal int, principalOf func(session string) string) *eventStore {
	if principalOf == nil {
		principalOf = func(string) string { return "" }
	}
	return &eventStore{
		maxEvents:    maxEvents,
		maxBytes:     maxBytes,
		maxSessions:  maxSessions,
		maxTotal:     maxTotal,
		maxPrincipal: max(maxTotal/4*3, 1),
		principalOf:  principalOf,
		held:         map[string]int{},
		sessions:     map[string]*list.Element{},
		lru:          list.New(),
	}
}

func (s *eventStore) StoreEvent(_ context.Context, session, stream string, message json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.sessions[session]
	if !ok {
		el = s.lru.PushFront(&eventLog{session: session, principal: s.principalOf(session)})
		s.sessions[session] = el
		for s.lru.Len() > s.maxSessions {
			s.remove(s.lru.Back())
		}
	} else {
		s.lru.MoveToFront(el)
	}
	log := el.Value.(*eventLog)
	s.seq++
	id := strconv.FormatInt(s.seq, 10)
	msg := append(json.RawMessage(nil), message...)
	log.events = append(log.events, storedEvent{id: id, stream: stream, message: msg})
	log.bytes += len(msg)
	s.bytes += len(msg)
	s.held[log.principal] += len(msg)
	for len(log.events) > 1 && (len(log.events) > s.maxEvents || log.bytes > s.maxBytes) {
		s.dropOldest(log)
	}
	// The principal's share, from its own largest session; then the
	// total, from the largest session of the principal holding the most.
	s.shed(log.principal, func() bool { return s.held[log.principal] > s.maxPrincipal })
	for s.bytes > s.maxTotal {
		most := log.principal
		for p, n := range s.held {
			if n > s.held[most] {
				most = p
			}
		}
		if !s.shed(most, func() bool { return s.bytes > s.maxTotal }) {
			break
		}
	}
	return id, nil
}

// shed drops the oldest events of principal's largest session while over
// says so and it has any, then of its next largest; false when principal
// has no event left to drop.
func (s *eventStore) shed(principal string, over func() bool) bool {
	for over() {
		var largest *eventLog
		for el := s.lru.Front(); el != nil; el = el.Next() {
			if l := el.Value.(*eventLog); l.principal == principal && len(l.events) > 0 && (largest == nil || l.bytes > largest.bytes) {
				largest = l
			}
		}
		if largest == nil {
			return false
		}
		for over() && len(largest.events) > 0 {
			s.dropOldest(largest)
		}
	}
	return true
}

// dropOldest forgets the oldest event of log.
func (s *eventStore) dropOldest(log *eventLog) {
	n := len(log.events[0].message)
	log.bytes -= n
	s.bytes -= n
	s.give(log.principal, n)
	log.events[0] = storedEvent{}
	log.events = log.events[1:]
}

// give takes n bytes off what principal holds.
func (s *eventStore) give(principal string, n int) {
	if s.held[principal] -= n; s.held[principal] <= 0 {
		delete(s.held, principal)
	}
}

// remove forgets a session's events.
func (s *eventStore) remove(el *list.Element) {
	log := el.Value.(*eventLog)
	s.bytes -= log.bytes
	s.give(log.principal, log.bytes)
	delete(s.sessions, log.session)
	s.lru.Remove(el)
}

func (s *eventStore) ReplayEventsAfter(_ context.Context, session, lastEventID string, send func(string, json.RawMessage) error) (string, error) {
	s.mu.Lock()
	var replay []storedEvent
	stream := ""
	found := false
	if el, ok := s.sessions[session]; ok {
		log := el.Value.(*eventLog)
		for i, e := range log.events {
			if e.id == lastEventID {
				found, stream = true, e.stream
				for _, next := range log.events[i+1:] {
					if next.stream == stream {
						replay = append(replay, next)
					}
				}
				break
			}
		}
	}
	s.mu.Unlock()
	if !found {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	for _, e := range replay {
		if err := send(e.id, e.message); err != nil {
			return stream, err
		}
	}
	return stream, nil
}

func (s *eventStore) PurgeSession(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.sessions[session]; ok {
		s.remove(el)
	}
	return nil
}
