package security

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestResumedRunJournalSurvivesOthersCache (issue 19, third round L3): a
// run waiting for its client keeps its journal in the store's cache;
// another principal's cache writes past cache.max_total_bytes, made while
// the client answers, must not evict it (the retry was refused as "sent
// back already, or its journal expired").
func TestResumedRunJournalSurvivesOthersCache(t *testing.T) {
	t.Parallel()
	s := ruledWith(t, "\n[cache]\nmax_total_bytes = 4194304\n")
	bob := s.connect(t, bobToken, &user{})
	var once sync.Once
	var fill record
	// While alice's client answers the run's question, bob fills the
	// cache four times over.
	answer := samplingFunc(func() {
		once.Do(func() {
			fill = bob.run(`for (let i = 0; i < 16; i++) { await cache.set({key: "k" + i, value: "x".repeat(900000), ttl: "1h"}) } return 1`, "timeout_ms", 60000)
		})
	})
	a := connect26With(t, s, aliceToken, answer)
	rec := a.run(`const v = (await util.echo({text: "y".repeat(200000)})).text; await llm.call("hello"); return v.length`, "timeout_ms", 60000)
	if fill.Status != "ok" {
		t.Fatalf("bob's cache writes: %.600s", fill.raw)
	}
	if rec.Status != "ok" || string(rec.Result) != "200000" {
		t.Fatalf("alice's resumed run, after bob's cache writes: %.600s", rec.raw)
	}
	if strings.Contains(rec.raw, "request_state_refused") {
		t.Errorf("the journal was evicted: %.600s", rec.raw)
	}
}

// samplingFunc answers sampling requests with ["ok"], calling itself
// first.
type samplingFunc func()

func (f samplingFunc) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	f()
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(`["ok"]`)},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

// connect26With is connect26 with a sampling handler of the test's own.
func connect26With(t *testing.T, s *server, token string, sampling client.SamplingHandler) *host {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(s.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithSamplingHandler(sampling))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mrtr-journal", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
	}
	return &host{t: t, c: c}
}
