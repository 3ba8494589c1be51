package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// What a resumable run's journal keeps beside each call's result, and
// how much of it (issue 19, H1–H3).
//
// The flow. A replayed call is not made again, so nothing inside it runs
// either: the calls of a skill's program, the pages of tools.paginate,
// the tokens resolved in its arguments, a memoised result's sources. The
// run's flow learned from all of them while the live attempt ran the
// call; the replay must learn the same, or a data-flow rule lets through
// and the filter shows raw what the live attempt stopped and hid. So the
// journal keeps, for each program call, every observation the flow made
// while it ran (source, data, provenance), and the replay makes them
// again, in their order, whatever the tool (helpers included).
//
// The bound. Every execute_code of protocol 2026-07-28 may be resumed, so
// its journal grows with every result its program reads, in memory, then
// in the store when it asks. Limits.MaxJournalBytes bounds it as it grows:
// past it the run keeps nothing more (what it kept is dropped) and goes
// on; if it then asks the client, it fails with KindJournalLimit, whose
// message says what to do. A run that never asks is not affected.

// KindJournalLimit fails a run that read more before asking the client
// than its journal may keep to replay it (Limits.MaxJournalBytes).
const KindJournalLimit executor.Kind = "journal_limit"

// DefaultMaxJournalBytes is Limits.MaxJournalBytes's default: the
// programs' cache's value bound (the store keeps the journal as a cache
// entry), and a requestState that carries it still fits a request body.
const DefaultMaxJournalBytes = 1 << 20

// journalSeen is one observation of the run's flow made while a program
// call ran: what the flow was told came from Source.
type journalSeen struct {
	Source string `json:"s"`
	// Data is what was observed, or Result says it is the call's own
	// result (journalCall.Out), kept once.
	Data   json.RawMessage    `json:"d,omitempty"`
	Result bool               `json:"r,omitempty"`
	From   *filter.Provenance `json:"f,omitempty"`
}

// observations collects what the run's flow observes while one program
// call of a resumable run runs: its own result, and those of the calls
// made inside it (Call.seen; gate.through hands it on).
type observations struct {
	r *resumption

	mu    sync.Mutex
	seen  []journalSeen
	bytes int
	full  bool // over the journal's bound: nothing kept
	taken bool // journaled: an observation after this is missed
}

// note keeps an observation the run's flow is told. Nil keeps nothing.
func (o *observations) note(source string, data json.RawMessage, from filter.Provenance) {
	if o == nil {
		return
	}
	s := journalSeen{Source: source, Data: bytes.Clone(data)}
	if !from.IsZero() {
		s.From = &from
	}
	n := s.cost()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bytes += n
	if o.taken {
		// A call inside the call ended after it (a skill's call it did
		// not await): the journal misses what the flow learned.
		o.r.missed()
		return
	}
	if o.full {
		return
	}
	if !o.r.fits(o.bytes) {
		o.full, o.seen = true, nil
		o.r.overflow(o.bytes)
		return
	}
	o.seen = append(o.seen, s)
}

