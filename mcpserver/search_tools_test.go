package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestSearchToolsDetail holds what each level of search_tools gives a
// model: JSON hits with what deeper reads cost up to summary; the hits'
// declarations as TypeScript at signature and their pages as Markdown at
// full, with none of JSON's escapes; JSON again when nothing matched.
func TestSearchToolsDetail(t *testing.T) {
	t.Parallel()
	c := start(t, transports[0].connect(t, catalogServer(t, mcpserver.Config{})))
	for _, tt := range []struct {
		name, query, detail string
		prefix              string
		want, not           []string
		declarations        int // how many TypeScript declarations
	}{
		{"summary is JSON", "open bugs in a repo", "summary", `{"hits":[`,
			[]string{`"name":"github.search_issues"`, `"signature_path":"github/search_issues.d.ts"`}, nil, 0},
		{"signature is TypeScript, each declaration after what the description adds to the summary", "open bugs in a repo", "signature",
			"// Runs a GitHub issue search. The query uses GitHub's search qualifiers (repo:, is:open, label:, author:, assignee:, created:>2024-01-01, ...). Results are sorted by best match unless `sort` is given. At most 1,000 results are reachable through paging.\ndeclare namespace github {",
			[]string{"function search_issues(args: SearchIssuesArgs): Promise<SearchIssuesResult>;", "}\n\n// "},
			[]string{`"hits"`, `\n`, `\u003c`, `"cost"`, "Call it from execute_code"}, 3},
		{"full is Markdown", "open bugs in a repo", "full", "# github.search_issues\n",
			[]string{"## Input schema"}, []string{`"hits"`, `\n`}, 0},
		{"no hit is JSON", "zzqx vvkw", "signature", `{"hits":`,
			[]string{`No tool matched`}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := callTool(t, c, "search_tools", map[string]any{"query": tt.query, "detail": tt.detail, "limit": 3})
			got := text(res)
			if res.IsError || !strings.HasPrefix(got, tt.prefix) {
				t.Fatalf("search_tools %q at %s does not start with %q:\n%s", tt.query, tt.detail, tt.prefix, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			if n := strings.Count(got, "declare namespace "); n != tt.declarations {
				t.Errorf("%d declarations, want %d:\n%s", n, tt.declarations, got)
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("has %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestSearchToolsLongDescription holds that a signature hit carries a
// long description cut at a word, and says where the rest is.
func TestSearchToolsLongDescription(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{})
	long := "Zebra quagga inventory. " + strings.Repeat("Every stripe is counted twice before the herd moves on. ", 30)
	err := srv.Registry().Register(tools.Tool{Name: "zoo.count_zebras", Summary: "Zebra quagga inventory.", Description: long,
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, transports[0].connect(t, srv))
	got := text(callTool(t, c, "search_tools", map[string]any{"query": "zebra quagga inventory", "detail": "signature", "limit": 1}))
	comment, _, _ := strings.Cut(got, "\ndeclare namespace zoo {")
	if !strings.HasPrefix(comment, "// Every stripe") || !strings.HasSuffix(comment, " is … (the rest in its .md)") || len(comment) > 3+800+len(" … (the rest in its .md)") {
		t.Errorf("the description in the hit (%d bytes):\n%s", len(comment), got)
	}
}
