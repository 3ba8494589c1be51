package filter

import (
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
// it acts on more findings than it was granted, to hold FindingBytes
// each: a refusal stops the filtering with a *FindingsError.

// FindingBytes is the memory the filter takes for one finding it acts on
// while it filters: measured with BenchmarkFindingsMemory, 1.1–1.5 KiB
// of heap a finding for 10⁴ to 10⁶ distinct e-mail addresses in one
// string or result (as a JSON string and as a text), with a vault and a
// flow.
const FindingBytes = 1536

// findingsStep is how many findings the filter asks the hold for at
// once, beyond those it knows it will act on.
const findingsStep = 256

// FindingsHold holds what n findings in all cost (n × FindingBytes) for
// one filtering, or says why it cannot; it is called with n growing.
type FindingsHold func(n int) error

// FindingsError is the error of a filtering stopped because its
// Options.Findings refused to hold more findings.
type FindingsError struct {
	// Findings is how many findings the filtering had met when it stopped.
	Findings int
	// Err is the hold's refusal.
	Err error
}

func (e *FindingsError) Error() string {
	return "filter: " + strconv.Itoa(e.Findings) + " findings or more: " + e.Err.Error()
}

func (e *FindingsError) Unwrap() error { return e.Err }

// admit reports whether the run may act on findings in all, asking
// Options.Findings to hold them when it holds fewer; once refused, it
// never admits again.
func (r *run) admit(findings int) bool {
	if r.held != nil {
		return false
	}
	if r.opts.Findings == nil || findings <= r.admitted {
		return true
	}
	want := (findings + findingsStep - 1) / findingsStep * findingsStep
	if err := r.opts.Findings(want); err != nil {
		r.held = &FindingsError{Findings: findings, Err: err}
		return false
	}
	r.admitted = want
	return true
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
