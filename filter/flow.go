package filter

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Data-flow tracking.
//
// A Flow follows one run (and the nested runs it starts, such as skills):
// Observe records what each tool call returned, Check refuses a tool call
// whose arguments carry a value from a source that a Rule forbids for that
// tool, and Options.Flow makes every output of the run (result, logs,
// errors, progress) hide the sensitive values the run received, wherever
// and however they appear. Provenance carries "which sources" across runs
// through the store.

// DefaultFlowBytes is the memory a Flow keeps when FlowOptions.MaxBytes
// is 0.
const DefaultFlowBytes = 16 << 20

// maxFlowSources is the number of sources a Flow tells apart; the last
// slot is shared by every source after the 63rd, so a rule that forbids
// one of them forbids the values of all of them.
const maxFlowSources = 64

// maxOverflowNames is the number of names the last slot keeps besides
// its own: past them (or past FlowOptions.MaxBytes) it stands for every
// source, AnySource among its names, and every rule's From matches it.
// Names arrive with results (a stored value's provenance) and with every
// tool a run calls; a run named 12,800 of them, and each set of slots
// named with the last one copied them all (attack21 A3).
const maxOverflowNames = 64

// FlowOptions configure a Flow.
type FlowOptions struct {
	// Rules are the exfiltration rules Check enforces.
	Rules []Rule
	// Match reports whether a rule's pattern matches a tool's qualified
	// name, as a destination or a source; nil is path.Match on the name
	// alone. The server gives one that matches every name the tool answers
	// to (tools.Registry.MatchName), so that a rule written with an
	// upstream's own name for a tool means the tool.
	Match NameMatch
	// MaxBytes bounds the memory the flow keeps (values and indexes, as
	// FlowStats counts it). When it is reached, later values are not
	// kept, and Check refuses calls that a rule would check against the
	// sources whose values were lost (see FlowError.Untracked). 0 means
	// DefaultFlowBytes.
	MaxBytes int
	// Keep, when set, holds what the flow keeps (values, indexes, results
	// waiting to be indexed: FlowStats.Bytes) for the rest of the run,
	// asked before it keeps more than Keep last held, in steps of
	// keepStep: n is the bytes in all. It is asked with no lock of the
	// flow held, from any goroutine, several at once (the most asked is
	// what must be held), so it should not wait for what the run's
	// calls hold. An observation may give a Keep of its own
	// (ObserveHeld). What Keep refuses is not kept, as past MaxBytes;
	// ObserveHeld fails instead.
	Keep FindingsHold
}

// keepStep is the bytes FlowOptions.Keep is asked for at once, beyond
// what the flow keeps: a run that observes a few small results asks it
// once.
const keepStep = 64 << 10

// Flow tracks the values one run received from its sources. It is safe
// for concurrent use (tool calls awaited together run in parallel). Make
// one per run with Filter.NewFlow, and give a nested run its caller's.
type Flow struct {
	f        *Filter
	rules    []Rule
	match    NameMatch
	maxBytes int
	seed     maphash.Seed

	// keep is FlowOptions.Keep; kept (under mu) is what the keeps
	// asked hold, once keeps says one was; reserved (under mu) is what
	// observations about to add to the flow may add, held beside bytes.
	keep     FindingsHold
	keeps    bool
	kept     int
	reserved int

	mu         sync.RWMutex
	sources    []string // by id; the last slot holds overflow names too
	overflow   []string // at most maxOverflowNames
	inOverflow map[string]bool
	// every: the last slot stands for every source, past overflow.
	every bool
	// srcGen counts the changes of sources, overflow and every.
	srcGen    int
	srcID     map[string]int
	values    []flowValue
	sensitive []sensInfo
	byHash    map[uint64]int32 // maphash of a pattern → its value
	all, sens valueIndex
	seen      map[uint64]uint8 // hashes of strings Observe scanned → seen flags
	bytes     int
	untracked uint64 // sources some of whose values were not kept
	dropped   int
	// pending are large results observed and not yet indexed (see
	// scope.go); settleMu lets one caller at a time index them.
	pending  []*pendingResult
	npending atomic.Int32
	settleMu sync.Mutex

	cacheMu   sync.Mutex
	forbidden map[string]forbidMask // cache of forbiddenFor, by destination

	namesMu  sync.Mutex
	namesOf  map[uint64][]string // cache of names, shared: not to be modified
	namesLen int                 // the names namesOf holds
	// overflowSorted is overflow sorted, with AnySource when every;
	// nil when not computed.
	overflowSorted []string
}

// flowValue is one known value.
type flowValue struct {
	pattern string // folded, at most maxPatternLen bytes
	srcs    uint64 // bit i: sources[i]
	sens    int32  // index+1 in Flow.sensitive, or 0
}

// sensInfo is what the flow knows of a sensitive value: its class, how
// sure and which detector, the value as received (tokens are derived from
// it) and, when longer than its pattern, its whole folded form.
type sensInfo struct {
	class    Class
	conf     float64
	detector string
	raw      string
	long     string
}