// take returns what was kept for the call that returned out, any
// observation of out itself (under whatever name: a call by an alias is
// observed under the tool's) marked as such, and whether all of it was
// kept.
func (o *observations) take(out json.RawMessage) ([]journalSeen, bool) {
	if o == nil {
		return nil, true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.taken = true
	if o.full {
		return nil, false
	}
	seen := o.seen
	for i := range seen {
		if len(out) > 0 && bytes.Equal(seen[i].Data, out) {
			seen[i].Data, seen[i].Result = nil, true
		}
	}
	return seen, true
}

// replaySeen tells the run's flow again what it observed while the
// journaled call c ran. A store tool's result (of view) is read for the
// sources of its data as the live call read it, whether or not the
// journal's From has them (a journal written before they were kept
// there: issue 19, attack21 P1). A refusal of what the flow keeps (the
// run's results in flight) is the replayed call's error, as it would
// have been the call's.
func (r *resumption) replaySeen(run *Run, c journalCall, view *tools.View) error {
	if run.flow == nil {
		return nil
	}
	for _, s := range c.Seen {
		data := s.Data
		if s.Result {
			data = c.Out
		}
		var from filter.Provenance
		if s.From != nil {
			from = *s.From
		}
		if t, ok := view.Get(s.Source); ok {
			from = from.Union(storedOf(t, data).from)
		}
		if err := run.flow.observe(s.Source, data, from, nil, nil); err != nil {
			return observeError(s.Source, err)
		}
	}
	return nil
}

// cost is about what an observation takes in the journal, as JSON: never
// less.
func (s journalSeen) cost() int {
	n := 32 + len(s.Source) + len(s.Data)
	if s.From != nil {
		n += provenanceCost(*s.From)
	}
	return n
}

func provenanceCost(p filter.Provenance) int {
	n := 16
	for _, s := range p.Sources() {
		n += len(s) + 4
	}
	return n
}

// cost is about what a call takes in the journal, as JSON: never less.
func (c journalCall) cost() int {
	n := 64 + len(c.Tool) + len(c.Args) + len(c.Out)
	if c.Err != nil {
		n += 32 + len(c.Err.Message) + len(c.Err.Code) + len(c.Err.Tool) + len(c.Err.Problems)
	}
	if c.From != nil {
		n += provenanceCost(*c.From)
	}
	for _, s := range c.Seen {
		n += s.cost()
	}
	return n
}

// limit bounds the journal at max bytes (0: no bound), counting what the
// journal it replays holds already: its calls and the client's answers.
func (r *resumption) limit(max int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max = max
	r.kept = 0
	for _, c := range r.prior.Calls {
		r.kept += c.cost()
	}
	for id, a := range r.prior.Answers {
		r.kept += 16 + len(id) + len(a)
	}
	r.read = r.kept
	if r.max > 0 && r.kept > r.max {
		r.over = true
	}
}

// fits reports whether n bytes more keep the journal within its bound.
func (r *resumption) fits(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.over && (r.max <= 0 || r.kept+n <= r.max)
}

// overflow marks the journal over its bound, n bytes more read: the run
// keeps nothing more, and drops what it kept; it cannot be resumed.
func (r *resumption) overflow(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overLocked(n)
}

// missed marks the journal without an observation the live run made: the
// run cannot be resumed.
func (r *resumption) missed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = true
	r.overLocked(0)
}

// overLocked is overflow under r.mu.
func (r *resumption) overLocked(n int) {
	r.read += n
	r.over, r.calls = true, nil
}

// keep journals c, a call made live, within the bound. Under r.mu.
func (r *resumption) keep(c journalCall, complete bool) {
	n := c.cost()
	if r.over || !complete || (r.max > 0 && r.kept+n > r.max) {
		r.overLocked(n)
		return
	}
	r.kept += n
	r.read += n
	r.calls = append(r.calls, c)
}

// journalFull is the failure of a run whose journal went over its bound
// and that asks the client: it stops the run. Under r.mu.
func (r *resumption) journalFull() error {
	if r.tooBig == nil && r.lost {
		r.tooBig = errors.New("the run cannot be resumed after asking the client (llm.*, approval): a call made inside one of its calls (a skill's program's call it did not await) ended after it, and what it returned is not in the run's journal; await every call in a skill's program, or ask the client before making such calls")
	}
	if r.tooBig == nil {
		r.tooBig = fmt.Errorf("the run read about %d bytes of tool results before it asked the client (llm.*, approval), more than a run resumed after input_required may keep to replay them (limits.max_journal_bytes = %d): ask before reading, or read less before asking (ask the tools for less, page, keep what you need in the program); or raise limits.max_journal_bytes (with cache.max_value_bytes)", r.read, r.max)
	}
	if r.stop != nil {
		r.stop(r.tooBig)
	}
	return r.tooBig
}
