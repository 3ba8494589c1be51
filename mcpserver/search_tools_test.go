package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/codecell/codecell/mcpserver"
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
	}{
		{"summary is JSON", "open bugs in a repo", "summary", `{"hits":[`,
			[]string{`"name":"github.search_issues"`, `"signature_path":"github/search_issues.d.ts"`}, nil},
		{"signature is TypeScript", "open bugs in a repo", "signature", "declare namespace github {",
			[]string{"function search_issues(args: SearchIssuesArgs): Promise<SearchIssuesResult>;", "\n// Call it from execute_code: await github.search_issues({...})."},
			[]string{`"hits"`, `\n`, `\u003c`, `"cost"`}},
		{"several signatures follow each other", "search issues", "signature", "declare namespace ",
			[]string{"}\n\ndeclare namespace "}, []string{`"hits"`}},
		{"full is Markdown", "open bugs in a repo", "full", "# github.search_issues\n",
			[]string{"## Input schema"}, []string{`"hits"`, `\n`}},
		{"no hit is JSON", "zzqx vvkw", "signature", `{"hits":`,
			[]string{`No tool matched`}, nil},
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
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("has %q:\n%s", n, got)
				}
			}
		})
	}
}
