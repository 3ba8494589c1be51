package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/codecell/codecell/tools"
)

// Shapes keeps what a Source learned of the results of tools that declare
// no output schema, so that it survives restarts: one JSON record per
// source (ShapeSource) and tool (its name on the server), whose content
// is the Source's business. The stores of memory/sqlite and
// memory/postgres keep them.
type Shapes interface {
	ToolShapes(ctx context.Context, source string) (map[string]json.RawMessage, error)
	PutToolShape(ctx context.Context, source, tool string, shape json.RawMessage) error
}

// ShapeSource is the source name under which the shapes of the server
// configured as name are kept.
func ShapeSource(name string) string { return "upstream/" + name }

// How much of a tool's results is observed: at most learnMaxResults per
// tool, and none once learnStableAfter results in a row left the schema
// as it was.
const (
	learnMaxResults  = 32
	learnStableAfter = 8
	// learnQueue and learnQueueBytes bound the results waiting to be
	// observed, one per tool at most; a result that finds the queue full
	// is not observed.
	learnQueue      = 64
	learnQueueBytes = 8 << 20
	// shapeIOTimeout bounds reading and writing the shapes in the store.
	shapeIOTimeout = 5 * time.Second
)

// learning is what an upstream learns of the results of one tool that
// declares no output schema.
type learning struct {
	// basis identifies what the shape was learned of: the server's name
	// and version, the tool's name and input schema. Another basis starts
	// learning over.
	basis string
	// inf and unchanged belong to the goroutine that observes (Source.learn).
	inf       *tools.Inferrer
	unchanged int // results in a row that left the schema as it was
	// Guarded by the upstream's mu:
	done    bool                  // stable, or observed enough: results are no longer looked at
	pending bool                  // a result of the tool waits in the queue
	shown   *tools.InferredSchema // what the registry shows; nil before the first result
	// seen holds, on a server of several principals, the principals
	// (principalKey) whose results held each property name: a name is
	// shown once ShapeQuorum of them did (see agreedShape). Observing
	// goroutine only.
	seen map[string]map[string]bool
}

// shapeRecord is what the store keeps of a learning.
type shapeRecord struct {
	Basis     string          `json:"basis"`
	Observed  int             `json:"observed"`
	Unchanged int             `json:"unchanged,omitempty"`
	Done      bool            `json:"done,omitempty"`
	Schema    json.RawMessage `json:"schema"`
	// Seen is learning.seen: property name → principal keys.
	Seen map[string][]string `json:"seen,omitempty"`
}

// sample is a result waiting to be observed.
type sample struct {
	u         *upstream
	orig      string
	st        *learning
	principal string
	value     json.RawMessage
}

// basisOf is the basis of what is learned of t's results on the server
// that introduced itself as info.
func basisOf(server, version string, t *remoteTool) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(server), []byte(version), []byte(t.Name), bytes.TrimSpace(t.InputSchema)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// loadShapes reads what was learned of the server's tools before, once,
// before the first connection; what does not match the tools once they
// are listed is set aside then (learningFor).
func (u *upstream) loadShapes(ctx context.Context) {
	store := u.src.cfg.Shapes
	if store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, shapeIOTimeout)
	defer cancel()
	recs, err := store.ToolShapes(ctx, ShapeSource(u.name))
	if err != nil {
		u.log.Warn("read the result shapes learned before; learning them again", "err", err)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for orig, raw := range recs {
		var r shapeRecord
		if err := json.Unmarshal(raw, &r); err != nil || r.Observed < 1 {
			u.log.Debug("left out a stored result shape", "tool", orig, "err", err)
			continue
		}
		inf, err := tools.ResumeInferrer(r.Schema, r.Observed)
		if err != nil {
			u.log.Debug("left out a stored result shape", "tool", orig, "err", err)
			continue
		}
		st := &learning{basis: r.Basis, inf: inf, unchanged: r.Unchanged, done: r.Done}
		for name, keys := range r.Seen {
			for _, k := range keys {
				st.see(name, k)
			}
		}
		schema, _ := st.agreedShape(inf.Schema(), u.src.cfg.ShapeQuorum)
		st.shown = &tools.InferredSchema{Schema: schema, Observed: inf.Observed()}
		u.learned[orig] = st
	}
	if len(u.learned) > 0 {
		u.log.Debug("result shapes learned before", "tools", len(u.learned))
	}
}