type forbidMask struct {
	srcGen int // Flow.srcGen when computed
	mask   uint64
	rules  []int // rule index by source id, for the error
}

// NewFlow returns an empty tracker for one run. Rules must be valid globs
// (see Rule).
func (f *Filter) NewFlow(opts FlowOptions) (*Flow, error) {
	for _, r := range opts.Rules {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("new flow: %w", err)
		}
	}
	fl := &Flow{
		f:         f,
		rules:     slices.Clone(opts.Rules),
		match:     opts.Match,
		maxBytes:  opts.MaxBytes,
		keep:      opts.Keep,
		seed:      maphash.MakeSeed(),
		srcID:     map[string]int{},
		byHash:    map[uint64]int32{},
		seen:      map[uint64]uint8{},
		forbidden: map[string]forbidMask{},
	}
	if fl.maxBytes <= 0 {
		fl.maxBytes = DefaultFlowBytes
	}
	return fl, nil
}

// FlowStats says what a flow holds.
type FlowStats struct {
	// Sources is the number of sources seen, Values the values kept.
	Sources, Values int
	// Bytes estimates the memory they take.
	Bytes int
	// Dropped counts values not kept because of FlowOptions.MaxBytes.
	Dropped int
}

// Stats returns what the flow holds, every result observed indexed.
func (fl *Flow) Stats() FlowStats {
	fl.settle(nil, 0)
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	return FlowStats{Sources: len(fl.sources) + len(fl.overflow), Values: len(fl.values), Bytes: fl.bytes, Dropped: fl.dropped}
}

// pendingResult is a tool result observed and parsed, not yet indexed.
type pendingResult struct {
	srcs  uint64
	root  node
	ruled bool // its values are tracked for the rules
	size  int  // of its JSON
	cost  int  // counted in Flow.bytes while it waits
	// scoped counts the texts it was indexed for, in part: the next
	// one indexes it whole.
	scoped int
}

// eagerBytes is the size under which a result is indexed as it is
// observed: small results cost little, and a run makes many.
const eagerBytes = 16 << 10

// pendingCost is what a pending result of n bytes whose tree holds nodes
// nodes counts against FlowOptions.MaxBytes: its text and its tree, and
// at least about what its index would take. The tree is the larger for
// results of many small values — 72 bytes a node for a 2-byte 0, in a
// 1 MB array of zeros: counted 4 MB, four of them held 140 MB for the
// rest of the run (issue 19).
func pendingCost(n, nodes int) int { return max(4*n, n+nodes*nodeBytes) }

// observed is what Observe found in one result, before it takes the
// lock.
type observed struct {
	tracked   []string // worth tracking for the rules
	sensitive []sensitiveValue
	seen      []seenString
}

type sensitiveValue struct {
	value    string
	class    Class
	conf     float64
	detector string
}

// Observe records the values in a tool's result: source is the qualified
// name of the tool, result its JSON (anything else is taken as one
// string). from is the provenance of stored data the tool returned (a
// memory, a workspace file, a stored result), whose values then count as
// coming from those sources too; the zero Provenance when there is none.
//
// Recorded are the sensitive values the filter would hide in the result
// (field names and detectors, under its policy), and, when a rule's From
// matches source or a source of from, every string, number and key that
// is worth tracking for the rules: minTrackLen bytes or more once
// case-folded without whitespace, and not a single plain word (a status, a
// city, a tier) unless 16 bytes or more. The rules are the flow's: a rule
// added for a later run does not see values stored without tracking.
//
// A result of eagerBytes or more is parsed now and indexed later, by the
// first method that needs it, and then only as far as the text that
// method looks at needs (see scope.go): every method answers as if it
// had been indexed now. A program that filters a large result to a small
// answer so pays for the values that can show in the answer, not for all.
func (fl *Flow) Observe(source string, result json.RawMessage, from Provenance) {
	fl.ObserveText(source, string(result), from)
}

// ObserveText is Observe of a result held as a string, which the flow
// keeps and does not copy. What FlowOptions.Keep refuses to hold of it
// is not kept, as past FlowOptions.MaxBytes.
func (fl *Flow) ObserveText(source, result string, from Provenance) {
	_ = fl.observe(source, result, from, nil, nil, false)
}

// ObserveHeld is ObserveText that holds what observing the result costs
// before it spends it: what its findings cost while they are detected
// and collected, of hold (as Options.Findings: RepeatBytes a match, in
// steps), and what the flow keeps of it, of keep (as FlowOptions.Keep,
// which a nil keep means; this one may wait). A refusal of either stops
// the observation with a *FindingsError, the result not indexed: the
// caller must not let anything see the result (fail the call that
// returned it), since a value the flow does not know would pass the
// rules and the output filter. hold may be nil.
func (fl *Flow) ObserveHeld(source, result string, from Provenance, hold, keep FindingsHold) error {
	return fl.observe(source, result, from, hold, keep, true)
}

