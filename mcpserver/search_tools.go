package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
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
		"limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5}
	},
	"required": ["query"],
	"additionalProperties": false
}`

func (s *Server) searchToolsTool() mcp.Tool {
	return mcp.Tool{
		Name:           "search_tools",
		Description:    searchToolsDescription,
		RawInputSchema: json.RawMessage(searchToolsInput),
		Annotations: mcp.ToolAnnotation{
			Title:          "Search tools",
			ReadOnlyHint:   mcp.ToBoolPtr(true),
			IdempotentHint: mcp.ToBoolPtr(true),
			OpenWorldHint:  mcp.ToBoolPtr(false),
		},
	}
}

func (s *Server) searchTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query    string `json:"query"`
		Detail   string `json:"detail"`
		Category string `json:"category"`
		Limit    int    `json:"limit"`
	}
	if err := decodeArgs(s.searchToolsSchema, "search_tools", req, &args); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	caller := s.caller(ctx)
	hits, err := s.search.SearchContext(ctx, search.Query{
		Caller:   caller,
		Text:     args.Query,
		Category: args.Category,
		Limit:    args.Limit,
		Detail:   search.Detail(args.Detail),
	})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("search_tools: %v", err)), nil
	}
	s.learn.searched(caller, args.Query)
	view := s.reg.View(caller)
	about := func(name string) string {
		t, ok := view.Get(name)
		if !ok {
			return ""
		}
		return beyondSummary(t)
	}
	if text, ok := declarations(hits, search.Detail(args.Detail), about); ok {
		return mcp.NewToolResultText(text), nil
	}
	scale := ""
	if len(hits) > 0 && hits[0].Confidence != "" {
		scale = matchScale
	}
	b, err := json.Marshal(struct {
		Hits  []search.Hit `json:"hits"`
		Scale string       `json:"scale,omitempty"`
		Next  string       `json:"next,omitempty"`
	}{hits, scale, nextStep(hits)})
	if err != nil {
		return nil, fmt.Errorf("search_tools: encode hits: %w", err)
	}
	return mcp.NewToolResultText(string(b)), nil
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
// follows them. ok is false when there is nothing
// to render so (no hit, a lower level, a hit without its document), and
// the hits are then given as JSON.
func declarations(hits []search.Hit, detail search.Detail, about func(name string) string) (text string, ok bool) {
	if len(hits) == 0 || (detail != search.DetailSignature && detail != search.DetailFull) {
		return "", false
	}
	blocks := make([]string, 0, len(hits))
	for _, h := range hits {
		doc := strings.TrimRight(h.Signature, "\n")
		if detail == search.DetailFull {
			doc = strings.TrimRight(h.Full, "\n")
		} else if d := about(h.Name); d != "" {
			doc = "// " + strings.ReplaceAll(d, "\n", "\n// ") + "\n" + doc
		}
		if doc == "" {
			return "", false
		}
		blocks = append(blocks, doc)
	}
	return strings.Join(blocks, "\n\n"), true
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