// learningFor returns what is learned of t's results on basis, starting
// over when what was learned had another basis, and reports whether the
// tool loses a shape it showed. t declares no output schema. u.mu is held.
func (u *upstream) learningFor(t *remoteTool, basis string) (st *learning, reset bool) {
	st = u.learned[t.Name]
	if st != nil && st.basis == basis {
		return st, false
	}
	reset = st != nil && st.shown != nil
	st = &learning{basis: basis, inf: &tools.Inferrer{}}
	u.learned[t.Name] = st
	return st, reset
}

// inferred is the inferred output schema of the tool orig for the
// registry, or nil.
func (u *upstream) inferred(orig string) *tools.InferredSchema {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st := u.learned[orig]; st != nil {
		return st.shown
	}
	return nil
}

// observe offers a result of the tool orig to be learned from, unless its
// shape is known well enough or one of its results waits already. It
// never blocks: the result is observed later, by Source.learn.
func (u *upstream) observe(principal, orig string, out json.RawMessage) {
	if len(out) > tools.InferMaxBytes {
		return
	}
	u.mu.Lock()
	st := u.learned[orig]
	if st == nil || st.done || st.pending {
		u.mu.Unlock()
		return
	}
	st.pending = true
	u.mu.Unlock()
	n := int64(len(out))
	if u.src.queued.Add(n) <= learnQueueBytes {
		select {
		case u.src.samples <- sample{u: u, orig: orig, st: st, principal: principal, value: bytes.Clone(out)}:
			return
		default:
		}
	}
	u.src.queued.Add(-n)
	u.mu.Lock()
	st.pending = false
	u.mu.Unlock()
}

// learn observes the results offered, one at a time, until ctx ends.
func (s *Source) learn(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case smp := <-s.samples:
			s.queued.Add(-int64(len(smp.value)))
			smp.u.learn(ctx, smp)
		}
	}
}

// learn merges one result into what is learned of its tool; when the
// shape changed, or is now known well enough, it is stored and the tool
// registered again with it.
func (u *upstream) learn(ctx context.Context, smp sample) {
	st := smp.st
	changed, err := st.inf.Observe(smp.value)
	u.mu.Lock()
	st.pending = false
	current := u.learned[smp.orig] == st
	u.mu.Unlock()
	if err != nil {
		u.log.Debug("result not observed", "tool", smp.orig, "err", err)
		return
	}
	if !current {
		return // the tool changed meanwhile
	}
	quorum := u.src.cfg.ShapeQuorum
	if quorum > 1 && st.seeAll(smp.value, principalKey(smp.principal)) {
		changed = true
	}
	if changed {
		st.unchanged = 0
	} else {
		st.unchanged++
	}
	schema, whole := st.agreedShape(st.inf.Schema(), quorum)
	// Stable only once every name is shown: until then, other principals'
	// results are what can show the rest.
	done := st.unchanged >= learnStableAfter && whole || st.inf.Observed() >= learnMaxResults
	if !changed && !done {
		return
	}
	shown := &tools.InferredSchema{Schema: schema, Observed: st.inf.Observed()}
	u.mu.Lock()
	st.done, st.shown = done, shown
	u.mu.Unlock()
	if done {
		u.log.Debug("result shape learned", "tool", smp.orig, "observed", shown.Observed)
	}
	u.saveShape(ctx, smp.orig, shapeRecord{Basis: st.basis, Observed: shown.Observed, Unchanged: st.unchanged, Done: done,
		Schema: st.inf.Schema(), Seen: st.seenRecord()})
	u.reregister(smp.orig, st)
}

// saveShape stores what was learned of the tool orig.
func (u *upstream) saveShape(ctx context.Context, orig string, r shapeRecord) {
	store := u.src.cfg.Shapes
	if store == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		u.log.Error("encode a result shape", "tool", orig, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, shapeIOTimeout)
	defer cancel()
	if err := store.PutToolShape(ctx, ShapeSource(u.name), orig, b); err != nil && ctx.Err() == nil {
		u.log.Warn("store a result shape", "tool", orig, "err", err)
	}
}

// reregister registers the tool orig again, with what was learned of its
// results, unless it changed or went meanwhile.
func (u *upstream) reregister(orig string, st *learning) {
	u.regMu.Lock()
	defer u.regMu.Unlock()
	u.mu.Lock()
	t, short, note, current := u.tools[orig], u.names[orig], u.notes[orig], u.learned[orig] == st
	u.mu.Unlock()
	if t == nil || !current {
		return
	}
	if err := u.src.reg.Register(u.tool(t, short, note)); err != nil {
		u.log.Error("register a tool with its inferred output schema", "tool", orig, "err", err)
	}
}
