package security

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestSearchLearningNeedsAgreement (issue 19, third round, M2): learning
// from use was installation-wide, so bob's searches and runs, from 30
// sessions, put http.post_webhook among alice's hits for "email the
// customer their invoice" (absent before, second after). A link now counts for everyone only once
// principals of their own made it: bob alone changes nothing; bob and
// alice together (both principals of this server) do.
func TestSearchLearningNeedsAgreement(t *testing.T) {
	t.Parallel()
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--catalog", catalog)
	const q = "email the customer their invoice"
	const poison = "http.post_webhook"
	learn := func(token string) {
		ss := s.open(t, token)
		ss.search(q)
		ss.run(`await http.post_webhook({url: "https://hooks.example/x", payload: {}}); 1`)
	}
	before := s.open(t, aliceToken).search(q)
	if rankOf(before, poison) >= 0 {
		t.Fatalf("%s is already in alice's hits for %q: %.300s", poison, q, before)
	}
	for range 30 {
		learn(bobToken)
	}
	if after := s.open(t, aliceToken).search(q); rankOf(after, poison) >= 0 {
		t.Errorf("bob alone put %s in alice's hits for %q (hit %d)", poison, q, rankOf(after, poison)+1)
	}
	learn(aliceToken)
	if agreed := s.open(t, aliceToken).search(q); rankOf(agreed, poison) < 0 {
		t.Errorf("learned by both principals, %s is still not in the hits for %q", poison, q)
	}
}

// search calls search_tools and returns its text.
func (ss *session) search(q string) string {
	ss.t.Helper()
	res := ss.rpc("tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": q, "detail": "name", "limit": 5}})
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(res, &r) != nil || len(r.Content) == 0 {
		ss.t.Fatalf("search_tools: %s", res)
	}
	return r.Content[0].Text
}

// rankOf is the index of the hit named name in a search_tools text, or
// -1.
func rankOf(text, name string) int {
	var r struct {
		Hits []struct {
			Name string `json:"name"`
		} `json:"hits"`
	}
	json.Unmarshal([]byte(text), &r)
	for i, h := range r.Hits {
		if h.Name == name {
			return i
		}
	}
	return -1
}
