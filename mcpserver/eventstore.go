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
// events of the session holding the most go first — so a principal that
// fills its sessions with large answers loses its own events before
// another's small ones (attack15 I7: 8 MiB for each of 1,024 sessions was
// 8 GiB for anyone to fill). Resuming from an event that was dropped
// fails as an unknown event ID, and the client starts a new stream.
type eventStore struct {
	maxEvents, maxBytes, maxSessions, maxTotal int

	mu       sync.Mutex
	bytes    int // of every session's events
	seq      int64
	sessions map[string]*list.Element // of *eventLog
	lru      *list.List
}

type eventLog struct {
	session string
	events  []storedEvent
	bytes   int
}

type storedEvent struct {
	id, stream string
	message    json.RawMessage
}

var _ server.EventStore = (*eventStore)(nil)

func newEventStore(maxEvents, maxBytes, maxSessions, maxTotal int) *eventStore {
	return &eventStore{
		maxEvents:   maxEvents,
		maxBytes:    maxBytes,
		maxSessions: maxSessions,
		maxTotal:    maxTotal,
		sessions:    map[string]*list.Element{},
		lru:         list.New(),
	}
}

func (s *eventStore) StoreEvent(_ context.Context, session, stream string, message json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.sessions[session]
	if !ok {
		el = s.lru.PushFront(&eventLog{session: session})
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
	for len(log.events) > 1 && (len(log.events) > s.maxEvents || log.bytes > s.maxBytes) {
		s.dropOldest(log)
	}
	for s.bytes > s.maxTotal {
		largest := log
		for el := s.lru.Front(); el != nil; el = el.Next() {
			if l := el.Value.(*eventLog); l.bytes > largest.bytes {
				largest = l
			}
		}
		if len(largest.events) == 0 {
			break
		}
		for s.bytes > s.maxTotal && len(largest.events) > 0 {
			s.dropOldest(largest)
		}
	}
	return id, nil
}

// dropOldest forgets the oldest event of log.
func (s *eventStore) dropOldest(log *eventLog) {
	n := len(log.events[0].message)
	log.bytes -= n
	s.bytes -= n
	log.events[0] = storedEvent{}
	log.events = log.events[1:]
}

// remove forgets a session's events.
func (s *eventStore) remove(el *list.Element) {
	log := el.Value.(*eventLog)
	s.bytes -= log.bytes
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