// observe is ObserveText, and with strict ObserveHeld.
func (fl *Flow) observe(source, result string, from Provenance, hold, keep FindingsHold, strict bool) error {
	root, nodes, err := parseJSONNodes(result)
	if err != nil {
		root, nodes = node{kind: kindString, str: result}, 1
	}
	ruled := fl.ruled(source, from)
	fl.mu.Lock()
	srcs := fl.sourceBit(source)
	for _, s := range from.sources {
		srcs |= fl.sourceBit(s)
	}
	cost := pendingCost(len(result), nodes)
	eager := len(result) < eagerBytes || fl.bytes+fl.reserved+cost > fl.maxBytes
	fl.mu.Unlock()
	if !eager {
		err := fl.reserve(cost, keep)
		if err == nil {
			fl.mu.Lock()
			fl.reserved -= cost
			fl.bytes += cost
			fl.pending = append(fl.pending, &pendingResult{srcs: srcs, root: root, ruled: ruled, size: len(result), cost: cost})
			fl.npending.Add(1)
			fl.mu.Unlock()
			return nil
		}
		if strict {
			return &FindingsError{Bytes: int64(fl.keptBytes()), Err: err}
		}
	}
	return fl.observeTree(srcs, &root, ruled, nil, hold, keep, strict)
}

// reserve asks keep (FlowOptions.Keep when nil) to hold what the flow
// keeps and n bytes more, which the caller then adds to Flow.bytes,
// taking them off reserved. No lock is held while keep is asked.
func (fl *Flow) reserve(n int, keep FindingsHold) error {
	if keep == nil {
		keep = fl.keep
	}
	fl.mu.Lock()
	fl.reserved += n
	want, kept := fl.bytes+fl.reserved, fl.kept
	fl.mu.Unlock()
	if keep == nil || want <= kept {
		return nil
	}
	want = (want + keepStep - 1) / keepStep * keepStep
	err := keep(int64(want))
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err != nil {
		fl.reserved -= n
		return err
	}
	fl.keeps = true
	fl.kept = max(fl.kept, want)
	return nil
}

// keptBytes is what the keeps asked hold.
func (fl *Flow) keptBytes() int {
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	return fl.kept
}

// observeTree indexes the values of a result from the sources srcs: all
// of them, or with a scope only those that can show in its text. hold,
// when set, holds what its findings cost as they are met
// (Options.Findings), and keep (FlowOptions.Keep when nil) what the flow
// keeps of it. With strict, a refusal of hold or of
// FlowOptions.Keep returns a *FindingsError, nothing of the result
// added; without, what Keep refuses is not kept, as past MaxBytes.
func (fl *Flow) observeTree(srcs uint64, root *node, ruled bool, sc *scope, hold, keep FindingsHold, strict bool) error {
	var obs observed
	if ruled {
		collectTracked(root, &obs.tracked, sc)
	}
	r := fl.f.newRun(Options{Flow: fl, Findings: hold})
	r.observing = &obs
	r.scope = sc
	r.walk(root, FieldMatch{})
	if r.held != nil {
		return r.held
	}
	// What the flow may keep of it, held before it is kept: every value
	// new, and nothing past MaxBytes.
	need := len(obs.seen) * seenCost
	for i := range obs.sensitive {
		need += valueCost(len(obs.sensitive[i].value)) + sensCost(len(obs.sensitive[i].value))
	}
	for _, v := range obs.tracked {
		need += valueCost(len(v))
	}
	need = min(need, fl.maxBytes)
	if err := fl.reserve(need, keep); err != nil {
		if strict {
			return &FindingsError{Findings: r.findings, Bytes: int64(fl.keptBytes()), Err: err}
		}
		need = 0 // kept as far as Keep holds, the rest not, as past MaxBytes
	}

	fl.mu.Lock()
	defer fl.mu.Unlock()
	defer fl.flushIndexes()
	fl.reserved -= need
	limit := fl.limit()
	// Sensitive values first, then the others, then what only saves time.
	hint := len(obs.sensitive) + len(obs.tracked)
	if len(fl.values) == 0 {
		fl.byHash = make(map[uint64]int32, hint)
		fl.values = make([]flowValue, 0, hint)
	}
	var buf []byte
	retry := fl.keep != nil || keep != nil
	for i := 0; i < hint; i++ {
		var short int
		if i < len(obs.sensitive) {
			short = fl.addValue(obs.sensitive[i].value, srcs, &obs.sensitive[i], &buf, len(obs.sensitive), limit, retry)
		} else {
			short = fl.addValue(obs.tracked[i-len(obs.sensitive)], srcs, nil, &buf, hint, limit, retry)
		}
		if short == 0 {
			continue
		}
		// Values of crowded heads cost their automata (acCost), which
		// need did not count: have Keep hold the most the rest can cost,
		// once, and add them again.
		retry = false
		more := short
		for j := i + 1; j < hint; j++ {
			if j < len(obs.sensitive) {
				n := len(obs.sensitive[j].value)
				more += valueCost(n) + sensCost(n) + 2*acCost(maxFoldGrowth*n, 1)
			} else {
				more += valueCost(len(obs.tracked[j-len(obs.sensitive)])) + acCost(maxFoldGrowth*len(obs.tracked[j-len(obs.sensitive)]), 1)
			}
		}
		more = min(more, fl.maxBytes)
		fl.flushIndexes()
		fl.mu.Unlock()
		err := fl.reserve(more, keep)
		fl.mu.Lock()
		if err != nil {
			if strict {
				return &FindingsError{Findings: r.findings, Bytes: int64(fl.kept), Err: err}
			}
			more = 0
		}
		fl.reserved -= more
		limit = fl.limit()
		i-- // again, the limit raised
	}
	for _, sn := range obs.seen {
		f, ok := fl.seen[sn.hash]
		if !ok {
			if fl.bytes+seenCost > limit {
				break
			}
			fl.bytes += seenCost
		}
		fl.seen[sn.hash] = f | sn.flags
	}
	return nil
}

