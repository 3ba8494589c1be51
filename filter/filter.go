package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"path"
	"strconv"
	"strings"
)

// Policy says what to do with each class of finding.
type Policy struct {
	// Actions overrides DefaultAction per class.
	Actions map[Class]Action
	// AllowFields names fields whose values are left alone, with
	// everything inside them: no field-name or value detection. Names are
	// compared by their words, so "authorEmail" also allows
	// "author_email".
	AllowFields []string
	// AllowTools holds globs of qualified tool names (path.Match syntax);
	// a value found only in results of matching tools is left alone. It
	// needs Options.Origin.
	AllowTools []string
	// MinConfidence ignores findings less confident than this.
	MinConfidence float64
}

// Config configures a Filter. The zero value is usable.
type Config struct {
	// Budget is the response budget in bytes for the result. 0 means
	// DefaultBudget.
	Budget int
	// MaxBudget caps per-call budgets (Options.Budget). 0 means 16 times
	// Budget.
	MaxBudget int
	// MaxDepth is the deepest container shown. 0 means DefaultMaxDepth.
	MaxDepth int
	// LogBudget is the budget in bytes for all log lines together, and
	// MaxLogLine for one line. 0 means 4 KiB and 1 KiB.
	LogBudget  int
	MaxLogLine int
	// Compact asks for a compact text rendering when it is smaller.
	Compact bool
	// Policy says what to do with findings.
	Policy Policy
}

// Filter is the output pipeline for results and logs. It is immutable and
// safe for concurrent use.
type Filter struct {
	cfg         Config
	actions     map[Class]Action
	allowFields map[string]bool
	fields      *fieldCache
}

// New validates cfg and returns a Filter.
func New(cfg Config) (*Filter, error) {
	if cfg.Budget < 0 || cfg.MaxBudget < 0 || cfg.MaxDepth < 0 || cfg.LogBudget < 0 || cfg.MaxLogLine < 0 {
		return nil, errors.New("new filter: negative limit")
	}
	if cfg.Budget == 0 {
		cfg.Budget = DefaultBudget
	}
	cfg.Budget = max(cfg.Budget, MinBudget)
	if cfg.MaxBudget == 0 {
		cfg.MaxBudget = 16 * cfg.Budget
	}
	if cfg.MaxBudget < cfg.Budget {
		return nil, fmt.Errorf("new filter: max budget %d is below budget %d", cfg.MaxBudget, cfg.Budget)
	}
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.LogBudget == 0 {
		cfg.LogBudget = 4 << 10
	}
	if cfg.MaxLogLine == 0 {
		cfg.MaxLogLine = 1 << 10
	}
	f := &Filter{cfg: cfg, actions: map[Class]Action{}, allowFields: map[string]bool{}, fields: &fieldCache{}}
	for c, a := range cfg.Policy.Actions {
		if err := validClassName(c); err != nil {
			return nil, fmt.Errorf("new filter: %w", err)
		}
		if !a.valid() {
			return nil, fmt.Errorf("new filter: class %s: unknown action %q", c, a)
		}
		f.actions[c] = a
	}
	for _, name := range cfg.Policy.AllowFields {
		f.allowFields[normalizeField(name)] = true
	}
	for _, g := range cfg.Policy.AllowTools {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("new filter: allowed tools %q: %w", g, err)
		}
	}
	return f, nil
}

// Action returns what the filter does with values of class c.
func (f *Filter) Action(c Class) Action {
	if a, ok := f.actions[c]; ok {
		return a
	}
	return DefaultAction(c)
}

// Origin returns the qualified names of the tools whose results, during
// the current run, contained value (unescaped text). The filter records
// them in the vault as the value's sources, for exfiltration rules and
// Policy.AllowTools.
type Origin func(value string) []string

// Options are per call.
type Options struct {
	// Vault receives the tokens. Nil means values to tokenize are
	// redacted instead.
	Vault *Vault
	// Origin tells where values came from; nil means Flow.Sources when
	// Flow is set, else nowhere known.
	Origin Origin
	// Budget overrides Config.Budget for this call, up to
	// Config.MaxBudget. 0 means Config.Budget.
	Budget int
	// Flow is the run's data-flow tracker. With it, every value the run
	// received that the filter would hide in a tool result is hidden here
	// too, wherever it is: without its field name, case-changed, or
	// encoded (see Flow). It also serves as Origin when that is nil.
	Flow *Flow
	// Details asks for a report that lists findings one by one
	// (Report.Details) and up to 64 cuts instead of 8. Reports are lean
	// by default because hosts hand them to the model.
	Details bool
	// Findings, when set, holds what the findings cost before the filter
	// acts on them (see FindingsHold); its refusal stops the filtering.
	Findings FindingsHold
}

