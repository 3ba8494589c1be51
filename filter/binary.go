package filter

import (
	"bytes"
	"unicode/utf8"
)

// Binary content — an image, audio or file that a tool returned and the
// server kept as an artifact, read later as a resource — reaches the
// model, or the host that shows it, as bytes. The filter cannot look at
// pixels; what it does with bytes:
//
//   - bytes that decode as text (valid UTF-8 with no control bytes other
//     than whitespace) are text, whatever their declared type: they are
//     filtered as ApplyText filters a text, tokens and all;
//   - other bytes are scanned where binary formats keep text — every run
//     of printable ASCII of minBinaryRun bytes or more (PNG tEXt chunks,
//     EXIF and XMP metadata, PDF dictionaries, names in an archive) — and
//     each sensitive value found there is masked in place, its bytes
//     overwritten with '*', so that the content keeps its length and its
//     structure (a checksum over a masked chunk no longer matches).
//
// Not seen: text in a compressed stream (PNG zTXt and iTXt, PDF streams,
// the members of a ZIP), text in UTF-16, and whatever pixels or samples
// show.

// minBinaryRun is the shortest run of printable bytes scanned in binary
// content: shorter runs are mostly noise, and no value a detector reports
// is shorter.
const minBinaryRun = 8

// binaryWindow is how much of a printable run in binary content is
// scanned at once (ApplyBytes).
const binaryWindow = 256 << 10

// BytesOutput is binary content as the model may see it.
type BytesOutput struct {
	// Data is the content filtered: the text filtered when Text, else the
	// bytes with the values found masked. It is data itself when nothing
	// changed.
	Data []byte
	// Text reports that the content decoded as text and was filtered as
	// a text.
	Text bool
	// Report says what was found and done (Masked counts the values
	// masked in binary content).
	Report Report
}

// ApplyBytes filters binary content (see above). Options.Budget does not
// apply: content is filtered whole.
func (f *Filter) ApplyBytes(data []byte, opts Options) BytesOutput {
	opts.Budget = -1
	if isText(data) {
		out, _ := f.applyText(string(data), opts)
		filtered := data
		if out.Text != string(data) {
			filtered = []byte(out.Text)
		}
		return BytesOutput{Data: filtered, Text: true, Report: out.Report}
	}
	// Masked in place: a token would change the content's length.
	opts.Vault = nil
	r := f.newRun(opts)
	r.where = "bytes"
	out := data
	masked := 0
	for start := 0; start < len(data); {
		if !printable(data[start]) {
			start++
			continue
		}
		end := start
		for end < len(data) && printable(data[end]) {
			end++
		}
		// A long run is scanned a window at a time, each with a margin
		// past its end for the values that begin in it: scanned whole, a
		// run of 15 MB of e-mail addresses held 600,000 matches at once
		// (issue 19, sec19).
		for w := start; end-start >= minBinaryRun && w < end; w += binaryWindow {
			stop := min(end, w+binaryWindow+pageTextMargin)
			for _, sp := range r.detectSpans(string(data[w:stop]), false, nil) {
				if w+sp.start >= min(end, w+binaryWindow) {
					break // the next window's
				}
				if masked == 0 {
					out = bytes.Clone(data)
				}
				masked++
				for i := w + sp.start; i < w+sp.end; i++ {
					out[i] = '*'
				}
			}
		}
		start = end
	}
	rep := r.report
	rep.Tokenized, rep.Redacted, rep.Masked = 0, 0, masked
	rep.OriginalBytes, rep.FilteredBytes, rep.ReturnedBytes = len(data), len(out), len(out)
	return BytesOutput{Data: out, Report: rep}
}

// IsText reports whether ApplyBytes filters data as text: valid UTF-8
// without control bytes other than whitespace.
func IsText(data []byte) bool { return isText(data) }

// isText reports whether data decodes as text: valid UTF-8 without
// control bytes other than whitespace.
func isText(data []byte) bool {
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(data)
}

// printable reports a byte of a printable ASCII run.
func printable(c byte) bool {
	return c >= 0x20 && c < 0x7f || c == '\t'
}
