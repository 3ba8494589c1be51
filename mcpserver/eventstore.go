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
// events and maxBytes of them, and the least recently active sessions are
// dropped past maxSessions. Resuming from an event that was dropped fails
// as an unknown event ID, and the client starts a new stream.
type eventStore struct {
	maxEvents, maxBytes, maxSessions int

	mu       sync.Mutex
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

func newEventStore(maxEvents, maxBytes, maxSessions int) *eventStore {
	return &eventStore{
		maxEvents:   maxEvents,
		maxBytes:    maxBytes,
		maxSessions: maxSessions,
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
			oldest := s.lru.Back()
			delete(s.sessions, oldest.Value.(*eventLog).session)
			s.lru.Remove(oldest)
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
	for len(log.events) > 1 && (len(log.events) > s.maxEvents || log.bytes > s.maxBytes) {
		log.bytes -= len(log.events[0].message)
		log.events[0] = storedEvent{}
		log.events = log.events[1:]
	}
	return id, nil
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
		s.lru.Remove(el)
		delete(s.sessions, session)
	}
	return nil
}
