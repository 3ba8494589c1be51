package mcpserver

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
)

// TestSearchAnswerAsMarshal: the answer joined from hits marshalled one
// by one is what marshalling it whole gives, with and without each of
// the fields that follow the hits.
func TestSearchAnswerAsMarshal(t *testing.T) {
	t.Parallel()
	hits := []sourceHit{
		{From: `the OpenAPI description "github"`, Hit: search.Hit{Name: "github.issues_list", Score: 1.5, Summary: "List <issues> & \"more\"", Output: "Issue[]",
			Cost: search.Costs{Signature: tools.CostOf(100), SignaturePath: "github/issues_list.d.ts"}, Match: 0.5, Confidence: search.High}},
		{Hit: search.Hit{Name: "util.echo", ReadOnly: true, Output: "unknown"}},
		{Hit: search.Hit{Name: "memory.recall", Destructive: true, Signature: "declare function x(): void;\n"}},
	}
	for keep := range len(hits) + 1 {
		for _, left := range []string{"", "2 more hits <left> out"} {
			for _, absent := range []map[string]string{nil, {"stripe": "loading & more", "a": "b"}} {
				want, err := json.Marshal(struct {
					Hits    []sourceHit       `json:"hits"`
					LeftOut string            `json:"left_out,omitempty"`
					Scale   string            `json:"scale,omitempty"`
					Next    string            `json:"next,omitempty"`
					Absent  map[string]string `json:"not_searched,omitempty"`
				}{hits[:keep], left, matchScale, "", absent})
				if err != nil {
					t.Fatal(err)
				}
				parts := make([][]byte, keep)
				for i := range parts {
					parts[i], _ = json.Marshal(hits[i])
				}
				if got := searchAnswer(parts, left, matchScale, "", absent); got != string(want) {
					t.Errorf("%s:\n got %s\nwant %s", fmt.Sprint(keep, left, absent), got, want)
				}
				if got := searchAnswer(parts, left, "", "", nil); !json.Valid([]byte(got)) {
					t.Errorf("not JSON: %s", got)
				}
				if got := searchAnswer(nil, "", "", "", nil); got != `{"hits":[]}` {
					t.Errorf("no hits: %s", got)
				}
			}
		}
	}
}
