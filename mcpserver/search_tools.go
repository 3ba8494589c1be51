package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// The tree gives search its built-in runtime pages (runtime/plan.md, …).
var _ search.PageDocs = (*vfs.FS)(nil)

const searchToolsDescription = `Find catalogue tools by task ("open bugs in a repo") or name. detail: name, summary (default; with output shape and costs), signature (their .d.ts) or full (their .md).`

const searchToolsInput = `{
	"type": "object",
	"properties": {
		"query": {"type": "string", "minLength": 1},
		"detail": {"type": "string", "enum": ["name", "summary", "signature", "full"], "default": "summary"},
		"category": {"type": "string"},
		"limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
		"budget_bytes": {"type": "integer", "minimum": 1024, "maximum": %d}
	},
	"required": ["query"],
	"additionalProperties": false
}`

func (s *Server) searchToolsTool() mcp.Tool {
	return mcp.Tool{
		Name:           "search_tools",
		Description:    searchToolsDescription,
		RawInputSchema: s.searchToolsInputSchema(),
		Annotations: mcp.ToolAnnotation{
			Title:          "Search tools",
			ReadOnlyHint:   mcp.ToBoolPtr(true),
			IdempotentHint: mcp.ToBoolPtr(true),
			OpenWorldHint:  mcp.ToBoolPtr(false),
		},
	}
}

// searchToolsInputSchema is search_tools' input schema, with the largest
// budget a call may ask for.
func (s *Server) searchToolsInputSchema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(searchToolsInput, s.maxBudget))
}

func (s *Server) searchTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query       string `json:"query"`
		Detail      string `json:"detail"`
		Category    string `json:"category"`
		Limit       int    `json:"limit"`
		BudgetBytes int    `json:"budget_bytes"`
	}
	if err := decodeArgs(s.searchToolsSchema, "search_tools", req, &args); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	caller := s.caller(ctx)
	view := s.reg.View(caller)
	budget := s.discoveryBudget(args.BudgetBytes)
	hits, err := s.search.SearchContext(ctx, search.Query{
		Caller:   caller,
		Text:     args.Query,
		Category: args.Category,
		Limit:    args.Limit,
		Detail:   search.Detail(args.Detail),
	})
	absent := absentSources(view, args.Category)
	if err != nil {
		if st := view.CategoryStatus(args.Category); st.Absent() {
			// A category that is there but has no tools yet, or any more.
			return mcp.NewToolResultText(searchJSON(nil, "", "", absent, nil, budget)), nil
		}
		return mcp.NewToolResultError(fmt.Sprintf("search_tools: %v", err)), nil
	}
	s.learn.searched(caller, args.Query)
	about := func(name string) string {
		t, ok := view.Get(name)
		if !ok {
			return ""
		}
		return beyondSummary(t)
	}
	if text, ok := declarations(hits, search.Detail(args.Detail), about, absent, budget); ok {
		return mcp.NewToolResultText(text), nil
	}
	scale := ""
	if len(hits) > 0 && hits[0].Confidence != "" {
		scale = matchScale
	}
	return mcp.NewToolResultText(searchJSON(hits, scale, nextStep(hits), absent, view, budget)), nil
}

// sourceHit is a hit as search_tools gives it: with, for a tool whose
// text is a source's rather than codecell's, the source, first, so that
// a model reads whose words follow before it reads them.
type sourceHit struct {
	From string `json:"from,omitempty"`
	search.Hit
}

// searchJSON renders hits as JSON within budget bytes: the best hits that
// fit, then the names of those left out, how to read a match (scale), the
// next step, and the sources that are not there (absent: loading or
// unavailable, so not searched).
func searchJSON(hits []search.Hit, scale, next string, absent map[string]string, view *tools.View, budget int) string {
	out := make([]sourceHit, len(hits))
	for i, h := range hits {
		out[i].Hit = h
		if view != nil {
			if cat, _, ok := strings.Cut(h.Name, "."); ok {
				out[i].From = view.CategorySource(cat)
			}
		}
	}
	// Each hit is marshalled once; an answer over budget drops the last
	// hits and joins the rest again.
	parts := make([][]byte, len(out))
	for i := range out {
		parts[i], _ = json.Marshal(out[i]) // plain data always marshals
	}
	render := func(keep int) string {
		var left string
		if keep < len(out) {
			names := make([]string, 0, len(out)-keep)
			for _, h := range out[keep:] {
				names = append(names, h.Name)
			}
			left = fmt.Sprintf("%d more hits left out to fit %d bytes: %s (ask with a smaller detail or limit, or read their .d.ts)", len(names), budget, strings.Join(names, ", "))
		}
		return searchAnswer(parts[:keep], left, scale, next, absent)
	}
	text := render(len(out))
	for keep := len(out) - 1; len(text) > budget && keep >= 0; keep-- {
		text = render(keep)
	}
	return text
}

