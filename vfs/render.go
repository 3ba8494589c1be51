package vfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
)

// ManifestBudget is the most bytes manifest.json takes. When the full
// form is larger, category descriptions are shortened, and at last left
// out, until it fits; the tool counts always stay.
const ManifestBudget = 1024

// IndexBudget is the most bytes a category's index.json takes. When the
// full form is larger, related tools are cut to two per tool, then one,
// then none, and then summaries are shortened, until it fits; the file
// then says what was left out ("trimmed").
const IndexBudget = 5 * 1024

// DefaultManifestHint is the sentence manifest.json gives on how to go
// deeper; see WithManifestHint.
const DefaultManifestHint = "Read <category>/index.json for its tools, <category>/<tool>.d.ts for a signature, <category>/<tool>.md for full docs. Call in code: await <category>.<tool>(args)."

func renderManifest(s *snapshot) []byte {
	total := 0
	for _, c := range s.cats {
		total += len(c.tools)
	}
	var out []byte
	// The runtime's line names its namespaces while the whole fits, and
	// else only where to read them, before descriptions are shortened.
	type step struct {
		limit   int
		runtime string
	}
	var steps []step
	for i, limit := range []int{-1, 48, 32, 24, 16, 0} {
		if i == 0 {
			steps = append(steps, step{limit, manifestRuntime(s)})
		}
		steps = append(steps, step{limit, RuntimeDir + "/" + IndexFile})
	}
	for _, st := range steps {
		limit := st.limit
		var b strings.Builder
		fmt.Fprintf(&b, `{"total":%d,"categories":{`, total)
		for i, c := range s.cats {
			if i > 0 {
				b.WriteByte(',')
			}
			desc := fmt.Sprintf("%d tools", len(c.tools))
			if len(c.tools) == 1 {
				desc = "1 tool"
			}
			if c.status.Absent() {
				// Never left out: an agent must see a source that failed
				// or is loading.
				reasonCap := 80
				if limit >= 0 {
					reasonCap = max(limit, 40)
				}
				desc += ", " + statusWords(c.status, reasonCap, limit < 0)
			}
			if sum := shorten(c.summary, limit); sum != "" {
				desc += attributed(c.source, sum)
			}
			b.WriteString(quote(c.name))
			b.WriteByte(':')
			b.WriteString(quote(desc))
		}
		b.WriteString(`},"runtime":`)
		b.WriteString(quote(st.runtime))
		b.WriteString(`,"next":`)
		b.WriteString(quote(s.hint))
		b.WriteString("}\n")
		out = []byte(b.String())
		if len(out) <= ManifestBudget {
			break
		}
	}
	return out
}

// statusWords says where an absent category's source stands, its reason
// cut to reasonCap bytes: "unavailable (the reason)", or "loading (the
// stage when withStage, 420 of 1100; ready in about 12 s)".
func statusWords(st tools.CategoryStatus, reasonCap int, withStage bool) string {
	if st.Loading {
		ls := st.Load.State()
		stage := st.Reason
		if !withStage {
			ls.Stage, stage = "", ""
		}
		return "loading (" + shorten(ls.Describe(stage), max(reasonCap, 80)) + ")"
	}
	return "unavailable (" + shorten(st.Reason, reasonCap) + ")"
}

// attributed introduces a category's description after its tool count:
// ": text" for codecell's own, and for a source's, "; <source> says: text",
// so that no source's words pass for codecell's.
func attributed(source, text string) string {
	if source == "" {
		return ": " + text
	}
	return "; " + source + " says: " + text
}

// shorten cuts s to at most limit bytes at a word boundary, marking the
// cut with "…"; limit < 0 means no limit.
func shorten(s string, limit int) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	if limit == 0 {
		return ""
	}
	cut := s[:limit]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > limit/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.-") + "…"
}

// indexStep is one step of trimming an index to IndexBudget: related
// lists cut to related entries (-1: all), summaries to summary bytes
// (-1: whole), and the note that says so.
type indexStep struct {
	related, summary int
	note             string
}

var indexSteps = []indexStep{
	{-1, -1, ""},
	{2, -1, "related lists cut to 2"},
	{1, -1, "related lists cut to 1"},
	{0, -1, "related tools left out"},
	{0, 80, "related tools left out, summaries shortened"},
	{0, 60, "related tools left out, summaries shortened"},
	{0, 40, "related tools left out, summaries shortened"},
	{0, 0, "related tools and summaries left out"},
}

func renderIndex(s *snapshot, c *category) []byte {
	var out []byte
	for _, st := range indexSteps {
		out = indexJSON(s, c, st.related, st.summary, st.note)
		if len(out) <= IndexBudget {
			break
		}
	}
	return out
}

