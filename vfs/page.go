package vfs

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Page is the part of a file that fits a response budget.
type Page struct {
	// Text is the part, followed, when the file goes on, by a note that
	// says what was left out and where the rest starts.
	Text string
	// Next is the offset of the rest, 0 when the page ends the file.
	Next int
	// Total is the file's size in bytes.
	Total int
}

// MinPageBudget is the smallest budget PageOf fills: below it, the
// notes would leave no room for the file.
const MinPageBudget = 512

// PageOf returns the part of a tree file, named by its path, that starts
// at offset and fits in budget bytes, its notes included. rest says how to
// read the part from a given offset on (such as `read_tools {"path":
// "/github/get_issue.d.ts", "offset": 4096}`) for the note.
//
// A declaration (.d.ts) is cut between two declarations of its namespace,
// and each page is valid TypeScript on its own: it repeats the
// namespace's opening and closes it, the note being a comment inside. A
// Markdown page is cut at a line, a heading or a blank line where one is
// near, with an open code block closed, and opened again on the next
// page. Other files are cut at a line. Only a single declaration or line
// longer than the budget is cut inside. offset is 0, or one that a page
// gave as Next; another starts the page where it falls.
func PageOf(p string, content []byte, offset, budget int, rest func(offset int) string) (Page, error) {
	total := len(content)
	switch {
	case offset < 0 || offset > total || offset == total && total > 0:
		return Page{}, fmt.Errorf("offset %d is outside %s, which has %d bytes", offset, p, total)
	case budget < MinPageBudget:
		budget = MinPageBudget
	}
	if offset == 0 && total <= budget {
		return Page{Text: string(content), Total: total}, nil
	}
	s := string(content)
	for offset > 0 && !utf8.RuneStart(s[offset]) {
		offset--
	}
	var pg Page
	switch {
	case strings.HasSuffix(p, SignatureExt):
		pg = declarationPage(s, offset, budget, rest)
	case strings.HasSuffix(p, FullExt):
		pg = markdownPage(s, offset, budget, rest)
	default:
		pg = linePage(s, offset, budget, rest)
	}
	pg.Total = total
	return pg, nil
}

// declarationPage pages a declaration between the members of its
// namespace (see members).
func declarationPage(s string, offset, budget int, rest func(int) string) Page {
	header, starts, end := members(s)
	if len(starts) == 0 || offset > end {
		return linePage(s, offset, budget, rest)
	}
	if offset < starts[0] {
		offset = starts[0]
	}
	// The members from offset on: a page ends at one of their starts.
	cuts := []int{}
	for _, st := range starts {
		if st > offset {
			cuts = append(cuts, st)
		}
	}
	cuts = append(cuts, end)
	build := func(stop int) string {
		var b strings.Builder
		b.WriteString(header)
		if offset > starts[0] {
			fmt.Fprintf(&b, "  // … continued: the declarations from byte %d of %d.\n", offset, len(s))
		}
		b.WriteString(s[offset:stop])
		if stop < end {
			left := 0
			for _, st := range starts {
				if st >= stop {
					left++
				}
			}
			fmt.Fprintf(&b, "  // … %d more %s (%d bytes) left out to fit %d bytes: %s\n", left, plural(left, "declaration", "declarations"), end-stop, budget, rest(stop))
		}
		b.WriteString(s[end:])
		return b.String()
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		if text := build(cuts[i]); len(text) <= budget {
			next := 0
			if cuts[i] < end {
				next = cuts[i]
			}
			return Page{Text: text, Next: next}
		}
	}
	// One declaration longer than the budget: cut inside it, at a line.
	over := len(build(cuts[0])) - (cuts[0] - offset)
	stop := cutLine(s, offset, min(cuts[0], offset+max(budget-over-64, 1)))
	text := build(stop)
	for len(text) > budget && stop > offset+1 {
		stop = cutLine(s, offset, stop-(len(text)-budget))
		text = build(stop)
	}
	return Page{Text: text, Next: stop}
}

