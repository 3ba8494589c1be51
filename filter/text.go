package filter

import "strings"

// Texts (error messages and stacks, log lines, progress messages, tool
// errors, resource reads) pass the same stages as results: detect,
// tokenize, then cut to a budget with a note of the full length.
//
// A 20 MB text cut to 16 KiB is not scanned whole. Detection runs on a
// window: the first budget bytes (the safe part, where the kept head
// comes from) plus textMargin bytes after them, extended to the end of
// the run of non-space bytes it ends in (up to maxRunExtend more). Every
// detector bounds the values it reports to maxValueLen bytes (4 KiB)
// except PEM blocks, which run to the end of the window when their END
// line is not in it, and JWTs and other runs of non-space bytes, which the
// extension covers. So a value that starts in the safe part ends inside
// the window and is found exactly as in a scan of the whole text, and the
// cut is never placed inside a replaced value: the head shows its token
// or nothing of it. Nothing after the safe part is shown.

const (
	// textMargin is how far past the safe part the window reaches: more
	// than the longest value a detector reports, with its context.
	textMargin = 2 * maxValueLen
	// maxRunExtend bounds how far the window extends to finish a run of
	// non-space bytes.
	maxRunExtend = 64 << 10
)

// span replaces s[start:end] by text. Spans with text "" and start <
// end may also mark regions to skip (tokens already in a text).
type span struct {
	start, end int
	text       string
}