// Input is the output of one run.
type Input struct {
	// Result is the program's result as JSON; empty means null.
	Result json.RawMessage
	// Logs are its console lines.
	Logs []string
}

// Output is what the filter made of an Input.
type Output struct {
	// Full is the whole filtered result, compact JSON, to be stored
	// (compressed) and paged.
	Full json.RawMessage
	// Limited is the filtered result cut to the budget: valid JSON of at
	// most Report.Budget bytes, for the model. When nothing was cut it
	// shares memory with Full; neither may be modified.
	Limited json.RawMessage
	// Compact is Limited rendered as compact text (see Compact), or "" if
	// not asked for or not smaller.
	Compact string
	// Logs are the filtered log lines, cut to the log budget.
	Logs []string
	// Report says what was done.
	Report Report
}

// Apply runs the pipeline over a run's result and logs: detect sensitive
// field names and values, tokenize, redact or mask them (a value found
// anywhere is replaced everywhere, logs included), keep the full filtered
// result, then compact and limit it for the model. An error means the
// result is not valid JSON, or is a *FindingsError: Options.Findings
// refused to hold its findings.
func (f *Filter) Apply(in Input, opts Options) (*Output, error) {
	out, _, err := f.apply(in, opts)
	return out, err
}

// apply is Apply that also returns the run, whose values say what was
// replaced.
func (f *Filter) apply(in Input, opts Options) (*Output, *run, error) {
	raw := in.Result
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	root, err := parseJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("filter result: %w", err)
	}
	if fl := opts.Flow; fl != nil && fl.npending.Load() > 0 {
		// What the run received is indexed as far as this output needs.
		sc := newScope(fl.seed)
		n := len(raw)
		for _, line := range in.Logs {
			n += len(line)
		}
		sc.fit(n)
		sc.addNode(&root)
		for _, line := range in.Logs {
			sc.add(line)
		}
		// What indexing finds is held as the output's findings are.
		if err := fl.settleHeld(sc, 0, opts.Findings); err != nil {
			return nil, nil, err
		}
	}
	r := f.newRun(opts)
	r.where = "result"
	r.walk(&root, FieldMatch{})
	// Log lines are texts with a budget each: only their heads are
	// scanned when they are much longer (see text.go).
	logs := make([]*textJob, len(in.Logs))
	r.where = "logs"
	for i, line := range in.Logs {
		r.path = append(r.path[:0], seg{index: i})
		logs[i] = newTextJob(line, f.cfg.MaxLogLine)
		r.detectJob(logs[i], false)
	}
	r.path = r.path[:0]
	if r.held != nil {
		return nil, r, r.held
	}
	ks := r.newKnownScan()
	if r.held != nil {
		return nil, r, r.held
	}
	// With a flow, the known-value stage below finds every other
	// occurrence of the values the run acted on, and more.
	if len(r.values) > 0 && ks == nil {
		sw := newSweeper(r.values, r.automataRoom)
		if r.held != nil {
			return nil, r, r.held
		}
		r.where = "result"
		r.sweepNode(sw, &root)
		r.where = "logs"
		for i, j := range logs {
			r.path = append(r.path[:0], seg{index: i})
			r.sweepJob(sw, j, false)
		}
	}
	if ks != nil {
		r.where = "result"
		r.knownNode(ks, &root)
		r.where = "logs"
		for i, j := range logs {
			r.path = append(r.path[:0], seg{index: i})
			r.knownJob(ks, j, false)
		}
		r.path = r.path[:0]
	}
	if r.held != nil {
		return nil, r, r.held
	}
	out := &Output{Report: r.report}
	measure(&root)
	out.Full = appendJSON(make([]byte, 0, root.size), &root)

	budget := f.budget(opts.Budget)
	var (
		fitted node
		lim    *limiter
	)
	if root.size <= budget && int(root.height) <= f.cfg.MaxDepth {
		// It fits as it is: Limited is Full.
		fitted, lim = root, &limiter{}
		out.Limited = out.Full
	} else {
		maxCuts := leanCuts
		if opts.Details {
			maxCuts = maxCutsListed
		}
		out.Limited, fitted, lim = limitTree(&root, LimitOptions{Budget: budget, MaxDepth: f.cfg.MaxDepth}, maxCuts)
	}
	limited := out.Limited
	if f.cfg.Compact {
		if text, ok := compactTree(&fitted); ok {
			out.Compact = text
			out.Report.Compact = &CompactStats{JSONBytes: len(limited), TextBytes: len(text)}
		}
	}
	out.Logs = f.limitLogs(logs, &out.Report)

	rep := &out.Report
	rep.OriginalBytes = len(in.Result)
	rep.FilteredBytes = len(out.Full)
	rep.ReturnedBytes = len(out.Limited)
	rep.Budget = budget
	rep.Cuts = lim.cuts
	rep.CutsTotal = lim.cutsTotal
	rep.Cut = lim.cutsTotal > 0
	return out, r, nil
}

