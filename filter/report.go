package filter

// Report says what the filter did to one document or text. It holds
// classes, counts, sizes and JSON Pointers, never a value, so it can go
// into structuredContent and audit records as it is.
type Report struct {
	// Findings counts the sensitive values found, by class, including
	// those the policy allowed.
	Findings map[Class]int `json:"findings,omitempty"`
	// Tokenized, Redacted, Masked and Allowed count what was done to
	// them. A value to tokenize without a vault is redacted.
	Tokenized int `json:"tokenized"`
	Redacted  int `json:"redacted"`
	Masked    int `json:"masked"`
	Allowed   int `json:"allowed"`
	// Details lists the first findings one by one.
	Details []Finding `json:"details,omitempty"`
	// OriginalBytes is the size of the input, FilteredBytes of the full
	// filtered document (what is stored), ReturnedBytes of the limited
	// document (what the model gets).
	OriginalBytes int `json:"original_bytes"`
	FilteredBytes int `json:"filtered_bytes"`
	ReturnedBytes int `json:"returned_bytes"`
	// Budget is the response budget that applied.
	Budget int `json:"budget,omitempty"`
	// Cut reports whether the limited document lost anything; Cuts lists
	// the first places, CutsTotal counts them all.
	Cut       bool  `json:"cut"`
	Cuts      []Cut `json:"cuts,omitempty"`
	CutsTotal int   `json:"cuts_total,omitempty"`
	// Compact is set when a compact text rendering was made.
	Compact *CompactStats `json:"compact,omitempty"`
	// Logs is set when log lines were filtered.
	Logs *LogStats `json:"logs,omitempty"`
}

// Finding is one sensitive value found, without the value.
type Finding struct {
	// In is "result", "logs" or "text".
	In string `json:"in"`
	// Path is the JSON Pointer of the value in the result ("/3" is the
	// fourth log line); for a finding in an object key, the key's field.
	Path  string `json:"path"`
	InKey bool   `json:"in_key,omitempty"`
	Class Class  `json:"class"`
	// Detector is one of Detectors, or "field_name" for a value under a
	// sensitive field name, or "repeat" for another occurrence of a value
	// already found.
	Detector   string  `json:"detector"`
	Confidence float64 `json:"confidence"`
	Action     Action  `json:"action"`
}

// CompactStats compares the compact text with the JSON it renders.
type CompactStats struct {
	JSONBytes int `json:"json_bytes"`
	TextBytes int `json:"text_bytes"`
}

// LogStats says what happened to log lines.
type LogStats struct {
	Lines         int `json:"lines"`
	LinesReturned int `json:"lines_returned"`
	LinesCut      int `json:"lines_cut,omitempty"`
	Bytes         int `json:"bytes"`
	ReturnedBytes int `json:"returned_bytes"`
}

// maxDetails bounds Report.Details.
const maxDetails = 100

// Add adds the counts and sizes of o to r, for running totals; Details,
// Cuts, Budget and Compact are not summed.
func (r *Report) Add(o Report) {
	for c, n := range o.Findings {
		if r.Findings == nil {
			r.Findings = map[Class]int{}
		}
		r.Findings[c] += n
	}
	r.Tokenized += o.Tokenized
	r.Redacted += o.Redacted
	r.Masked += o.Masked
	r.Allowed += o.Allowed
	r.OriginalBytes += o.OriginalBytes
	r.FilteredBytes += o.FilteredBytes
	r.ReturnedBytes += o.ReturnedBytes
	r.Cut = r.Cut || o.Cut
	r.CutsTotal += o.CutsTotal
}

// EstimateTokens estimates the model tokens that n bytes of JSON or text
// take: one token per 4 bytes, rounded up. Tokenizers of current models
// average 3.5 to 4.5 bytes per token on English text and JSON; the
// estimate is for the context ledger, not for billing.
func EstimateTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}