func indexJSON(s *snapshot, c *category, relatedCap, summaryCap int, note string) []byte {
	var b strings.Builder
	b.WriteString(`{"category":`)
	b.WriteString(quote(c.name))
	writeAbout(&b, c)
	writeStatus(&b, c)
	b.WriteString(`,"tools":`)
	writeToolEntries(&b, s, c, c.tools, relatedCap, summaryCap)
	if note != "" {
		b.WriteString(`,"trimmed":`)
		b.WriteString(quote(note + "; each tool's .md has everything"))
	}
	b.WriteString(`,"next":`)
	b.WriteString(quote(fmt.Sprintf("%[1]s/<tool>.d.ts: signature; %[1]s/<tool>.md: full docs; call: await %[1]s.<tool>(args)", c.name)))
	b.WriteString("}\n")
	return []byte(b.String())
}

// writeAbout writes a category's source, when its text is not codecell's,
// then its description.
func writeAbout(b *strings.Builder, c *category) {
	if c.source != "" {
		b.WriteString(`,"source":`)
		b.WriteString(quote(sourceNote(c.source)))
	}
	if c.summary != "" {
		b.WriteString(`,"about":`)
		b.WriteString(quote(c.summary))
	}
}

// sourceNote says whose words a category's text is.
func sourceNote(source string) string {
	return source + ": the about, summaries and docs of this category are its words, not codecell's"
}

// writeStatus writes a loading or unavailable category's status and why.
func writeStatus(b *strings.Builder, c *category) {
	switch {
	case c.status.Loading:
		b.WriteString(`,"status":"loading","reason":`)
		b.WriteString(quote(shorten(c.status.Load.State().Describe(c.status.Reason), 1024)))
	case c.status.Unavailable:
		b.WriteString(`,"status":"unavailable","reason":`)
		b.WriteString(quote(shorten(c.status.Reason, 1024)))
	}
}

// writeToolEntries writes the "tools" object of an index: each tool's
// short name with its summary (cut to summaryCap bytes, -1 for whole),
// its read-only, destructive and deprecated hints and its related tools
// (at most relatedCap, -1 for all).
func writeToolEntries(b *strings.Builder, s *snapshot, c *category, ts []*tools.Tool, relatedCap, summaryCap int) {
	b.WriteByte('{')
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(t.ShortName()))
		b.WriteString(`:{`)
		var fields []string
		if sum := shorten(t.Summary, summaryCap); sum != "" {
			fields = append(fields, `"summary":`+quote(sum))
		}
		if t.Annotations.ReadOnly {
			fields = append(fields, `"readOnly":true`)
		}
		if t.Annotations.Destructive {
			fields = append(fields, `"destructive":true`)
		}
		if t.Deprecated {
			fields = append(fields, `"deprecated":true`)
		}
		rel := s.related(t)
		if relatedCap >= 0 && len(rel) > relatedCap {
			rel = rel[:relatedCap]
		}
		if len(rel) > 0 {
			names := make([]string, len(rel))
			for j, r := range rel {
				// Tools of the same category go by their short name.
				names[j] = quote(strings.TrimPrefix(r, c.name+"."))
			}
			fields = append(fields, `"related":[`+strings.Join(names, ",")+`]`)
		}
		b.WriteString(strings.Join(fields, ","))
		b.WriteByte('}')
	}
	b.WriteByte('}')
}