func (f *Filter) budget(b int) int {
	if b == 0 {
		return f.cfg.Budget
	}
	return min(max(b, MinBudget), f.cfg.MaxBudget)
}

// limitLogs cuts each line to MaxLogLine and keeps the first lines that fit
// LogBudget, then a line saying how many were left out.
func (f *Filter) limitLogs(jobs []*textJob, rep *Report) []string {
	if len(jobs) == 0 {
		return []string{}
	}
	st := &LogStats{Lines: len(jobs)}
	for _, j := range jobs {
		st.Bytes += len(j.s)
	}
	out := make([]string, 0, len(jobs))
	used := 0
	for i, j := range jobs {
		line, cut, _ := j.finish()
		if cut {
			st.LinesCut++
		}
		rest := len(jobs) - i - 1
		reserve := 0
		if rest > 0 {
			reserve = len(moreLines(rest))
		}
		if used+len(line)+reserve > f.cfg.LogBudget {
			out = append(out, moreLines(len(jobs)-i))
			used += len(out[len(out)-1])
			break
		}
		out = append(out, line)
		used += len(line)
	}
	st.LinesReturned = len(out)
	st.ReturnedBytes = used
	rep.Logs = st
	return out
}

func moreLines(n int) string { return "… " + strconv.Itoa(n) + " more " + plural(n, "line") }

// seg is one step of the path to the value being filtered.
type seg struct {
	key   string
	index int
	isKey bool
}

// run is the state of one Apply or ApplyText call.
type run struct {
	f       *Filter
	opts    Options
	sc      scanner
	matches []Match
	report  Report
	where   string
	path    []seg
	// values maps each value acted on to what replaced it, so that other
	// occurrences are replaced too.
	values  map[string]replacement
	origins map[string][]string
	// flow is Options.Flow; observing, set when the run only observes a
	// tool result for the flow, collects what act would replace.
	flow      *Flow
	observing *observed
	// scope, when observing, limits the look to what can show in a text
	// (see scope.go).
	scope *scope
	spans []span // scratch
	skip  []span // scratch
	// findings counts the findings acted on (not observing), cost what
	// they cost (hold.go); admitted is what Options.Findings holds, and
	// held its refusal.
	findings       int
	cost, admitted int64
	held           *FindingsError
}

type replacement struct {
	text   string
	class  Class
	action Action
	conf   float64
}

// minSweepLen is the length under which a value acted on is not searched
// for elsewhere: shorter strings occur by chance.
const minSweepLen = 6

func (f *Filter) newRun(opts Options) *run {
	r := &run{f: f, opts: opts, sc: scanner{fields: f.fields}, flow: opts.Flow}
	if opts.Findings != nil {
		r.sc.room = r.matchRoom
	}
	return r
}

// pointer is the path to the value being filtered, for a report. Keys on
// it are as the filter left them.
func (r *run) pointer() string {
	toks := make([]string, len(r.path))
	for i, s := range r.path {
		toks[i] = s.key
		if !s.isKey {
			toks[i] = strconv.Itoa(s.index)
		}
	}
	return reportPointer(toks)
}

