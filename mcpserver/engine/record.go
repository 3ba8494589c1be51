package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// Record is the run record a client receives as structuredContent, and
// serialized as the text content: the outcome, the result or the error,
// console lines, a summary of the tool calls, a few numbers, and what the
// output filter did. Hosts such as Claude Code hand the model
// JSON.stringify(structuredContent) and drop the text, so the record is
// what the model reads: it is lean, and as a whole it stays within the
// response budget.
type Record struct {
	Status executor.Status `json:"status"`
	// Input, when set, is what the run asks of the client before it can
	// finish, on a protocol with multi round-trip requests (mrtr.go):
	// the request ends with input_required, not with this record.
	Input *InputRequired `json:"-"`
	// Result is the program's result, filtered and cut to the budget. It
	// is absent when the run failed, and when Table holds the result.
	Result json.RawMessage `json:"result,omitempty"`
	// Table is the result as a compact table, when the result is a
	// uniform array of objects and the table is smaller than its JSON.
	Table string `json:"table,omitempty"`
	// Error says why the run failed and what to change.
	Error *RunError `json:"error,omitempty"`
	// Logs are the console lines, filtered and cut to their budget.
	Logs []executor.LogLine `json:"logs,omitempty"`
	// Artifacts are outputs kept beside the result, such as the images an
	// upstream server returned, each readable at its URI.
	Artifacts []tools.Artifact `json:"artifacts,omitempty"`
	// Calls summarises the tool calls by tool, in the order of first call,
	// when one failed or the request asked for details.
	Calls []CallSummary `json:"calls,omitempty"`
	// Trace lists every tool call; only when the request asked for details.
	Trace []executor.CallRecord `json:"trace,omitempty"`
	// Plan is a dry run's plan, or a commit's outcomes (plan.go).
	Plan *PlanRecord `json:"plan,omitempty"`
	// Stats measures the run and the context it saved.
	Stats Stats `json:"stats"`
	// Filter says what the output filter did, when it did anything.
	Filter *FilterSummary `json:"filter,omitempty"`
	// ResultURI addresses the whole filtered result when the model got
	// less than all of it.
	ResultURI string `json:"result_uri,omitempty"`
	// Note says, in a sentence or two, what to do about a cut result or
	// replaced values.
	Note string `json:"note,omitempty"`
}

// PlanRecord is a plan as the record shows it: after a dry run, its id,
// expiry and intended writes; after a commit, each step's outcome.
type PlanRecord struct {
	ID        string     `json:"plan_id,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Steps are the writes, filtered as any output:
	// [{step, tool, args}] after a dry run, [{step, tool, status,
	// error_code?}] after a commit, status ok, error or not_run.
	Steps json.RawMessage `json:"steps"`
	// note is said in the record's note.
	note string
}

// RunError is a failed run as the model reads it.
type RunError struct {
	Kind     executor.Kind   `json:"kind"`
	Message  string          `json:"message"`
	Line     int             `json:"line,omitempty"`
	Column   int             `json:"column,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	Code     string          `json:"code,omitempty"`
	Problems json.RawMessage `json:"problems,omitempty"`
	// Stack is the JavaScript stack; only when the request asked for
	// details.
	Stack string `json:"stack,omitempty"`
}

// CallSummary counts one tool's calls in a run.
type CallSummary struct {
	Tool   string `json:"tool"`
	Calls  int    `json:"calls"`
	Failed int    `json:"failed,omitempty"`
	// Cached counts the calls answered from the memo cache.
	Cached int `json:"cached,omitempty"`
	// Errors are the distinct error codes of the failed calls.
	Errors []string `json:"errors,omitempty"`
}

// Stats measures a run. The context it saved — the bytes the program read
// from tools against the bytes the model receives (the serialized record)
// — goes to the session ledger and the metrics, not into the record,
// which the model reads.
type Stats struct {
	DurationMS  float64 `json:"ms"`
	QueueWaitMS float64 `json:"queue_ms,omitempty"`
	ToolCalls   int     `json:"tool_calls"`
	// CachedCalls counts the calls answered from the memo cache.
	CachedCalls    int `json:"cached_calls,omitempty"`
	FromToolsBytes int `json:"-"`
	ToModelBytes   int `json:"-"`
}

// FilterSummary is what the output filter found and did, counted rather
// than listed unless the request asked for details.
type FilterSummary struct {
	Findings  map[filter.Class]int `json:"findings,omitempty"`
	Tokenized int                  `json:"tokenized,omitempty"`
	Redacted  int                  `json:"redacted,omitempty"`
	Masked    int                  `json:"masked,omitempty"`
	// Cut reports that the result was cut; FullBytes is then the size of
	// the whole filtered result.
	Cut       bool `json:"cut,omitempty"`
	FullBytes int  `json:"full_bytes,omitempty"`
	// Details lists findings one by one; only when asked.
	Details []filter.Finding `json:"details,omitempty"`
}

// maxCallSummaries bounds the tools listed in Calls; the rest are counted
// in a last entry.
const maxCallSummaries = 16

