package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
)

// TestJournalKeepsWhatTheFlowSaw (issue 19, H1): a journaled call keeps
// every observation made while it ran — the calls inside it too — its own
// result once, and a retry's journal carries them.
func TestJournalKeepsWhatTheFlowSaw(t *testing.T) {
	r, err := newResumption(Resume{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.limit(1 << 20)
	seen := &observations{r: r}
	inner := json.RawMessage(`{"email":"carol@example.org"}`)
	out := json.RawMessage(`"carol@example.org"`)
	seen.note("crm.get_contact", inner, filter.Provenance{})
	seen.note("skills.fetchc", out, filter.NewProvenance("crm.get_contact"))
	r.record(0, "skills.fetchc", json.RawMessage(`{}`), out, nil, filter.Provenance{}, seen)

	b, err := json.Marshal(r.next(llmBudget{}))
	if err != nil {
		t.Fatal(err)
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Calls) != 1 || len(j.Calls[0].Seen) != 2 {
		t.Fatalf("journal %s", b)
	}
	s := j.Calls[0].Seen
	if s[0].Source != "crm.get_contact" || string(s[0].Data) != string(inner) || s[0].Result {
		t.Errorf("the inner call's observation: %+v", s[0])
	}
	if s[1].Source != "skills.fetchc" || s[1].Data != nil || !s[1].Result || s[1].From == nil {
		t.Errorf("the call's own result, kept once: %+v", s[1])
	}
}

// TestJournalBounded (issue 19, H3): past its bound a journal keeps
// nothing more and drops what it kept; the run goes on, and fails with
// journal_limit only if it asks the client.
func TestJournalBounded(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 600) + `"`)
	r, _ := newResumption(Resume{}, nil)
	r.limit(1000)
	var stopped error
	r.stop = func(err error) { stopped = err }
	r.record(0, "util.echo", json.RawMessage(`{}`), big, nil, filter.Provenance{}, &observations{r: r})
	if len(r.calls) != 1 || r.over {
		t.Fatalf("one result within the bound: %d calls, over %v", len(r.calls), r.over)
	}
	r.record(1, "util.echo", json.RawMessage(`{}`), big, nil, filter.Provenance{}, &observations{r: r})
	if len(r.calls) != 0 || !r.over {
		t.Fatalf("past the bound: %d calls kept, over %v", len(r.calls), r.over)
	}
	if err := r.end(); err != nil {
		t.Fatalf("a run that does not ask is not affected: %v", err)
	}
	_, err := r.ask(context.Background(), "c3.sample.0", mcp.NewSamplingInputRequest(mcp.CreateMessageParams{}))
	if err == nil || !strings.Contains(err.Error(), "limits.max_journal_bytes") || stopped != err {
		t.Fatalf("a question past the bound: %v (stopped %v)", err, stopped)
	}
	if r.end() != err {
		t.Errorf("end does not report the journal's limit")
	}

	// Observations count as they come, before the call is journaled.
	r, _ = newResumption(Resume{}, nil)
	r.limit(1000)
	seen := &observations{r: r}
	seen.note("pages.list", big, filter.Provenance{})
	seen.note("pages.list", big, filter.Provenance{})
	if !r.over || seen.seen != nil {
		t.Errorf("observations past the bound are kept: over %v, %d kept", r.over, len(seen.seen))
	}

	// An observation after its call was journaled (a skill's call it did
	// not await ended later) is missed: the run cannot ask.
	r, _ = newResumption(Resume{}, nil)
	r.limit(1 << 20)
	r.stop = func(error) {}
	seen = &observations{r: r}
	r.record(0, "skills.f", json.RawMessage(`{}`), big, nil, filter.Provenance{}, seen)
	seen.note("crm.get_contact", big, filter.Provenance{})
	if _, err := r.ask(context.Background(), "c2.sample.0", mcp.NewSamplingInputRequest(mcp.CreateMessageParams{})); err == nil || !strings.Contains(err.Error(), "did not await") {
		t.Errorf("a question after a missed observation: %v", err)
	}

	// A journal sent back over the bound (the bound was lowered) cannot
	// ask again.
	prior := &journal{Calls: []journalCall{{Seq: 0, Tool: "util.echo", Args: hashHex(json.RawMessage(`{}`)), Out: big}}}
	r, _ = newResumption(Resume{}, prior)
	r.limit(100)
	if !r.over {
		t.Errorf("a prior journal over the bound")
	}
}