// limit is the most bytes the flow may keep now: MaxBytes, and with
// FlowOptions.Keep what it holds, less what other observations reserved.
// The caller holds mu.
func (fl *Flow) limit() int {
	if fl.keep == nil && !fl.keeps {
		return fl.maxBytes
	}
	return min(fl.maxBytes, fl.kept-fl.reserved)
}

// valueCost and sensCost bound what addValue counts for a value of n
// bytes and for what the flow knows of a sensitive one: folding may
// lengthen a value (a few runes fold to several), not past maxFoldGrowth
// times.
func valueCost(n int) int { return maxFoldGrowth*n + valueOverhead }
func sensCost(n int) int  { return (1+maxFoldGrowth)*n + sensOverhead }

// settle indexes the pending results whose sources meet mask (all when 0)
// as far as the text of sc needs, or whole when sc is nil, when the text
// is large beside the result, or when the result was indexed for a text
// before. Callers hold no lock of the flow.
func (fl *Flow) settle(sc *scope, mask uint64) {
	_ = fl.settleHeld(sc, mask, nil)
}

// settleHeld is settle that holds what indexing costs by its findings of
// hold, when set (the Options.Findings of the output it indexes for):
// a refusal stops it with a *FindingsError, the result it indexed left
// waiting, to be indexed again for the next text.
func (fl *Flow) settleHeld(sc *scope, mask uint64, hold FindingsHold) error {
	if fl.npending.Load() == 0 {
		return nil
	}
	strict := hold != nil
	fl.settleMu.Lock()
	defer fl.settleMu.Unlock()
	fl.mu.RLock()
	ps := slices.Clone(fl.pending)
	fl.mu.RUnlock()
	for _, p := range ps {
		if mask != 0 && p.srcs&mask == 0 {
			continue
		}
		if sc != nil && p.scoped == 0 && 4*sc.n <= p.size {
			p.scoped++
			if err := fl.observeTree(p.srcs, &p.root, p.ruled, sc, hold, nil, strict); err != nil {
				p.scoped--
				return err
			}
			continue
		}
		fl.mu.Lock()
		fl.pending = slices.DeleteFunc(fl.pending, func(q *pendingResult) bool { return q == p })
		fl.bytes -= p.cost
		fl.npending.Add(-1)
		fl.mu.Unlock()
		if err := fl.observeTree(p.srcs, &p.root, p.ruled, nil, hold, nil, strict); err != nil {
			fl.mu.Lock()
			fl.pending = append(fl.pending, p)
			fl.bytes += p.cost
			fl.npending.Add(1)
			fl.mu.Unlock()
			return err
		}
	}
	return nil
}

// settleFor settles for a text that is JSON (or, if not, one string).
func (fl *Flow) settleFor(data []byte, mask uint64) {
	if fl.npending.Load() == 0 {
		return
	}
	root, err := parseJSON(data)
	if err != nil {
		root = node{kind: kindString, str: string(data)}
	}
	sc := newScope(fl.seed)
	sc.fit(len(data))
	sc.addNode(&root)
	fl.settle(sc, mask)
}

// seenCost is the memory of one hash in Flow.seen, and valueOverhead
// that of a value besides its strings: its entry, map slots and index
// node, with the slack of growing maps and slices (BenchmarkFlowMemory
// checks them against the heap).
const (
	seenCost      = 40
	valueOverhead = 128
	sensOverhead  = 96
)

// overflowNameCost is what a name of the last slot costs besides its
// bytes (its entries in the list and the set), and maxCachedNames the
// names Flow.names keeps cached, of all its sets.
const (
	overflowNameCost = 96
	maxCachedNames   = 1 << 14
)

