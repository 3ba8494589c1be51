package engine

import (
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestAccessPolicy gives each caller the rules that apply to it: its
// principal's (or "*"), its scopes', the server's; callers under equal
// rules share a toolset key.
func TestAccessPolicy(t *testing.T) {
	t.Parallel()
	p, err := newAccessPolicy(Access{
		Principals: map[string]AccessRule{
			"alice": {ReadOnly: true, Allow: []string{"memory.*"}},
			"bob":   {Allow: []string{"memory.*", "memory.*"}, ReadOnly: true}, // alice's rule, written otherwise
			"carol": {},                                                        // restricts nothing, and stands in for "*"
			"*":     {Deny: []string{"*.delete*"}},
		},
		Scopes: map[string]AccessRule{
			"codecell:read": {ReadOnly: true},
			"codecell:all":  {}, // restricts nothing
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		caller   tools.Caller
		desc     string
		sameAs   *tools.Caller
		visible  []string
		hidden   []string
		everyone bool
	}{
		{name: "alice", caller: tools.Caller{Principal: "alice"}, desc: "read_only; allow memory.*",
			visible: []string{"memory.recall"}, hidden: []string{"memory.remember", "util.echo"}},
		{name: "bob shares alice's toolset", caller: tools.Caller{Principal: "bob", Session: "s2"}, desc: "read_only; allow memory.*", sameAs: &tools.Caller{Principal: "alice"}},
		{name: "carol sees everything", caller: tools.Caller{Principal: "carol"}, everyone: true},
		{name: "dave gets the * rule", caller: tools.Caller{Principal: "dave"}, desc: "deny *.delete*",
			visible: []string{"memory.remember", "gh.get_issue"}, hidden: []string{"gh.delete_repo"}},
		{name: "a scope restricts carol", caller: tools.Caller{Principal: "carol", Scopes: "codecell:read openid"}, desc: "read_only",
			visible: []string{"util.echo"}, hidden: []string{"memory.remember"}},
		{name: "a scope that restricts nothing", caller: tools.Caller{Principal: "carol", Scopes: "codecell:all"}, everyone: true},
		{name: "rules intersect", caller: tools.Caller{Principal: "dave", Scopes: "codecell:all codecell:read"}, desc: "deny *.delete* & read_only",
			visible: []string{"gh.get_issue"}, hidden: []string{"memory.remember", "gh.delete_repo"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := p.of(tt.caller)
			if tt.everyone {
				if ts.Key != "" || ts.desc != "" {
					t.Fatalf("toolset %q %q, want every tool", ts.Key, ts.desc)
				}
				return
			}
			if ts.desc != tt.desc || !strings.HasPrefix(ts.Key, "ts-") {
				t.Errorf("toolset %q %q, want description %q", ts.Key, ts.desc, tt.desc)
			}
			if tt.sameAs != nil && p.of(*tt.sameAs).Key != ts.Key {
				t.Errorf("key %q, want %q", ts.Key, p.of(*tt.sameAs).Key)
			}
			for _, name := range tt.visible {
				if !ts.Allow(testTool(name)) {
					t.Errorf("%s is hidden", name)
				}
			}
			for _, name := range tt.hidden {
				if ts.Allow(testTool(name)) {
					t.Errorf("%s is visible", name)
				}
			}
		})
	}
	// Globs match aliases too: a tool denied by its other name is denied.
	aliased := testTool("gh.remove_repo")
	aliased.Aliases = []string{"delete-repo"}
	if p.of(tools.Caller{Principal: "dave"}).Allow(aliased) {
		t.Error("a tool whose alias a deny glob matches is visible")
	}
	// A skill is a program run as its caller: read_only keeps it.
	skill := testTool("skills.digest")
	skill.Source = "return 1"
	if !p.of(tools.Caller{Principal: "carol", Scopes: "codecell:read"}).Allow(skill) {
		t.Error("read_only hides a skill")
	}
	if none, err := newAccessPolicy(Access{Principals: map[string]AccessRule{"x": {}}, Scopes: map[string]AccessRule{"y": {}}}); none != nil || err != nil {
		t.Errorf("rules that restrict nothing made a policy: %v %v", none, err)
	}
}

// testTool is a tool named name, read-only when its name says it reads.
func testTool(name string) *tools.Tool {
	_, short, _ := strings.Cut(name, ".")
	ro := strings.HasPrefix(short, "get") || short == "recall" || short == "echo"
	return &tools.Tool{Name: name, Summary: "A tool.", Annotations: tools.Annotations{ReadOnly: ro}}
}

// BenchmarkToolsetOf measures what the registry pays per view lookup and
// per call to learn a caller's toolset.
func BenchmarkToolsetOf(b *testing.B) {
	p, err := newAccessPolicy(Access{
		ReadOnly:   false,
		Principals: map[string]AccessRule{"alice": {Allow: []string{"memory.*"}}, "*": {Deny: []string{"*.delete*"}}},
		Scopes:     map[string]AccessRule{"codecell:read": {ReadOnly: true}},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		caller tools.Caller
	}{
		{"principal", tools.Caller{Principal: "alice", Session: "s"}},
		{"principal and scopes", tools.Caller{Principal: "bob", Session: "s", Scopes: "codecell:read email openid profile"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p.toolset(bc.caller).Key == "" {
					b.Fatal("no toolset")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/lookup")
		})
	}
}
