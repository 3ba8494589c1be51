package search

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"getUser", []string{"get", "user"}},
		{"get_user", []string{"get", "user"}},
		{"Get the user", []string{"get", "user"}},
		{"HTTPServer.listen", []string{"http", "server", "listen"}},
		{"github.search_issues", []string{"github", "search", "issu"}},
		{"created, creating and creates", []string{"creat", "creat", "creat"}},
		{"scheduled meetings", []string{"schedul", "meet"}},
		{"activities replies", []string{"activity", "reply"}},
		{"days bugs this", []string{"day", "bug"}},
		{"stopped running", []string{"stop", "run"}},
		{"matches boxes classes", []string{"match", "box", "class"}},
		{"status analysis", []string{"status", "analysis"}},
		{"données café", []string{"données", "café"}},
		{"assignee attendees", []string{"assign", "attend"}},
		{"open PRs, URLs and IDs", []string{"open", "pull", "request", "url", "ids"}},
		{"merge this PR", []string{"merg", "pull", "request"}},
		{"who has access", []string{"who", "access"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		question bool
		polarity int8
		forms    []string
	}{
		{"which pull requests are waiting for review", true, 0, []string{"=requests"}},
		{"who has access to this document", true, 0, nil},
		{"how many tickets are open", true, 0, []string{"=tickets"}},
		{"how do I create an event", false, 1, nil},
		{"is the site up?", true, 0, nil},
		{"give a colleague access to a file", false, 1, nil},
		{"refund a customer's payment", false, -1, nil},
		{"stop sharing a file with someone", false, -1, nil},
		{"stop the subscription", false, -1, nil},
		{"do not delete it", false, 1, nil},
		{"list open PRs", false, 0, []string{"=requests"}},
		{"schedule a meeting", false, 1, nil},
	}
	for _, tt := range tests {
		q := analyze(tt.in)
		if q.question != tt.question || q.polarity != tt.polarity || !slices.Equal(q.forms, tt.forms) {
			t.Errorf("analyze(%q) = question %v, polarity %d, forms %q; want %v, %d, %q", tt.in, q.question, q.polarity, q.forms, tt.question, tt.polarity, tt.forms)
		}
	}
}