// ruled reports whether some rule's From matches the source or one of the
// sources of from: only then are the values tracked for the rules (the
// sensitive ones always are, for the outputs).
func (fl *Flow) ruled(source string, from Provenance) bool {
	for _, r := range fl.rules {
		if fl.match.from(r.From, source) {
			return true
		}
		for _, s := range from.sources {
			if fl.match.from(r.From, s) {
				return true
			}
		}
	}
	return false
}

// collectTracked appends the strings, numbers and keys of n worth
// tracking, those that can show in the text of sc if set.
func collectTracked(n *node, out *[]string, sc *scope) {
	switch n.kind {
	case kindString, kindNumber:
		if worthTracking(n.str) && (sc == nil || sc.hits(n.str)) {
			*out = append(*out, n.str)
		}
		// A number a program passes on is written as JavaScript writes
		// it, which may not be how the source spelled it (1234567.10,
		// 4.2e7, 42000000.0): it is tracked in both spellings.
		if n.kind == kindNumber {
			if js, ok := jsNumber(n.str); ok && js != n.str && worthTracking(js) && (sc == nil || sc.hits(js)) {
				*out = append(*out, js)
			}
		}
	case kindArray, kindObject:
		for i := range n.kids {
			if k := n.kids[i].key; n.kind == kindObject && worthTracking(k) && (sc == nil || sc.hits(k)) {
				*out = append(*out, k)
			}
			collectTracked(&n.kids[i], out, sc)
		}
	}
}

// jsNumber returns how JavaScript writes the number of the JSON literal
// lit (ECMAScript's Number::toString: the shortest digits that read back
// as the same number, in fixed notation from 1e-6 up to 1e21, else as
// 1.5e-7 or 1e+21); false when lit is not a finite number written as JSON
// writes one (no '+' ahead, no hex, no "Inf").
func jsNumber(lit string) (string, bool) {
	if lit == "" || (lit[0] != '-' && !isDigit(lit[0])) || strings.Trim(lit, "0123456789.eE+-") != "" {
		return "", false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	if f == 0 {
		return "0", true // -0 too
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	// Go writes the exponent with two digits at least (1e-07).
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.LastIndexByte(e, 'e')
	exp := strings.TrimLeft(e[i+2:], "0")
	return e[:i+2] + exp, true
}

// worthTracking reports whether a value is specific enough for the rules
// to follow: at least minTrackLen bytes besides whitespace, and holding a
// digit, a symbol or two words, or being one word of 16 bytes or more.
func worthTracking(s string) bool {
	if len(s) < minTrackLen {
		return false
	}
	n, words, inWord, symbol := 0, 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			inWord = false
			continue
		}
		n++
		if !inWord {
			words++
			inWord = true
		}
		if c < 0x80 && !isAlpha(c) {
			symbol = true
		}
	}
	return n >= minTrackLen && (symbol || words >= 2 || n >= 16)
}

// sourceBit returns the bit of a source, adding it. The caller holds the
// lock.
func (fl *Flow) sourceBit(name string) uint64 {
	if id, ok := fl.srcID[name]; ok {
		return 1 << id
	}
	if len(fl.sources) < maxFlowSources {
		fl.srcID[name] = len(fl.sources)
		fl.sources = append(fl.sources, name)
		fl.srcGen++
		fl.bytes += 64 + len(name)
		return 1 << (len(fl.sources) - 1)
	}
	// The last slot stands for every later source: by name up to
	// maxOverflowNames, then for all.
	if fl.every || fl.inOverflow[name] {
		return 1 << (maxFlowSources - 1)
	}
	if cost := overflowNameCost + len(name); len(fl.overflow) < maxOverflowNames && fl.bytes+cost <= fl.maxBytes {
		if fl.inOverflow == nil {
			fl.inOverflow = map[string]bool{}
		}
		fl.overflow = append(fl.overflow, name)
		fl.inOverflow[name] = true
		fl.bytes += cost
	} else {
		fl.every = true
	}
	fl.srcGen++
	fl.namesMu.Lock()
	clear(fl.namesOf)
	fl.namesLen, fl.overflowSorted = 0, nil
	fl.namesMu.Unlock()
	return 1 << (maxFlowSources - 1)
}

// lookup returns the value whose pattern is p. The caller holds the
// lock.
func (fl *Flow) lookup(p []byte) (int32, bool) {
	id, ok := fl.byHash[maphash.Bytes(fl.seed, p)]
	if !ok || fl.values[id].pattern != string(p) {
		return 0, false
	}
	return id, true
}

// sensOf returns what the flow knows of a sensitive value, or nil.
func (fl *Flow) sensOf(id int32) *sensInfo {
	if k := fl.values[id].sens; k > 0 {
		return &fl.sensitive[k-1]
	}
	return nil
}

