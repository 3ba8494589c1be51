package tools_test

import (
	"fmt"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/catalog"
)

// demoRegistry returns a registry of the demo catalogue and the util tools.
func demoRegistry(tb testing.TB) *tools.Registry {
	tb.Helper()
	r := tools.NewRegistry()
	if err := catalog.LoadInto(r, "../testdata/catalog"); err != nil {
		tb.Fatal(err)
	}
	if err := builtin.Register(r); err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestSuggestions checks "did you mean" against the demo catalogue: close
// names get the tool meant, far ones nothing, and the answer is the same
// on every run (registries built afresh, so map orders differ).
func TestSuggestions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		call, want string // want "" means no suggestion
	}{
		{"github.search_issuez", `"github.search_issues"`},
		{"github.serch_issues", `"github.search_issues"`},
		{"github.search_isues", `"github.search_issues"`},
		{"githb.search_issues", `"github.search_issues"`},
		{"githb.serch_issues", `"github.search_issues"`},
		{"GitHub.Search_Issues", `"github.search_issues"`},
		{"github__search_issues", `"github.search_issues"`},
		{"github.search-issues", `"github.search_issues"`},
		{"search_issues", `"github.search_issues"`},
		{"search_messages", `"email.search_messages" or "slack.search_messages"`},
		{"gh.search_issues", `"github.search_issues"`},
		{"slack.search_issues", ""}, // slack exists: the agent chose it
		{"util.ecko", `"util.echo"`},
		{"crm.get_contcat", `"crm.get_contact"`},
		{"analytics.delete_user_dat", `"analytics.delete_user_data"`},
		{"github.delete_repository", ""}, // not create_repository nor delete_branch
		{"github.search_everything", ""}, // too far from search_issues
		{"github.zzzzzzzz", ""},          // nothing like it
		{"nothing.here_at_all", ""},      // no such category, nothing like it
		{"jira.create_issue", ""},        // jira has tickets; github's create_issue is not what was meant
		{"analytics.create_dashbord", `"analytics.create_dashboard"`},
	}
	want := map[string]string{}
	for _, tt := range tests {
		want[tt.call] = fmt.Sprintf("unknown tool %q", tt.call)
		if tt.want != "" {
			want[tt.call] += "; did you mean " + tt.want + "?"
		}
	}
	for run := range 20 {
		r := demoRegistry(t)
		for _, tt := range tests {
			_, err := r.Call(t.Context(), tt.call, nil)
			if tools.CodeOf(err) != tools.CodeUnknownTool {
				t.Fatalf("%s: %v, want unknown_tool", tt.call, err)
			}
			msg := err.(*tools.Error).Message
			if tools.ValidName(tt.call) && msg != want[tt.call] {
				t.Errorf("run %d: %s: %q, want %q", run, tt.call, msg, want[tt.call])
			}
			if !tools.ValidName(tt.call) && tt.want != "" && msg != want[tt.call] {
				t.Errorf("run %d: %s: %q, want %q", run, tt.call, msg, want[tt.call])
			}
		}
	}
}