// assemble returns s with the spans, which are ordered and do not
// overlap, replaced.
func assemble(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	n := len(s)
	for _, sp := range spans {
		n += len(sp.text) - (sp.end - sp.start)
	}
	var b strings.Builder
	b.Grow(n)
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(sp.text)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// mergeSpans merges two ordered lists of non-overlapping spans that do not
// overlap each other.
func mergeSpans(a, b []span) []span {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]span, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].start <= b[j].start {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// dropCovered removes from regions those that overlap a span; both are
// ordered, and neither overlaps itself.
func dropCovered(regions, spans []span) []span {
	if len(spans) == 0 {
		return regions
	}
	kept := regions[:0]
	k := 0
	for _, g := range regions {
		for k < len(spans) && spans[k].end <= g.start {
			k++
		}
		if k < len(spans) && spans[k].start < g.end {
			continue
		}
		kept = append(kept, g)
	}
	return kept
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// textJob is one text being filtered within a budget.
type textJob struct {
	s      string
	budget int    // bytes; 0 means no limit
	window int    // bytes of s that are scanned
	safe   int    // bytes of s that the kept head may come from
	spans  []span // replacements in s[:window], ordered
	skip   []span // tokens in s[:window], left alone
}

func newTextJob(s string, budget int) *textJob {
	j := &textJob{s: s, budget: budget, window: len(s), safe: len(s)}
	if budget > 0 && len(s) > budget+textMargin {
		j.safe = budget
		w := budget + textMargin
		end := min(len(s), w+maxRunExtend)
		for w < end && !isSpace(s[w]) {
			w++
		}
		j.window = w
	}
	return j
}

// detect is the first stage: the values the detectors find in the window.
func (r *run) detectJob(j *textJob, inKey bool) {
	w := j.s[:j.window]
	j.spans = r.detectSpans(w, inKey, nil)
	// A value the detectors found may take in a token after it.
	j.skip = dropCovered(r.ownTokens(nil, w), j.spans)
}

// sweepJob is the second stage: other occurrences of the values the run
// acted on, outside what the first stage replaced.
func (r *run) sweepJob(sw *sweeper, j *textJob, inKey bool) {
	if sw == nil || j.window < minSweepLen {
		return
	}
	skip := mergeSpans(j.spans, j.skip)
	more := r.sweepSpans(sw, j.s[:j.window], skip, inKey, nil)
	j.spans = mergeSpans(j.spans, more)
}

// finish returns the filtered text cut to the budget, whether it was cut
// and how many bytes of s the head kept.
func (j *textJob) finish() (string, bool, int) {
	if j.window == len(j.s) {
		n := len(j.s)
		for _, sp := range j.spans {
			n += len(sp.text) - (sp.end - sp.start)
		}
		if j.budget == 0 || n <= j.budget {
			return assemble(j.s, j.spans), false, len(j.s)
		}
	}
	note := cutNote(len(j.s))
	avail := j.budget - len(note)
	if avail < 0 {
		return ellipsis, true, 0
	}
	c, k := j.cutPoint(avail)
	return assemble(j.s[:c], j.spans[:k]) + note, true, c
}

// cutPoint returns the longest prefix s[:c] of the safe part whose
// filtered form takes at most avail bytes, never ending inside a replaced
// value, a token or a rune, and the number of spans inside it.
func (j *textJob) cutPoint(avail int) (c, k int) {
	pos, used := 0, 0
	for i, sp := range j.spans {
		if sp.start >= j.safe {
			break
		}
		if gap := sp.start - pos; used+gap > avail {
			return j.headEnd(pos, pos+avail-used), i
		}
		used += sp.start - pos
		if used+len(sp.text) > avail {
			return sp.start, i
		}
		used += len(sp.text)
		pos = sp.end
		k = i + 1
	}
	return j.headEnd(pos, max(pos, min(j.safe, pos+avail-used))), k
}

// headEnd moves c, in the unreplaced stretch s[from:], back to a rune
// boundary outside any token.
func (j *textJob) headEnd(from, c int) int {
	s := j.s
	for c > from && c < len(s) && s[c]&0xC0 == 0x80 {
		c--
	}
	if o := strings.LastIndex(s[from:c], tokenOpen); o >= 0 && !strings.Contains(s[from+o:c], tokenClose) {
		c = from + o
	}
	return c
}

// TextOutput is one text as the model may see it.
type TextOutput struct {
	// Text is the filtered text, at most the budget in bytes. When cut it
	// ends with "… [cut: N bytes total]", N being the length of the text
	// given.
	Text string
	// Report says what was done; Report.Cut tells whether Text lost
	// anything. Findings count what the filter looked at: the whole text,
	// or the head and a margin after it when most was cut away.
	Report Report

	f    *Filter
	src  string
	opts Options
}

// Full returns the whole text filtered, without a budget, for the caller
// to store (a stored result the model can page through). When nothing was
// cut it is Text; otherwise the whole text is scanned now, with the same
// tokens as Text.
func (o TextOutput) Full() string {
	if !o.Report.Cut || o.f == nil {
		return o.Text
	}
	opts := o.opts
	opts.Budget = -1
	out, _ := o.f.applyText(o.src, opts)
	return out.Text
}

// ApplyText filters one text that reaches the model outside a result —
// an error message or stack, a tool error, a log or progress line, a
// resource read — and cuts it to the budget (Options.Budget, else
// Config.Budget), as Apply does for a result. It is fast on texts much
// larger than the budget: only the head and a margin after it are
// scanned (see the package's text.go for why a value straddling the cut
// cannot show). TextOutput.Full gives the whole filtered text.
func (f *Filter) ApplyText(text string, opts Options) TextOutput {
	out, _ := f.applyText(text, opts)
	return out
}

// applyText is ApplyText with the run; a negative Options.Budget means no
// limit.
func (f *Filter) applyText(text string, opts Options) (TextOutput, *run) {
	if fl := opts.Flow; fl != nil && fl.npending.Load() > 0 {
		sc := newScope(fl.seed)
		sc.fit(len(text))
		sc.add(text)
		if err := fl.settleHeld(sc, 0, opts.Findings); err != nil {
			r := f.newRun(opts)
			r.held = heldError(err)
			return TextOutput{Text: heldText(len(text)), Report: r.report}, r
		}
	}
	r := f.newRun(opts)
	r.where = "text"
	budget := 0
	if opts.Budget >= 0 {
		budget = f.budget(opts.Budget)
	}
	j := newTextJob(text, budget)
	r.detectJob(j, false)
	if r.held != nil {
		return TextOutput{Text: heldText(len(text)), Report: r.report}, r
	}
	if ks := r.newKnownScan(); ks != nil {
		r.knownJob(ks, j, false)
	} else if len(r.values) > 0 && r.held == nil {
		r.sweepJob(newSweeper(r.values, r.automataRoom), j, false)
	}
	if r.held != nil {
		return TextOutput{Text: heldText(len(text)), Report: r.report}, r
	}
	out, cut, kept := j.finish()
	rep := &r.report
	rep.OriginalBytes = len(text)
	if j.window == len(text) && !cut {
		rep.FilteredBytes = len(out)
	}
	rep.ReturnedBytes = len(out)
	rep.Budget = budget
	if cut {
		rep.Cut = true
		rep.CutsTotal = 1
		rep.Cuts = []Cut{{Path: "", Kind: CutString, Total: len(text), Kept: kept}}
	}
	return TextOutput{Text: out, Report: r.report, f: f, src: text, opts: opts}, r
}