// addValue records a value from the sources srcs; sv is set for a
// sensitive one. buf is scratch; hint the number of values being added;
// the flow keeps no more than limit bytes: a value past it is dropped,
// its sources untracked. With retry, a value past limit that MaxBytes
// would admit is left for the caller, which may raise limit: addValue
// returns what it costs, nothing of it marked. The caller holds the lock.
func (fl *Flow) addValue(v string, srcs uint64, sv *sensitiveValue, buf *[]byte, hint, limit int, retry bool) int {
	p, _ := fold((*buf)[:0], nil, v, false)
	*buf = p
	minLen := minTrackLen
	if sv != nil {
		minLen = minKnownLen
	}
	if len(p) < minLen {
		return 0
	}
	whole := p
	if len(p) > maxPatternLen {
		p = p[:maxPatternLen]
	}
	id, ok := fl.lookup(p)
	if ok {
		fl.values[id].srcs |= srcs
	} else {
		// The value, and the automata it joins when its head is crowded.
		cost := len(p) + valueOverhead
		if n, count := fl.all.crowdedBytes(p); n > 0 {
			cost += acCost(n, count)
		}
		if fl.bytes+cost > limit {
			if retry && fl.bytes+cost <= fl.maxBytes {
				return cost
			}
			fl.untracked |= srcs
			fl.dropped++
			return 0
		}
		id = int32(len(fl.values))
		pat := string(p)
		fl.values = append(fl.values, flowValue{pattern: pat, srcs: srcs})
		fl.byHash[maphash.String(fl.seed, pat)] = id
		fl.all.add(pat, id, fl.table(), hint)
		fl.bytes += cost
	}
	if sv == nil {
		return 0
	}
	info := sensInfo{class: sv.class, conf: sv.conf, detector: sv.detector}
	if cur := fl.sensOf(id); cur != nil {
		if sv.conf <= cur.conf {
			return 0
		}
		info.raw, info.long = cur.raw, cur.long
		*cur = info
		return 0
	}
	cost := len(v) + len(whole) + sensOverhead
	if n, count := fl.sens.crowdedBytes(p); n > 0 {
		cost += acCost(n, count)
	}
	if fl.bytes+cost > limit {
		if retry && fl.bytes+cost <= fl.maxBytes {
			return cost
		}
		fl.untracked |= srcs
		fl.dropped++
		return 0
	}
	info.raw = strings.Clone(v)
	if len(whole) > len(p) {
		info.long = string(whole)
	}
	fl.sensitive = append(fl.sensitive, info)
	fl.values[id].sens = int32(len(fl.sensitive))
	fl.sens.add(fl.values[id].pattern, id, fl.table(), hint)
	fl.bytes += cost
	return 0
}

// flushIndexes builds the automata of the values just added; the caller
// holds the write lock.
func (fl *Flow) flushIndexes() {
	fl.all.flush()
	fl.sens.flush()
}

// flowTable is the valueTable of a flow; the caller holds its lock.
type flowTable Flow

func (t *flowTable) pattern(id int32) string { return t.values[id].pattern }
func (t *flowTable) full(id int32) string {
	if k := t.values[id].sens; k > 0 {
		return t.sensitive[k-1].long
	}
	return ""
}

func (fl *Flow) table() *flowTable { return (*flowTable)(fl) }

// Flags of the strings Observe scanned.
const (
	// seenClean: the detectors found nothing in it, so that scanning it
	// again can be skipped.
	seenClean uint8 = 1 << iota
	// seenAsIs: a tool returned it as it is. Its encoded forms need no
	// search in outputs: the filter would not hide them in the tool's
	// result either, and a program cannot have made them.
	seenAsIs
)

// seenLocked is seenFlags for a caller that holds the read lock.
func (fl *Flow) seenLocked(s string) uint8 {
	if len(s) < minScanLen {
		return 0
	}
	return fl.seen[maphash.String(fl.seed, s)]
}

// seenString is a string Observe scanned.
type seenString struct {
	hash  uint64
	flags uint8
}

// seenFlags returns what Observe found of s: 0 if it did not scan it.
// Hashes are 64 bits under a per-flow random seed: a program cannot make
// a string collide with one it has not got.
func (fl *Flow) seenFlags(s string) uint8 {
	if len(s) < minScanLen {
		return 0
	}
	h := maphash.String(fl.seed, s)
	fl.mu.RLock()
	f := fl.seen[h]
	fl.mu.RUnlock()
	return f
}