// searchAnswer is the JSON of search_tools' answer: the hits, each
// marshalled, then what was left out, how to read a match, the next step
// and the sources not searched, each when there is one.
func searchAnswer(hits [][]byte, left, scale, next string, absent map[string]string) string {
	rest, _ := json.Marshal(struct { // plain data always marshals
		LeftOut string            `json:"left_out,omitempty"`
		Scale   string            `json:"scale,omitempty"`
		Next    string            `json:"next,omitempty"`
		Absent  map[string]string `json:"not_searched,omitempty"`
	}{left, scale, next, absent})
	n := len(`{"hits":[]`) + len(rest)
	for _, h := range hits {
		n += len(h) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(`{"hits":[`)
	for i, h := range hits {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(h)
	}
	b.WriteByte(']')
	if len(rest) > 2 {
		b.WriteByte(',')
	}
	b.Write(rest[1:]) // the fields after the hits, and the closing brace
	return b.String()
}

// absentSources are the sources whose tools a search does not see: those
// loading (their tools are not there yet) and, when the search is kept to
// one category, that category's if it is unavailable; each with where it
// stands ("loading (…; ready in about 12 s)").
func absentSources(v *tools.View, category string) map[string]string {
	var out map[string]string
	for _, c := range v.Categories() {
		st := v.CategoryStatus(c)
		if !st.Loading && !(st.Unavailable && c == category) {
			continue
		}
		if category != "" && c != category {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		what := "search again once it is done"
		if !st.Loading {
			what = "its tools cannot be searched until it is back"
		}
		out[c] = st.Describe() + ": " + what
	}
	return out
}

// nextStep tells the agent how to go on from its best hit.
func nextStep(hits []search.Hit) string {
	if len(hits) == 0 {
		return `No tool matched; read_tools "/manifest.json" lists the categories.`
	}
	h := hits[0]
	if h.Confidence == search.Low {
		return noConfidentMatch(hits)
	}
	if h.Signature != "" {
		return fmt.Sprintf("Call it from execute_code: await %s({...}).", h.Name)
	}
	return fmt.Sprintf("read_tools %q gives the signature of %s (%d bytes).", "/"+h.Cost.SignaturePath, h.Name, h.Cost.Signature.Bytes)
}

// matchScale tells the agent how to read a hit's match and confidence.
const matchScale = "match: share of your words a tool matches (1 = all); confidence: high = the kind of operation asked for, on the thing named; low = a guess"

// noConfidentMatch says that no hit answers the query well, names the
// closest, and where to browse instead.
func noConfidentMatch(hits []search.Hit) string {
	var names, dirs []string
	for _, h := range hits {
		if len(names) < 3 {
			names = append(names, h.Name)
		}
		if cat, _, ok := strings.Cut(h.Name, "."); ok && len(dirs) < 2 && !slices.Contains(dirs, "/"+cat+"/index.json") {
			dirs = append(dirs, "/"+cat+"/index.json")
		}
	}
	return fmt.Sprintf("No confident match; closest: %s. Rephrase with the API's words, or browse %s with read_tools.",
		strings.Join(names, ", "), strings.Join(dirs, " or "))
}

// declarations renders hits at the signature and full levels as what
// they are, TypeScript declarations or Markdown pages one after the
// other, rather than as strings inside JSON, whose escapes (\n, \", \u003c)
// and per-hit costs make a model read about twice the tokens of the
// declarations themselves. A declaration is preceded by what the tool's
// description says beyond its summary (about), as a comment: what it
// returns and how is often there ("Returns full paths to all matching
// items"), and without it one signature is not enough to write the
// call. The declarations say how to call the tools, so no next step
// follows them. The whole fits in budget bytes (fitDocs): fewer hits, and
// long documents cut with where the rest is, rather than 200 KB of
// GitHub's types. Sources not searched (absent) are named first. ok is
// false when there is nothing to render so (no hit, a lower level, a hit
// without its document), and the hits are then given as JSON.
func declarations(hits []search.Hit, detail search.Detail, about func(name string) string, absent map[string]string, budget int) (text string, ok bool) {
	if len(hits) == 0 || (detail != search.DetailSignature && detail != search.DetailFull) {
		return "", false
	}
	docs := make([]hitDoc, 0, len(hits))
	for _, h := range hits {
		d := hitDoc{name: h.Name, path: "/" + h.Cost.SignaturePath, doc: h.Signature}
		if detail == search.DetailFull {
			d.path, d.doc = "/"+h.Cost.FullPath, h.Full
		} else {
			d.about = about(h.Name)
		}
		if d.doc == "" {
			return "", false
		}
		docs = append(docs, d)
	}
	var head strings.Builder
	comment := "//"
	if detail == search.DetailFull {
		comment = ">"
	}
	for _, c := range slices.Sorted(maps.Keys(absent)) {
		fmt.Fprintf(&head, "%s Not searched: %s is %s\n", comment, c, absent[c])
	}
	return fitDocs(head.String(), docs, detail == search.DetailFull, budget), true
}

// hitDoc is one hit's document at the signature or full level.
type hitDoc struct {
	name, path string
	doc        string
	about      string // what the description says beyond the summary, for a signature
}

// minShare is the least room a hit's document gets before hits are
// left out: a declaration's opening and its function.
const minShare = 1536

// fitDocs joins the documents of the hits after head within budget bytes.
// Each gets a share of the room (weight), a short one giving what it does
// not need to the others; a document longer than its share is cut where
// vfs.PageOf cuts it, with where the rest is. When the shares would be
// smaller than minShare, the last hits are left out, and named.
func fitDocs(head string, docs []hitDoc, markdown bool, budget int) string {
	for keep := len(docs); keep >= 1; keep-- {
		var tail string
		if keep < len(docs) {
			names := make([]string, 0, len(docs)-keep)
			for _, d := range docs[keep:] {
				names = append(names, d.name)
			}
			tail = fmt.Sprintf("%d more hits left out to fit %d bytes: %s (search_tools with detail \"summary\" lists them; read_tools gives each)", len(names), budget, strings.Join(names, ", "))
			if markdown {
				tail = "\n\n> " + tail
			} else {
				tail = "\n\n// " + tail
			}
		}
		blocks := make([]string, keep)
		full := make([]string, keep)
		for i, d := range docs[:keep] {
			full[i] = d.block()
		}
		room := budget - len(head) - len(tail) - 2*(keep-1)
		// Water-filling: the shortest documents first, each at most its
		// share of what is left, the best hit's share twice the others'.
		order := make([]int, keep)
		weights := 0
		for i := range order {
			order[i] = i
			weights += weight(i)
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(full[a]) - len(full[b]) })
		fits := true
		for _, i := range order {
			share := room * weight(i) / weights
			weights -= weight(i)
			blocks[i] = full[i]
			if len(full[i]) > share {
				if share < minShare {
					fits = false
					break
				}
				blocks[i] = docs[i].cut(full[i], share)
			}
			room -= len(blocks[i])
		}
		if !fits && keep > 1 {
			continue
		}
		text := head + strings.Join(blocks, "\n\n") + tail
		if len(text) <= budget || keep == 1 {
			return text
		}
	}
	return head
}

// weight is the hit of rank i's part of the room: the best hit, the one
// most likely meant, gets twice the others'.
func weight(i int) int {
	if i == 0 {
		return 2
	}
	return 1
}

// block is the document with, for a signature, the description's rest as
// a comment after the source's mark (a source's words never come before
// it).
func (d hitDoc) block() string {
	doc := strings.TrimRight(d.doc, "\n")
	if d.about == "" {
		return doc
	}
	mark := ""
	if strings.HasPrefix(doc, "// From ") {
		if i := strings.IndexByte(doc, '\n'); i >= 0 {
			mark, doc = doc[:i+1], doc[i+1:]
		}
	}
	return mark + "// " + strings.ReplaceAll(d.about, "\n", "\n// ") + "\n" + doc
}

// cut is block cut to at most limit bytes, where a page of the tree file
// would be, pointing at the rest.
func (d hitDoc) cut(block string, limit int) string {
	pg, err := vfs.PageOf(d.path, []byte(block), 0, limit, func(int) string {
		return fmt.Sprintf("read_tools {\"path\": %q} gives all of %s, in pages", d.path, d.name)
	})
	if err != nil {
		return block[:cutLineAt(block, limit)]
	}
	return strings.TrimRight(pg.Text, "\n")
}

// cutLineAt is the end of the last whole line within limit bytes.
func cutLineAt(s string, limit int) int {
	if len(s) <= limit {
		return len(s)
	}
	if i := strings.LastIndexByte(s[:limit], '\n'); i > 0 {
		return i
	}
	return 0
}

// maxAbout bounds the description a signature hit carries; the tool's
// .md has all of it.
const maxAbout = 800

// beyondSummary is what t's description says beyond its summary, which
// the declaration's JSDoc already gives, cut to maxAbout bytes at a word.
func beyondSummary(t *tools.Tool) string {
	d := strings.TrimSpace(t.Description)
	if rest, ok := strings.CutPrefix(d, strings.TrimSpace(t.Summary)); ok {
		d = strings.TrimSpace(rest)
	}
	if len(d) <= maxAbout {
		return d
	}
	return cutAtWord(d, maxAbout) + " … (the rest in its .md)"
}

// cutAtWord is the start of s, at most n bytes, cut before a word.
func cutAtWord(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut <= 0 {
		cut = n
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ,;:")
}

// suggestTool is the tree's Suggester: the tool search_tools ranks
// first for the words of a missing tool path, when it is not a guess.
func (s *Server) suggestTool(c tools.Caller, category, words string) string {
	hits, err := s.search.Search(search.Query{Caller: c, Text: words, Category: category, Limit: 1, Detail: search.DetailName})
	if err != nil || len(hits) == 0 || hits[0].Confidence == search.Low {
		return ""
	}
	return hits[0].Name
}
