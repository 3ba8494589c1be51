package filter

import "strings"

// Report says what the filter did to one document or text. It holds
// classes, counts, sizes and JSON Pointers, never a value, so it can go
// into structuredContent and audit records as it is. It is lean unless
// Options.Details asks for more: hosts hand the model the whole
// structuredContent, so a report costs context. Its paths never show a
// key the filter replaced (they show the replacement) and are abbreviated
// (see reportPointer).
type Report struct {
	// Findings counts the sensitive values found, by class, including
	// those the policy allowed.
	Findings map[Class]int `json:"findings,omitempty"`
	// Tokenized, Redacted, Masked and Allowed count what was done to
	// them. A value to tokenize without a vault is redacted.
	Tokenized int `json:"tokenized,omitempty"`
	Redacted  int `json:"redacted,omitempty"`
	Masked    int `json:"masked,omitempty"`
	Allowed   int `json:"allowed,omitempty"`
	// Details lists the first findings one by one, when Options.Details
	// asks for them.
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
	// the first places (8, or 64 with Options.Details), CutsTotal counts
	// them all.
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
	// fourth log line), keys shown as the filter left them; for a finding
	// in an object key (InKey), the path of the object.
	Path  string `json:"path"`
	InKey bool   `json:"in_key,omitempty"`
	Class Class  `json:"class"`
	// Detector is one of Detectors, or "field_name" for a value under a
	// sensitive field name, or "repeat" for another occurrence of a value
	// already found, or "known_value" for a value a Flow saw in a tool
	// result, found here case-changed or encoded.
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

// Bounds of a report.
const (
	// maxDetails bounds Report.Details.
	maxDetails = 100
	// leanCuts and maxCutsListed bound Report.Cuts without and with
	// Options.Details.
	leanCuts      = 8
	maxCutsListed = 64
	// maxPathSegment and maxPathLen bound the paths in a report.
	maxPathSegment = 40
	maxPathLen     = 256
)

// reportPointer returns the JSON Pointer of reference tokens for a
// report, abbreviated: a token longer than maxPathSegment bytes keeps its
// head and "…" (never half a rune or token), and a pointer longer than
// maxPathLen keeps its first token and as many last ones as fit, with
// "/…" between.
func reportPointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	parts := make([]string, len(tokens))
	total := 0
	for i, t := range tokens {
		if len(t) > maxPathSegment {
			t = headOutsideTokens(t, maxPathSegment-len(ellipsis)) + ellipsis
		}
		parts[i] = appendPointer("", t)
		total += len(parts[i])
	}
	if total <= maxPathLen {
		return strings.Join(parts, "")
	}
	room := maxPathLen - len(parts[0]) - len("/"+ellipsis)
	k := len(parts)
	for k > 1 && room-len(parts[k-1]) >= 0 {
		room -= len(parts[k-1])
		k--
	}
	return parts[0] + "/" + ellipsis + strings.Join(parts[k:], "")
}

// headOutsideTokens returns the longest prefix of s of at most n bytes
// that ends on a rune boundary outside any token.
func headOutsideTokens(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	head := s[:i]
	if o := strings.LastIndex(head, tokenOpen); o >= 0 && !strings.Contains(head[o:], tokenClose) {
		head = head[:o]
	}
	return head
}

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
