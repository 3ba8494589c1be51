package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func TestEventStoreReplaysAndStaysBounded(t *testing.T) {
	t.Parallel()
	s := newEventStore(4, 1<<20, 2, 64<<20, nil)
	ctx := t.Context()
	var ids []string
	for i := range 6 {
		stream := "a"
		if i%2 == 1 {
			stream = "b"
		}
		id, err := s.StoreEvent(ctx, "s1", stream, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Events 2..5 remain; after event 2 (stream a) comes event 4 on stream a.
	var got []string
	stream, err := s.ReplayEventsAfter(ctx, "s1", ids[2], func(id string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	})
	if err != nil || stream != "a" || len(got) != 1 || got[0] != `{"n":4}` {
		t.Fatalf("replay: stream %q %v %v", stream, got, err)
	}
	// Event 0 was dropped: the client must start over.
	if _, err := s.ReplayEventsAfter(ctx, "s1", ids[0], nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Errorf("dropped event: %v", err)
	}
	// Past two sessions, the least recently active goes.
	s.StoreEvent(ctx, "s2", "x", json.RawMessage(`1`))
	s.StoreEvent(ctx, "s3", "x", json.RawMessage(`1`))
	if _, err := s.ReplayEventsAfter(ctx, "s1", ids[5], nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Errorf("evicted session still replays: %v", err)
	}
	s.PurgeSession(ctx, "s3")
	if len(s.sessions) != 1 {
		t.Errorf("%d sessions after purge", len(s.sessions))
	}
}

// TestEventStoreTotalBounded: past the store's total, the events of the
// session holding the most go first — each session kept up to its own
// bound, for up to its number of sessions, 8 GiB by design (attack15 I7).
func TestEventStoreTotalBounded(t *testing.T) {
	t.Parallel()
	const maxTotal = 4 << 20
	s := newEventStore(256, 1<<20, 1024, maxTotal, nil)
	ctx := t.Context()
	small, err := s.StoreEvent(ctx, "victim", "a", json.RawMessage(`"hello"`))
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 100<<10) + `"`)
	for i := range 200 {
		if _, err := s.StoreEvent(ctx, fmt.Sprintf("attacker-%d", i%16), "a", big); err != nil {
			t.Fatal(err)
		}
	}
	if s.bytes > maxTotal {
		t.Errorf("the store holds %d bytes, past its total of %d", s.bytes, maxTotal)
	}
	total := 0
	for el := s.lru.Front(); el != nil; el = el.Next() {
		total += el.Value.(*eventLog).bytes
	}
	if total != s.bytes {
		t.Errorf("the logs hold %d bytes, the store counts %d", total, s.bytes)
	}
	s.StoreEvent(ctx, "victim", "a", json.RawMessage(`"again"`))
	var got []string
	if _, err := s.ReplayEventsAfter(ctx, "victim", small, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil || len(got) != 1 {
		t.Errorf("the small session's events went with the large ones': %v %v", got, err)
	}
}

// TestEventStoreBoundByPrincipal (attack17 M2): past the total, the events
// dropped are those of the principal holding the most, not of the largest
// session whoever holds it — a principal whose many sessions each hold a
// little less than another's one made each of its new events drop that
// session's oldest — and a principal past its share (three quarters of
// the total) loses its own oldest events.
func TestEventStoreBoundByPrincipal(t *testing.T) {
	t.Parallel()
	const maxTotal = 4 << 20
	principal := func(session string) string { p, _, _ := strings.Cut(session, "/"); return p }
	s := newEventStore(256, 1<<20, 1024, maxTotal, principal)
	ctx := t.Context()
	// The victim's one session holds 16 events of 62 KiB; the
	// attacker's 64 hold 15 of 60 KiB each.
	chunk := json.RawMessage(`"` + strings.Repeat("v", 62<<10) + `"`)
	first, err := s.StoreEvent(ctx, "victim/1", "a", chunk)
	if err != nil {
		t.Fatal(err)
	}
	for range 15 {
		s.StoreEvent(ctx, "victim/1", "a", chunk)
	}
	small := json.RawMessage(`"` + strings.Repeat("x", 60<<10) + `"`)
	for i := range 64 * 15 {
		if _, err := s.StoreEvent(ctx, fmt.Sprintf("attacker/%d", i%64), "a", small); err != nil {
			t.Fatal(err)
		}
	}
	if s.bytes > maxTotal || s.held["attacker"] > maxTotal/4*3 {
		t.Errorf("the store holds %d bytes, the attacker %d: past the total %d or the share %d", s.bytes, s.held["attacker"], maxTotal, maxTotal/4*3)
	}
	n := 0
	if _, err := s.ReplayEventsAfter(ctx, "victim/1", first, func(string, json.RawMessage) error { n++; return nil }); err != nil || n != 15 {
		t.Errorf("the victim's session lost its events to another principal's: replayed %d of 15 (%v)", n, err)
	}
	sum := map[string]int{}
	for el := s.lru.Front(); el != nil; el = el.Next() {
		l := el.Value.(*eventLog)
		sum[l.principal] += l.bytes
	}
	for p, b := range sum {
		if s.held[p] != b {
			t.Errorf("principal %q's logs hold %d bytes, the store counts %d", p, b, s.held[p])
		}
	}
}