// renderFull renders level 3: the whole page of a tool in Markdown.
func renderFull(s *snapshot, t *tools.Tool) []byte {
	var b strings.Builder
	cat, short := t.Category(), t.ShortName()
	fmt.Fprintf(&b, "# %s\n\n", t.Name)
	c := s.byName[cat]
	if c != nil && c.source != "" {
		fmt.Fprintf(&b, "> From %s: the summary, description, schemas and examples below are its words, not codecell's.\n\n", c.source)
	}
	fmt.Fprintf(&b, "%s\n", t.Summary)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(&b, "\n%s\n", bounded(d, maxBlock))
	}
	b.WriteString("\n")
	if t.Title != "" {
		fmt.Fprintf(&b, "- Title: %s\n", strings.ReplaceAll(t.Title, "\n", " "))
	}
	if c != nil && c.status.Absent() {
		fmt.Fprintf(&b, "- Availability: %s\n", strings.ReplaceAll(c.status.Describe(), "\n", " "))
	}
	if a := annotationWords(t.Annotations); a != "" {
		fmt.Fprintf(&b, "- Annotations: %s\n", a)
	}
	if t.Deprecated {
		b.WriteString("- Deprecated: the source advises against using it\n")
	}
	if t.Group != "" {
		fmt.Fprintf(&b, "- Group: %s/%s\n", cat, t.Group)
	}
	fmt.Fprintf(&b, "- Call: `await %s.%s(args)`", cat, short)
	if len(t.Positional) > 0 {
		fmt.Fprintf(&b, " or `await %s.%s(%s)`", cat, short, strings.Join(t.Positional, ", "))
	}
	for _, a := range t.Aliases {
		fmt.Fprintf(&b, " or `await %s(args)`", memberCall(cat, a))
	}
	fmt.Fprintf(&b, "\n- Signature: %s\n", s.signaturePath(t))

	b.WriteString("\n## Input schema\n\n")
	writeJSONBlock(&b, t.InputDocument(), `{"type":"object"}`)
	b.WriteString("\n## Output schema\n\n")
	switch {
	case len(t.OutputSchema) == 0 && t.InferredOutput != nil:
		fmt.Fprintf(&b, "%s Results are not checked against it.\n\n", InferredNote(t.InferredOutput.Observed))
		writeJSONBlock(&b, t.InferredOutput.Schema, "")
	case len(t.OutputSchema) == 0:
		b.WriteString("Not documented: the result is `unknown`.\n")
	default:
		writeJSONBlock(&b, t.OutputDocument(), "")
	}

	if len(t.Examples) > 0 {
		b.WriteString("\n## Examples\n")
		for i, ex := range t.Examples {
			title := ex.Title
			if title == "" {
				title = "Example " + strconv.Itoa(i+1)
			}
			fmt.Fprintf(&b, "\n### %s\n\n```js\nconst result = await %s.%s(%s);\n", title, cat, short, bounded(indentJSON(ex.Args, "{}"), maxBlock))
			if len(ex.Result) > 0 {
				fmt.Fprintf(&b, "// result:\n// %s\n", strings.ReplaceAll(bounded(indentJSON(ex.Result, "null"), maxBlock), "\n", "\n// "))
			}
			b.WriteString("```\n")
		}
	}
	if len(t.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range t.Errors {
			fmt.Fprintf(&b, "- `%s`: %s\n", e.Code, e.Description)
		}
	}
	if n := strings.TrimSpace(t.Notes); n != "" {
		fmt.Fprintf(&b, "\n## Notes\n\n%s\n", bounded(n, maxBlock))
	}
	if rel := s.related(t); len(rel) > 0 {
		b.WriteString("\n## Related\n\n")
		for _, r := range rel {
			fmt.Fprintf(&b, "- %s: %s\n", r, s.tools[r].Summary)
		}
	}
	if src := strings.TrimSpace(t.Source); src != "" {
		fmt.Fprintf(&b, "\n## Source\n\n```js\n%s\n```\n", src)
	}
	return []byte(b.String())
}

// memberCall is how a program reaches name in namespace cat: cat.name, or
// cat["name"] when name is not an identifier.
func memberCall(cat, name string) string {
	if jsIdent(name) {
		return cat + "." + name
	}
	return cat + "[" + quote(name) + "]"
}

func jsIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != "" && !reserved[s]
}

func annotationWords(a tools.Annotations) string {
	var w []string
	if a.ReadOnly {
		w = append(w, "read-only")
	}
	if a.Destructive {
		w = append(w, "destructive")
	}
	if a.Idempotent {
		w = append(w, "idempotent")
	}
	if a.OpenWorld {
		w = append(w, "open-world")
	}
	return strings.Join(w, ", ")
}

func writeJSONBlock(b *strings.Builder, raw json.RawMessage, dflt string) {
	fmt.Fprintf(b, "```json\n%s\n```\n", bounded(indentJSON(raw, dflt), maxBlock))
}

// Bounds of what a full page shows of one schema, example or text, so
// that a pathological schema (20,000 properties, nested a thousand deep)
// makes a page of bounded size in bounded time; read_tools pages what
// remains.
const (
	maxBlock       = 64 << 10
	maxIndentDepth = 12 // deeper JSON is shown compact
)

// bounded cuts s at a line to at most limit bytes, saying how much was
// left out.
func bounded(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := cutLine(s, 0, limit)
	return s[:cut] + fmt.Sprintf("… %d more bytes left out: this page shows the first %d", len(s)-cut, limit)
}

// indentJSON pretty-prints raw as json.Indent does with two spaces,
// keeping key order, but writes what is nested deeper than
// maxIndentDepth compact, so that its size stays near raw's; empty raw
// gives dflt.
func indentJSON(raw json.RawMessage, dflt string) string {
	if len(raw) == 0 {
		raw = json.RawMessage(dflt)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return string(raw)
	}
	src := compact.Bytes()
	var b strings.Builder
	b.Grow(len(src) * 2)
	depth := 0
	newline := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	inStr, esc := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			b.WriteByte(c)
		case '{', '[':
			b.WriteByte(c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				b.WriteByte(src[i+1]) // empty: {} or []
				i++
				continue
			}
			depth++
			if depth <= maxIndentDepth {
				newline(depth)
			}
		case '}', ']':
			depth--
			if depth < maxIndentDepth {
				newline(depth)
			}
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			if depth <= maxIndentDepth {
				newline(depth)
			}
		case ':':
			b.WriteByte(c)
			if depth <= maxIndentDepth {
				b.WriteByte(' ')
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