// summarizeCalls counts a run's calls by tool.
func summarizeCalls(calls []executor.CallRecord) []CallSummary {
	if len(calls) == 0 {
		return nil
	}
	var out []CallSummary
	index := map[string]int{}
	for _, c := range calls {
		tool := c.Tool
		i, ok := index[tool]
		if !ok {
			if len(out) == maxCallSummaries {
				tool = "(other tools)"
				i, ok = index[tool]
			}
			if !ok {
				i = len(out)
				index[tool] = i
				out = append(out, CallSummary{Tool: tool})
			}
		}
		s := &out[i]
		s.Calls++
		if c.Cached {
			s.Cached++
		}
		if !c.OK {
			s.Failed++
			code := c.Code
			if code == "" {
				code = "tool_failed"
			}
			if !contains(s.Errors, code) && len(s.Errors) < 4 {
				s.Errors = append(s.Errors, code)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// finishRecord fills the record's sizes and makes the whole serialized
// record fit budget, shrinking in order what matters least: the trace,
// the filter's details, the console lines, the result (cut again from
// full, the whole filtered result), the note, and last the error
// message. It returns the serialized record.
func finishRecord(rec *Record, budget int, full json.RawMessage) []byte {
	b := marshalRecord(rec)
	if len(b) <= budget {
		return b
	}
	if all := rec.Trace; len(all) > 0 {
		shrinkTo(rec, budget, len(all), func(k int) { rec.Trace = all[:k] })
		b = marshalRecord(rec)
	}
	if rec.Filter != nil && len(rec.Filter.Details) > 0 && len(b) > budget {
		all := rec.Filter.Details
		shrinkTo(rec, budget, len(all), func(k int) { rec.Filter.Details = all[:k] })
		b = marshalRecord(rec)
	}
	if len(rec.Logs) > 0 && len(b) > budget {
		all := rec.Logs
		k := shrinkTo(rec, budget, len(all), func(k int) { rec.Logs = all[:k] })
		if k < len(all) {
			rec.Logs = append(rec.Logs[:k:k], executor.LogLine{Level: "info", Message: fmt.Sprintf("[%d more console lines cut to keep the record within its budget]", len(all)-k)})
		}
		b = marshalRecord(rec)
	}
	if over := len(b) - budget; over > 0 && (len(rec.Result) > 0 || rec.Table != "") {
		cutResult(rec, full, over)
		b = marshalRecord(rec)
	}
	if len(b) > budget && rec.Note != "" {
		rec.Note = ""
		b = marshalRecord(rec)
		if over := len(b) - budget; over > 0 && (len(rec.Result) > 0 || rec.Table != "") {
			cutResult(rec, full, over)
			b = marshalRecord(rec)
		}
	}
	if all := rec.Artifacts; len(all) > 0 && len(b) > budget {
		shrinkTo(rec, budget, len(all), func(k int) { rec.Artifacts = all[:k] })
		b = marshalRecord(rec)
	}
	if over := len(b) - budget; over > 0 && rec.Error != nil {
		rec.Error.Stack = ""
		rec.Error.Problems = nil
		b = marshalRecord(rec)
		if over = len(b) - budget; over > 0 {
			rec.Error.Message = cutText(rec.Error.Message, len(rec.Error.Message)-over-32)
			b = marshalRecord(rec)
		}
	}
	return b
}

// shrinkTo keeps the longest prefix (of n items, set with keep) that
// lets the record fit budget, and returns its length.
func shrinkTo(rec *Record, budget, n int, keep func(int)) int {
	lo, hi := 0, n // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		keep(mid)
		if len(marshalRecord(rec)) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	keep(lo)
	return lo
}

// cutResult cuts the result by over bytes and some more, again from the
// whole filtered result, so that it stays valid JSON with the filter's
// markers of what was left out.
func cutResult(rec *Record, full json.RawMessage, over int) {
	size := len(rec.Result)
	if rec.Table != "" {
		size = len(strconv.Quote(rec.Table))
		rec.Table = ""
	}
	target := max(size-over-64, filter.MinBudget)
	if len(full) == 0 {
		full = rec.Result
	}
	limited, _, err := filter.Limit(full, filter.LimitOptions{Budget: target})
	if err != nil {
		rec.Result = json.RawMessage("null")
		return
	}
	rec.Result = limited
	if rec.Filter == nil {
		rec.Filter = &FilterSummary{}
	}
	if !rec.Filter.Cut {
		rec.Filter.Cut = true
		rec.Filter.FullBytes = len(full)
	}
}

// cutText keeps at most n bytes of s, on a character boundary, and says
// how much was cut.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… [%d more bytes cut]", len(s)-n)
}

// tailText keeps at most n bytes of the end of s, on a character
// boundary, and says how much was cut before it.
func tailText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return fmt.Sprintf("[%d bytes cut] …", i) + s[i:]
}

// marshalRecord serializes rec, noting its size in Stats.
func marshalRecord(rec *Record) []byte {
	b, err := json.Marshal(rec)
	if err != nil {
		// Every field is a plain value or valid JSON.
		panic(fmt.Sprintf("marshal run record: %v", err))
	}
	rec.Stats.ToModelBytes = len(b)
	return b
}

// filterText passes one string the model will read through the filter
// and cuts it to budget bytes.
func filterText(f *filter.Filter, text string, budget int, opts filter.Options) string {
	if text == "" {
		return ""
	}
	opts.Budget = budget
	return f.ApplyText(text, opts).Text
}
