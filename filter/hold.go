package filter

import (
	"errors"
	"fmt"
	"strconv"
)

// What filtering costs by its findings (issue 19, attack18 K7). A text
// or a result is held by its bytes and values before it is filtered
// (the engine's results in flight), but each finding costs the filter
// more than its bytes: its match and span, its replacement in the run's
// values (for the sweep and the known-value stage), its token and vault
// entry, its count in the report. 20 MB of distinct e-mail addresses
// took about 1.3 GiB of heap to filter. So a caller that holds what
// filtering costs gives Options.Findings, and the filter asks it, before
// it acts on findings that cost more than it was granted, to hold what
// they cost — FindingBytes a value it has not met before in this
// filtering, RepeatBytes another occurrence of one, and RepeatBytes
// each match the detectors find before they keep it (scanner.room, in
// steps): a refusal stops the filtering with a *FindingsError. A flow's
// observation of a tool's result holds its findings the same way
// (Flow.ObserveHeld), RepeatBytes each, and what the flow keeps of it
// (FlowOptions.Keep).

// FindingBytes and RepeatBytes are the memory the filter takes for one
// finding it acts on while it filters, measured with
// BenchmarkFindingsMemory (heap, with a vault and a flow, a JSON string
// and a text): 1.1–1.5 KiB a distinct e-mail address of 10⁴ to 10⁶ in
// one string — a token, a vault entry, its replacement and the sweep's
// index of it — and 320–450 bytes each of 1.3·10⁵ to 10⁶ occurrences of
// one address — a match, a span, its share of the text rebuilt.
const (
	FindingBytes = 1536
	RepeatBytes  = 512
)

// findingsStep is the bytes the filter asks the hold for at once, beyond
// those its findings cost so far.
const findingsStep = 256 * FindingBytes

// FindingsHold holds n bytes in all for one filtering's findings, or
// says why it cannot; it is called with n growing.
type FindingsHold func(n int64) error

// FindingsError is the error of a filtering stopped because its
// Options.Findings refused to hold more findings.
type FindingsError struct {
	// Findings is how many findings the filtering had acted on when it
	// stopped, and Bytes what it asked the hold for.
	Findings int
	Bytes    int64
	// Err is the hold's refusal.
	Err error
}

func (e *FindingsError) Error() string {
	return "filter: " + strconv.Itoa(e.Findings) + " findings and more: " + e.Err.Error()
}

func (e *FindingsError) Unwrap() error { return e.Err }

// admit reports whether the run may hold cost bytes in all for its
// findings, asking Options.Findings to hold them when it holds less;
// once refused, it never admits again.
func (r *run) admit(cost int64) bool {
	if r.held != nil {
		return false
	}
	if r.opts.Findings == nil || cost <= r.admitted {
		return true
	}
	want := (cost + findingsStep - 1) / findingsStep * findingsStep
	if err := r.opts.Findings(want); err != nil {
		r.held = &FindingsError{Findings: r.findings, Bytes: want, Err: err}
		return false
	}
	r.admitted = want
	return true
}

// matchRoom is the scanner's room (scanner.room) under a findings
// hold: a string's matches may grow as far as what the run holds covers
// at the repeat price, asked for as they grow. Asked once a string's
// matches were all found, the hold refused only after they had been
// spent: 3 direct calls of 400,000 addresses grew the server by
// 618–729 MiB, each refused (issue 19, attack20 N2).
func (r *run) matchRoom(n int) int {
	if !r.admit(r.cost + int64(n)*RepeatBytes) {
		return 0
	}
	return int((r.admitted - r.cost) / RepeatBytes)
}

// automataRoom holds n bytes more for the run's findings, for the
// automata it builds over the values it acted on (the sweep's, the
// known-value stage's): they take about acCost a value of a crowded
// prefix, past FindingBytes (attack21 A2's class: 10,000 addresses of
// one head allocated 87 MB to filter against 15 MB held).
func (r *run) automataRoom(n int) bool {
	if !r.admit(r.cost + int64(n)) {
		return false
	}
	r.cost += int64(n)
	return true
}

// findingCost is what acting on value costs the run: FindingBytes, or
// RepeatBytes when it acted on it before.
func (r *run) findingCost(value string) int64 {
	if _, ok := r.values[value]; ok {
		return RepeatBytes
	}
	return FindingBytes
}

// heldError is err, a refusal of an observation, as a *FindingsError.
func heldError(err error) *FindingsError {
	var fe *FindingsError
	if errors.As(err, &fe) {
		return fe
	}
	return &FindingsError{Err: err}
}

// ApplyTextHeld is ApplyText that reports a filtering stopped by
// Options.Findings; then the TextOutput is empty. A negative
// Options.Budget filters the whole text, as TextOutput.Full would.
func (f *Filter) ApplyTextHeld(text string, opts Options) (TextOutput, error) {
	out, r := f.applyText(text, opts)
	if r.held != nil {
		return TextOutput{}, r.held
	}
	return out, nil
}

// heldText is what ApplyText shows of a text whose filtering the hold
// stopped: nothing of it.
func heldText(n int) string {
	return fmt.Sprintf("[%d bytes not shown: more findings than the server could hold while filtering them]", n)
}

// MaxBudget is the largest response budget a call may ask for
// (Config.MaxBudget).
func (f *Filter) MaxBudget() int { return f.cfg.MaxBudget }
