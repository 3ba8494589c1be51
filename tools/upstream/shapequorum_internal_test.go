package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestShapeQuorum: on a server of several principals, a learned shape
// shows a property name only once the results of the quorum of
// principals held it, so that the keys of one principal's results (data:
// a record's name) never reach another; with a quorum of one, all of it.
func TestShapeQuorum(t *testing.T) {
	t.Parallel()
	results := []struct{ principal, value string }{
		{"alice", `{"records":{"nightingale_layoffs_q3":{"owner":"finance","rows":3}}}`},
		{"bob", `{"records":{"budget_2027":{"owner":"ops","rows":1}}}`},
		{"bob", `{"records":{"nightingale_layoffs_q3":{"owner":"ops"}}}`},
	}
	shapes := func(quorum int) []string {
		st := &learning{inf: &tools.Inferrer{}}
		var out []string
		for _, r := range results {
			if _, err := st.inf.Observe(json.RawMessage(r.value)); err != nil {
				t.Fatal(err)
			}
			st.seeAll(json.RawMessage(r.value), principalKey(r.principal))
			s, _ := st.agreedShape(st.inf.Schema(), quorum)
			out = append(out, string(s))
		}
		return out
	}
	got := shapes(2)
	// Alice's result alone shows none of its names.
	if strings.Contains(got[0], "records") || strings.Contains(got[0], "nightingale") || !strings.Contains(got[0], `"additionalProperties":true`) {
		t.Errorf("after alice's result alone: %s", got[0])
	}
	// Bob's shows the names both held, not the record names.
	if !strings.Contains(got[1], `"records"`) || strings.Contains(got[1], "nightingale") || strings.Contains(got[1], "budget_2027") {
		t.Errorf("after bob's result: %s", got[1])
	}
	// A name bob's results held too is no longer one principal's.
	if !strings.Contains(got[2], "nightingale") || strings.Contains(got[2], "budget_2027") {
		t.Errorf("after bob's second result: %s", got[2])
	}
	if whole := shapes(1); !strings.Contains(whole[0], "nightingale") {
		t.Errorf("quorum 1: %s", whole[0])
	}
	// The principals are kept by key, not by name.
	st := &learning{}
	st.seeAll(json.RawMessage(`{"a":1}`), principalKey("alice"))
	if rec, _ := json.Marshal(st.seenRecord()); strings.Contains(string(rec), "alice") {
		t.Errorf("stored: %s", rec)
	}
}