func (r *run) origin(value string) []string {
	origin := r.opts.Origin
	if origin == nil && r.flow != nil {
		origin = r.flow.sharedSources
	}
	if origin == nil {
		return nil
	}
	if s, ok := r.origins[value]; ok {
		return s
	}
	s := origin(value)
	if r.origins == nil {
		r.origins = map[string][]string{}
	}
	r.origins[value] = s
	return s
}

func (r *run) allowedByTool(value string) bool {
	globs := r.f.cfg.Policy.AllowTools
	if len(globs) == 0 {
		return false
	}
	srcs := r.origin(value)
	if len(srcs) == 0 {
		return false
	}
	for _, s := range srcs {
		ok := false
		for _, g := range globs {
			if m, _ := path.Match(g, s); m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// separatedClass reports the classes whose values are digits (and
// letters) that people and programs write with separators or without.
func separatedClass(c Class) bool {
	switch c {
	case ClassCard, ClassSSN, ClassIBAN, ClassPhone, ClassNationalID, ClassAccountNumber:
		return true
	}
	return false
}

// alnumOnly returns the ASCII letters and digits of s.
func alnumOnly(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if isAlnum(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// act applies the policy to one finding and returns its replacement, or
// ok false when the value stays.
func (r *run) act(c Class, conf float64, detector, value string, raw, inKey bool) (string, bool) {
	if conf < r.f.cfg.Policy.MinConfidence {
		return "", false
	}
	action := r.f.Action(c)
	if r.observing != nil {
		if action == ActionAllow {
			return "", false
		}
		// What the flow is told of it, held at the repeat price.
		if !r.admit(r.cost + RepeatBytes) {
			return "", true
		}
		r.findings++
		r.cost += RepeatBytes
		r.observing.sensitive = append(r.observing.sensitive, sensitiveValue{value: value, class: c, conf: conf, detector: detector})
		also := func(v string) {
			if r.admit(r.cost + RepeatBytes) {
				r.findings++
				r.cost += RepeatBytes
				r.observing.sensitive = append(r.observing.sensitive, sensitiveValue{value: v, class: c, conf: conf, detector: detector})
			}
		}
		// A number is known as JavaScript writes it too: the program
		// that passes 987654321.0 on writes 987654321.
		if js, ok := jsNumber(value); ok && js != value {
			also(js)
		}
		// A number with separators (a card, an IBAN, a phone number) is
		// known by its digits and letters alone too: what a program
		// normalizes it to (attack25 F12).
		if separatedClass(c) {
			if bare := alnumOnly(value); len(bare) >= minKnownLen && len(bare) < len(value) {
				also(bare)
			}
		}
		return "", true
	}
	cost := r.findingCost(value)
	if !r.admit(r.cost + cost) {
		return RedactionMarker(c), true // the output is not shown
	}
	if action != ActionAllow && r.allowedByTool(value) {
		action = ActionAllow
	}
	var text string
	switch action {
	case ActionTokenize:
		if r.opts.Vault == nil {
			action = ActionRedact
			text = RedactionMarker(c)
			break
		}
		text = r.opts.Vault.tokenize(c, value, raw, r.origin(value))
	case ActionRedact:
		text = RedactionMarker(c)
	case ActionMask:
		text = maskValue(value)
	}
	r.findings++
	r.cost += cost
	r.tally(c, conf, detector, action, inKey)
	if action == ActionAllow {
		return "", false
	}
	if len(value) >= minSweepLen {
		if r.values == nil {
			r.values = map[string]replacement{}
		}
		if _, ok := r.values[value]; !ok {
			r.values[value] = replacement{text: text, class: c, action: action, conf: conf}
		}
	}
	return text, true
}

// record counts a finding the run replaced without acting on it —
// another occurrence of a value it acted on — and what it costs.
func (r *run) record(c Class, conf float64, detector string, a Action, inKey bool) {
	if r.observing == nil {
		r.findings++
		r.cost += RepeatBytes
		r.admit(r.cost)
	}
	r.tally(c, conf, detector, a, inKey)
}

// tally counts a finding in the report.
func (r *run) tally(c Class, conf float64, detector string, a Action, inKey bool) {
	rep := &r.report
	if rep.Findings == nil {
		rep.Findings = map[Class]int{}
	}
	rep.Findings[c]++
	switch a {
	case ActionTokenize:
		rep.Tokenized++
	case ActionRedact:
		rep.Redacted++
	case ActionMask:
		rep.Masked++
	case ActionAllow:
		rep.Allowed++
	}
	if r.opts.Details && len(rep.Details) < maxDetails {
		rep.Details = append(rep.Details, Finding{In: r.where, Path: r.pointer(), InKey: inKey, Class: c, Detector: detector, Confidence: conf, Action: a})
	}
}

// walk filters n in place. inherited is the field match of the nearest
// enclosing sensitive field name, which applies to every scalar below; its
// Class is "" when there is none.
func (r *run) walk(n *node, inherited FieldMatch) {
	switch n.kind {
	case kindObject:
		changedKeys := false
		for i := range n.kids {
			key := n.kids[i].key
			if len(r.f.allowFields) > 0 && r.f.allowFields[normalizeField(key)] {
				continue
			}
			inh := inherited
			kid := &n.kids[i]
			if r.scope != nil && scalar(kid) && !r.scope.hits(kid.str) && !r.scope.hits(key) {
				continue // limited to a text, nothing of this member can show in it
			}
			if fm, ok := r.sc.field(key); ok && (scalar(kid) || fm.Confidence >= inheritConfidence) {
				inh = fm
			}
			// The key first: the path below shows it replaced. Observing
			// leaves the tree as it is: it may be looked at again.
			if r.observing != nil {
				r.spans = r.detectSpans(key, true, r.spans[:0])
			} else if nk := r.replaceText(key, true); nk != key {
				n.kids[i].key = nk
				changedKeys = true
			}
			r.path = append(r.path, seg{key: n.kids[i].key, isKey: true})
			r.walk(&n.kids[i], inh)
			r.path = r.path[:len(r.path)-1]
		}
		if changedKeys {
			uniqueKeys(n.kids)
		}
	case kindArray:
		for i := range n.kids {
			r.path = append(r.path, seg{index: i})
			r.walk(&n.kids[i], inherited)
			r.path = r.path[:len(r.path)-1]
		}
	case kindString:
		if inherited.Class != "" && !emptyPlaceholder(n.str) && !r.isOwnToken(n.str) && r.inScope(n.str) {
			if text, ok := r.act(inherited.Class, inherited.Confidence, "field_name", n.str, false, false); ok {
				if r.observing == nil {
					n.str = text
				}
				return
			}
		}
		if r.observing != nil {
			r.spans = r.detectSpans(n.str, false, r.spans[:0])
			return
		}
		n.str = r.replaceText(n.str, false)
	case kindNumber:
		if inherited.Class != "" && r.inScope(n.str) {
			if text, ok := r.act(inherited.Class, inherited.Confidence, "field_name", n.str, true, false); ok && r.observing == nil {
				*n = node{kind: kindString, str: text, key: n.key}
			}
		}
	}
}

// inScope reports whether an observation looks at s: always, unless it is
// limited to what can show in a text.
func (r *run) inScope(s string) bool {
	return r.scope == nil || r.scope.hits(s)
}

// inheritConfidence is the confidence a field name needs to apply to a
// whole object or array below it ("credentials": {...}); weaker names
// ("auth", "address") apply to a scalar value only.
const inheritConfidence = 0.8

// emptyPlaceholder reports values under a sensitive name that hold nothing:
// empty, a null word, masked, or a ${VAR} or {{var}} template.
func emptyPlaceholder(v string) bool {
	t := strings.TrimSpace(v)
	switch strings.ToLower(t) {
	case "", "null", "none", "nil", "n/a", "na", "-", "undefined", "redacted", "hidden":
		return true
	}
	if (strings.HasPrefix(t, "${") || strings.HasPrefix(t, "{{")) && strings.HasSuffix(t, "}") && !strings.ContainsAny(t, " \n\"") {
		return true
	}
	for _, r := range t {
		if r != '*' && r != '•' && r != 'x' && r != 'X' && r != '#' {
			return false
		}
	}
	return true
}

// uniqueKeys makes replaced keys unique again (two values redacted to the
// same marker) by numbering later duplicates: "⟦api_key:redacted⟧ #2".
func uniqueKeys(kids []node) {
	seen := make(map[string]bool, len(kids))
	for i := range kids {
		seen[kids[i].key] = true
	}
	dup := make(map[string]bool, len(kids))
	for i := range kids {
		k := kids[i].key
		if !dup[k] {
			dup[k] = true
			continue
		}
		for n := 2; ; n++ {
			c := k + " #" + strconv.Itoa(n)
			if !seen[c] {
				kids[i].key = c
				seen[c] = true
				dup[c] = true
				break
			}
		}
	}
}

// replaceText replaces the sensitive values the detectors find in s.
func (r *run) replaceText(s string, inKey bool) string {
	spans := r.detectSpans(s, inKey, r.spans[:0])
	r.spans = spans
	return assemble(s, spans)
}

// detectSpans appends the replacements of the sensitive values the
// detectors find in s.
func (r *run) detectSpans(s string, inKey bool, out []span) []span {
	if r.held != nil {
		return out // stopped: the output is not shown
	}
	if r.observing == nil && r.flow != nil && r.flow.seenFlags(s)&seenClean != 0 {
		return out // scanned by Flow.Observe, nothing found
	}
	// Observing, a string's flags are kept for the outputs that hold it:
	// every string, or those of the text the observation is for.
	seen := r.observing != nil && len(s) >= minScanLen
	if sc := r.scope; sc != nil {
		// A string of the text with a window is in it; one without (fewer
		// than minKnownLen bytes once folded) can hold nothing the
		// search finds, and its detectors find the same either way.
		if !sc.hits(s) {
			return out
		}
		seen = sc.holds(s)
	}
	r.matches = r.sc.scan(s, r.matches)
	if r.held != nil {
		return out // refused room for the matches
	}
	if seen {
		flags := seenAsIs
		if len(r.matches) == 0 {
			flags |= seenClean
		}
		r.observing.seen = append(r.observing.seen, seenString{hash: maphash.String(r.flow.seed, s), flags: flags})
	}
	if len(r.matches) == 0 || !r.admit(r.cost+int64(len(r.matches))*RepeatBytes) {
		return out
	}
	for _, m := range r.dropInsideTokens(s, r.matches) {
		if text, ok := r.act(m.Class, m.Confidence, m.Detector, s[m.Start:m.End], false, inKey); ok {
			out = append(out, span{start: m.Start, end: m.End, text: text})
		}
	}
	return out
}

// dropInsideTokens removes the matches that start inside a token or
// marker of the filter's own in s (see ownTokens): the detectors found
// them in its text. ms are ordered by Start and do not overlap.
func (r *run) dropInsideTokens(s string, ms []Match) []Match {
	if !strings.Contains(s, tokenOpen) {
		return ms
	}
	own := r.ownTokens(r.skip[:0], s)
	r.skip = own
	if len(own) == 0 {
		return ms
	}
	kept := ms[:0]
	t := 0
	for _, m := range ms {
		for t < len(own) && own[t].end <= m.Start {
			t++
		}
		if t < len(own) && own[t].start <= m.Start {
			continue
		}
		kept = append(kept, m)
	}
	return kept
}

// ownTokens appends the regions of s that hold a token or a marker of the
// filter's own, in order: a marker of a class the filter knows, or a
// token the run's vault holds (it minted it for this principal). The
// filter leaves their text alone. Any other text of the same shape is
// text like any other: a program that wraps a card number a tool returned
// in ⟦x:…⟧ does not hide it from the detectors or the flow (attack14 I4).
func (r *run) ownTokens(dst []span, s string) []span {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], tokenOpen)
		if j < 0 {
			break
		}
		t, ok := parseTokenAt(s, i+j)
		if !ok {
			i += j + len(tokenOpen)
			continue
		}
		if r.isOwn(s, t) {
			dst = append(dst, span{start: t.start, end: t.end})
		}
		i = t.end
	}
	return dst
}

// isOwn reports whether the token or marker t found in s is the filter's
// own (see ownTokens).
func (r *run) isOwn(s string, t tokenRef) bool {
	if t.redacted() {
		return t.class.known()
	}
	return r.opts.Vault != nil && r.opts.Vault.holds(s[t.start:t.end])
}

// isOwnToken reports whether s is exactly one token or marker of the
// filter's own, which needs no second look.
func (r *run) isOwnToken(s string) bool {
	t, ok := parseTokenAt(s, 0)
	return ok && t.end == len(s) && r.isOwn(s, t)
}