// members finds the declarations of a .d.ts: the header up to and with
// the line that opens the namespace, the offset of each declaration in
// it (with the JSDoc before it), and the offset of its closing line.
func members(s string) (header string, starts []int, end int) {
	open := strings.Index(s, "declare namespace ")
	if open < 0 {
		return "", nil, 0
	}
	nl := strings.IndexByte(s[open:], '\n')
	if nl < 0 {
		return "", nil, 0
	}
	body := open + nl + 1
	end = strings.LastIndex(s, "\n}")
	if end < body {
		return "", nil, 0
	}
	end++
	afterDoc := false
	for at := body; at < end; {
		line := s[at:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		top := len(line) > 2 && line[:2] == "  " && line[2] != ' '
		if top {
			rest := line[2:]
			switch {
			case strings.HasPrefix(rest, "/**"):
				starts = append(starts, at)
				afterDoc = strings.HasSuffix(strings.TrimRight(rest, " "), "*/")
			case strings.HasPrefix(rest, "interface "), strings.HasPrefix(rest, "type "), strings.HasPrefix(rest, "function "), strings.HasPrefix(rest, "//"):
				if !afterDoc {
					starts = append(starts, at)
				}
				afterDoc = false
			default:
				afterDoc = false
			}
		} else if strings.HasPrefix(line, "   */") {
			afterDoc = true // the end of a JSDoc block: what follows is its declaration
		}
		at += len(line) + 1
	}
	return s[:body], starts, end
}

// markdownPage pages a Markdown page at a line, preferably a heading or a
// blank line, keeping code blocks closed on each page.
func markdownPage(s string, offset, budget int, rest func(int) string) Page {
	prefix := ""
	if fence, open := openFence(s[:offset]); open {
		prefix = fence + "\n"
	}
	if offset > 0 {
		prefix = fmt.Sprintf("… continued from byte %d of %d:\n\n", offset, len(s)) + prefix
	}
	build := func(stop int) string {
		var b strings.Builder
		b.WriteString(prefix)
		part := s[offset:stop]
		b.WriteString(part)
		if stop < len(s) {
			if _, open := openFence(s[:stop]); open {
				if !strings.HasSuffix(part, "\n") {
					b.WriteByte('\n')
				}
				b.WriteString("```\n")
			}
			fmt.Fprintf(&b, "\n… %d more bytes left out to fit %d bytes: %s\n", len(s)-stop, budget, rest(stop))
		}
		return b.String()
	}
	// The room the notes take, at most; then the best cut within it.
	room := budget - len(build(offset)) - 16
	stop := len(s)
	if offset+room < len(s) {
		stop = markdownCut(s, offset, offset+max(room, 1))
	}
	text := build(stop)
	for len(text) > budget && stop > offset+1 {
		stop = cutLine(s, offset, stop-(len(text)-budget))
		text = build(stop)
	}
	next := 0
	if stop < len(s) {
		next = stop
	}
	return Page{Text: text, Next: next}
}

// markdownCut is where to end a Markdown page that may not go past limit:
// before a heading or after a blank line in the last half, else at a line.
func markdownCut(s string, from, limit int) int {
	half := from + (limit-from)/2
	for _, sep := range []string{"\n#", "\n\n"} {
		if i := strings.LastIndex(s[:limit], sep); i >= half {
			return i + 1
		}
	}
	return cutLine(s, from, limit)
}

// openFence reports whether s ends inside a code block, and the line that
// opened it.
func openFence(s string) (string, bool) {
	fence, open := "", false
	for at := 0; at < len(s); {
		line := s[at:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if strings.HasPrefix(line, "```") {
			open = !open
			fence = line
		}
		at += len(line) + 1
	}
	return fence, open
}

// linePage pages any text at a line.
func linePage(s string, offset, budget int, rest func(int) string) Page {
	build := func(stop int) string {
		text := s[offset:stop]
		if offset > 0 {
			text = fmt.Sprintf("… continued from byte %d of %d:\n", offset, len(s)) + text
		}
		if stop < len(s) {
			text += fmt.Sprintf("\n… %d more bytes left out to fit %d bytes: %s\n", len(s)-stop, budget, rest(stop))
		}
		return text
	}
	stop := len(s)
	text := build(stop)
	for len(text) > budget && stop > offset+1 {
		stop = cutLine(s, offset, stop-(len(text)-budget))
		text = build(stop)
	}
	next := 0
	if stop < len(s) {
		next = stop
	}
	return Page{Text: text, Next: next}
}

// cutLine is the last line start in (from, limit], or, in a line longer
// than that, the last rune boundary at or before limit; always past from.
func cutLine(s string, from, limit int) int {
	limit = min(max(limit, from+1), len(s))
	if limit == len(s) {
		return limit
	}
	if i := strings.LastIndexByte(s[from:limit], '\n'); i > 0 {
		return from + i + 1
	}
	for limit > from+1 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return limit
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
