// Package filter owns codecell's output pipeline: everything a program
// returns or logs passes through it before a model sees it. It is made of
// pure functions over JSON, plus two stateful parts — the Vault of a
// session and the Flow of a run — and imports no other codecell package
// but tools/jsonstr, the JSON string encoder (a leaf).
//
// Stages:
//
//   - Detect: sensitive field names (MatchField: password, api_key, ssn,
//     card number, … matched on words, whatever the case and separator
//     style) and sensitive values in any string (ScanString: e-mail,
//     phone, card with Luhn, SSN, IBAN with mod-97, IPv4/6, JWT, PEM
//     private keys, cloud and SaaS key formats, bearer credentials,
//     passwords in URLs, key=value assignments, high-entropy strings next
//     to key-like words). Each finding has a Class and a confidence.
//   - Tokenize: per class, a Policy replaces a value by a token such as
//     ⟦email:7f3a9c21⟧ (HMAC-SHA256 under the key of the session's
//     principal, derived from the installation Key, kept in the session's
//     in-memory Vault), a redaction marker, or a mask, or allows it.
//     Vault.Resolve turns tokens in tool arguments back into values and
//     enforces exfiltration Rules for them; Vault.Stats says what a vault
//     holds.
//   - Track: a Flow follows one run's data: Observe records what each tool
//     returned, Check refuses tool arguments that carry a value a Rule
//     forbids (whole, embedded, case-changed, base64, hex or URL-encoded),
//     Provenance carries sources through the store, and Options.Flow hides
//     every sensitive value the run received wherever it shows up again.
//   - Limit: cut a document to a byte budget, always valid JSON, with
//     markers that say what was left out (Limit); cut a text to a budget
//     with a note of its length (ApplyText).
//   - Compact: render uniform arrays of objects as tables (Compact).
//   - Compress and page: zstd for stored results (Compressor), byte and
//     item pages of a stored result (PageBytes, PageItems).
//
// Filter.Apply runs detect → tokenize → limit (→ compact) over a run's
// result and logs and returns the full filtered result, the limited one
// and a Report; Filter.ApplyText does the same for one text (an error, a
// log or progress line, a resource read), scanning only the head of a
// text much larger than its budget. Reports are lean unless
// Options.Details asks for more. RATIONALE.md says why it is built so.
//
// The package does not store results, keep sessions, speak MCP or decide
// where the key file lives: package mcpserver does, and cmd/codecell
// wires the configuration. It never logs and never puts a value it
// flagged into an error or a report.
package filter