// names returns the names of the sources in srcs. The caller holds the
// lock.
func (fl *Flow) names(srcs uint64) []string {
	fl.namesMu.Lock()
	defer fl.namesMu.Unlock()
	if out, ok := fl.namesOf[srcs]; ok {
		return out
	}
	var out []string
	for id, name := range fl.sources {
		if srcs&(1<<id) != 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if last := maxFlowSources - 1; srcs&(1<<last) != 0 && len(fl.sources) > last && (len(fl.overflow) > 0 || fl.every) {
		// The last slot's other names, sorted once for every set.
		if fl.overflowSorted == nil {
			fl.overflowSorted = slices.Clone(fl.overflow)
			if fl.every {
				fl.overflowSorted = append(fl.overflowSorted, AnySource)
			}
			slices.Sort(fl.overflowSorted)
		}
		merged := make([]string, 0, len(out)+len(fl.overflowSorted))
		a, b := out, fl.overflowSorted
		for len(a) > 0 && len(b) > 0 {
			if a[0] <= b[0] {
				merged, a = append(merged, a[0]), a[1:]
			} else {
				merged, b = append(merged, b[0]), b[1:]
			}
		}
		out = slices.Compact(append(append(merged, a...), b...))
	}
	// Bounded by the names it holds, not the sets: a set with the last
	// slot holds up to maxOverflowNames more.
	if fl.namesOf == nil || fl.namesLen+len(out) > maxCachedNames {
		fl.namesOf, fl.namesLen = map[uint64][]string{}, 0
	}
	fl.namesOf[srcs] = out
	fl.namesLen += len(out)
	return out
}

// Sources returns the sources a value came from, as far as the flow
// knows: the qualified names of the tools whose results held it (case and
// spacing aside), and the sources of the stored data they returned. It
// serves as Options.Origin.
func (fl *Flow) Sources(value string) []string {
	if fl.npending.Load() > 0 {
		sc := newScope(fl.seed)
		sc.fit(len(value))
		sc.add(value)
		fl.settle(sc, 0)
	}
	return slices.Clone(fl.sharedSources(value))
}

// sharedSources is Sources without the copy: the slice is shared.
func (fl *Flow) sharedSources(value string) []string {
	p := foldString(value)
	if len(p) > maxPatternLen {
		p = p[:maxPatternLen]
	}
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	id, ok := fl.lookup(p)
	if !ok {
		return nil
	}
	return fl.names(fl.values[id].srcs)
}

// FlowError is a tool call that a Rule forbids: its arguments carry a
// value from a source the rule names. It names the rule, the source, the
// destination and where in the arguments, never the value.
type FlowError struct {
	Rule   Rule
	Source string // the source that matched Rule.From
	Tool   string // the destination
	// Path is the JSON Pointer of the argument (abbreviated; a key that
	// holds a known or sensitive value shows as "…"). InKey tells that the
	// value is in the key of the object at Path.
	Path  string
	InKey bool
	// Encoding is how the value was found: "" (as received, its case or
	// spacing aside), "base64-encoded", "hex-encoded" or "URL-encoded".
	Encoding string
	// Untracked means the run received more from Source than the flow
	// keeps, so calls the rule covers cannot be checked and are refused.
	Untracked bool
}

func (e *FlowError) Error() string {
	if e.Untracked {
		return fmt.Sprintf("rule %q → %q: this run received more data from %s than the data-flow tracker keeps, so calls to %s cannot be checked and are refused for the rest of the run",
			e.Rule.From, e.Rule.To, sourceText(e.Source), e.Tool)
	}
	where := "argument " + e.Path
	if e.Path == "" {
		where = "the arguments"
	}
	if e.InKey {
		where = "a key of " + where
	}
	if e.Encoding != "" {
		where += ", " + e.Encoding
	}
	return fmt.Sprintf("rule %q → %q forbids passing a value from %s to %s (%s)", e.Rule.From, e.Rule.To, sourceText(e.Source), e.Tool, where)
}

func (e *FlowError) Unwrap() error { return ErrExfiltration }

// forbiddenFor returns the sources whose values may not go to dest, and
// the rule that forbids each. The caller holds the read lock; the cache
// has its own.
func (fl *Flow) forbiddenFor(dest string) forbidMask {
	fl.cacheMu.Lock()
	defer fl.cacheMu.Unlock()
	if m, ok := fl.forbidden[dest]; ok && m.srcGen == fl.srcGen {
		return m
	}
	m := forbidMask{srcGen: fl.srcGen, rules: make([]int, maxFlowSources)}
	for ri, rule := range fl.rules {
		if !fl.match.name(rule.To, dest) {
			continue
		}
		for id, name := range fl.sources {
			names := []string{name}
			if id == maxFlowSources-1 {
				names = append(names, fl.overflow...)
				if fl.every {
					names = append(names, AnySource)
				}
			}
			for _, n := range names {
				if fl.match.from(rule.From, n) && m.mask&(1<<id) == 0 {
					m.mask |= 1 << id
					m.rules[id] = ri
				}
			}
		}
	}
	if len(fl.forbidden) > 1024 {
		clear(fl.forbidden)
	}
	fl.forbidden[dest] = m
	return m
}

// Check returns a *FlowError if the arguments of a call of dest carry a
// value that a rule forbids passing to it: a value from a source the
// rule's From matches, whole or inside a longer string or key, with its
// case or spacing changed, or encoded in base64, hex or URL encoding.
// Tokens are not seen through: resolve them first (Vault.Resolve checks
// the rules for them too). Arguments that are not JSON are checked as one
// string.
func (fl *Flow) Check(dest string, args json.RawMessage) error {
	if len(fl.rules) == 0 {
		return nil
	}
	if fl.npending.Load() > 0 {
		fl.mu.RLock()
		fm := fl.forbiddenFor(dest)
		fl.mu.RUnlock()
		if fm.mask != 0 {
			fl.settleFor(args, fm.mask)
		}
	}
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	if len(fl.sources) == 0 {
		return nil
	}
	fm := fl.forbiddenFor(dest)
	if fm.mask == 0 {
		return nil
	}
	if u := fl.untracked & fm.mask; u != 0 {
		id := lowestBit(u)
		return &FlowError{Rule: fl.rules[fm.rules[id]], Source: fl.sources[id], Tool: dest, Untracked: true}
	}
	root, err := parseJSON(args)
	if err != nil {
		root = node{kind: kindString, str: string(args)}
	}
	c := checker{fl: fl, dest: dest, fm: fm}
	c.v.dedupe = true // which value is found first does not matter, nor where
	c.node(&root)
	if c.err != nil {
		return c.err
	}
	return nil
}

func lowestBit(u uint64) int {
	for id := range maxFlowSources {
		if u&(1<<id) != 0 {
			return id
		}
	}
	return -1
}

// checker walks arguments for Check.
type checker struct {
	fl   *Flow
	dest string
	fm   forbidMask
	v    viewer
	path []string
	err  *FlowError
}

func (c *checker) node(n *node) {
	if c.err != nil {
		return
	}
	switch n.kind {
	case kindString, kindNumber:
		c.text(n.str, false)
	case kindArray, kindObject:
		for i := range n.kids {
			tok := n.kids[i].key
			if n.kind == kindObject {
				c.text(tok, true)
				if c.err != nil {
					return
				}
				if c.holdsKnown(tok) {
					tok = ellipsis
				}
			} else {
				tok = strconv.Itoa(i)
			}
			c.path = append(c.path, tok)
			c.node(&n.kids[i])
			c.path = c.path[:len(c.path)-1]
			if c.err != nil {
				return
			}
		}
	}
}

// text checks one string, number or key.
func (c *checker) text(s string, inKey bool) {
	fl := c.fl
	c.v.search(s, nil, []*valueIndex{&fl.all}, fl.table(), true, func(m knownMatch) matchVerdict {
		srcs := fl.values[m.id].srcs & c.fm.mask
		if srcs == 0 {
			return matchNext
		}
		id := lowestBit(srcs)
		source := fl.sources[id]
		if id == maxFlowSources-1 {
			names := append([]string{source}, fl.overflow...)
			if fl.every {
				names = append(names, AnySource)
			}
			for _, n := range names {
				if fl.match.from(fl.rules[c.fm.rules[id]].From, n) {
					source = n
					break
				}
			}
		}
		c.err = &FlowError{Rule: fl.rules[c.fm.rules[id]], Source: source, Tool: c.dest, Path: reportPointer(c.path), InKey: inKey, Encoding: m.enc.String()}
		return matchStop
	})
}

// holdsKnown reports whether a key holds a value the flow knows or the
// detectors find, which a path in an error may not show.
func (c *checker) holdsKnown(key string) bool {
	found := false
	c.v.search(key, nil, []*valueIndex{&c.fl.all}, c.fl.table(), true, func(knownMatch) matchVerdict {
		found = true
		return matchStop
	})
	return found || len(ScanString(key)) > 0
}

// Provenance returns the sources whose values a text or JSON document
// (tool arguments about to be stored: a memory, a workspace file, a
// result) carries, in any of the forms Check sees, for the store to keep
// with it. Sources some of whose values were not kept are included: the
// flow cannot tell they are absent.
func (fl *Flow) Provenance(data []byte) Provenance {
	fl.settleFor(data, 0)
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	if len(fl.sources) == 0 {
		return Provenance{}
	}
	root, err := parseJSON(data)
	if err != nil {
		root = node{kind: kindString, str: string(data)}
	}
	var (
		v    viewer
		srcs = fl.untracked
		walk func(n *node)
	)
	ixs := []*valueIndex{&fl.all}
	v.dedupe = true
	search := func(s string) {
		v.search(s, nil, ixs, fl.table(), true, func(m knownMatch) matchVerdict {
			srcs |= fl.values[m.id].srcs
			return matchNext
		})
	}
	walk = func(n *node) {
		switch n.kind {
		case kindString, kindNumber:
			search(n.str)
		case kindArray, kindObject:
			for i := range n.kids {
				if n.kind == kindObject {
					search(n.kids[i].key)
				}
				walk(&n.kids[i])
			}
		}
	}
	walk(&root)
	return NewProvenance(fl.names(srcs)...)
}
