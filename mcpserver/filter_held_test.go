package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// What the server filters of what a program sends it — its output, an
// llm prompt or item, the arguments an approval shows — is held in the
// run's results in flight before it is filtered, findings included, and
// what costs nothing to check comes first (issue 19, attack18 K1, K7).
// Under a per-run bound of 1 MiB, 200 e-mail addresses pass (about
// 300 KiB held) and 2,000 (3 MiB: 1,536 bytes a distinct value) are
// refused, naming what is held.

// addresses is a program's expression of n distinct e-mail addresses,
// space-separated.
func addresses(n int) string {
	return `Array.from({length: ` + itoa(n) + `}, (_, i) => "u" + i + "@example.com").join(" ")`
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestRunOutputFindingsHeld (K7): a run's output and console lines are
// held by their findings too; a run whose findings cannot be held fails
// with result_too_large, showing none of them.
func TestRunOutputFindingsHeld(t *testing.T) {
	t.Parallel()
	srv, _ := storeServerTB(t, filepath.Join(t.TempDir(), "db"), mcpserver.Config{Limits: engine.Limits{ResultBytesInFlightPerRun: 1 << 20}})
	for _, tc := range []struct {
		name, code string
		refused    bool
	}{
		{"a few addresses", `return ` + addresses(200), false},
		{"one address repeated", `return "bob@example.com ".repeat(1000)`, false},
		{"a long string", `return "x".repeat(200 << 10)`, false},
		{"many addresses", `return ` + addresses(2000), true},
		{"many addresses in an array", `return ` + addresses(2000) + `.split(" ")`, true},
		{"many addresses in the console", `for (const a of ` + addresses(800) + `.split(" ")) console.log(a); return 1`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, body := srv.Execute(t.Context(), engine.Execution{Code: tc.code})
			if strings.Contains(string(body), "@example.com") {
				t.Fatalf("an address reached the record: %.300s", body)
			}
			if !tc.refused {
				if rec.Error != nil {
					t.Fatalf("%+v", rec.Error)
				}
				return
			}
			if rec.Error == nil || rec.Error.Kind != executor.KindResultSize || !strings.Contains(rec.Error.Message, "findings") || !strings.Contains(rec.Error.Message, "limits.result_bytes_in_flight_per_run") {
				t.Fatalf("%+v, want result_too_large naming the findings and the limit", rec.Error)
			}
		})
	}
}

// TestLLMFilteringHeld (K1): a prompt, and items to classify, are
// refused for their size, then held — findings included — before they
// are filtered, and the model is not asked. Under a per-run bound of 4
// MiB, 4,000 addresses (6 MiB held) are refused, 200 pass.
func TestLLMFilteringHeld(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, echo)
	srv := newServer(t, mcpserver.Config{
		LLM:    engine.LLMConfig{Provider: providerConfig(cs, "")},
		Limits: engine.Limits{ResultBytesInFlightPerRun: 4 << 20},
	})
	roomy := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: providerConfig(cs, "")}})
	for _, tc := range []struct {
		name, code, code2, mention string
	}{
		{"a prompt of many addresses", `return await llm.call(` + addresses(4000) + `)`, "result_bytes_limit", "findings"},
		{"a system prompt of many addresses", `return await llm.call({prompt: "hi", system: ` + addresses(4000) + `})`, "result_bytes_limit", "findings"},
		{"items of many addresses", `return await llm.classify([` + addresses(4000) + `.split(" ").map(email => ({email}))], ["a", "b"])`, "result_bytes_limit", "findings"},
		{"a stop sequence too long", `return await llm.call({prompt: "hi", stopSequences: [` + addresses(2000) + `]})`, "invalid_arguments", "stopSequences[0]"},
		// Arguments this long are refused before the prompt's bound is
		// checked under a per-run bound of 4 MiB (the 4 copies the gate
		// holds of them, argsHeld); under the default bounds the
		// prompt's own is met first.
		{"a prompt too long", `return await llm.call("x".repeat(1200000))`, "invalid_arguments", "filter.max_budget_bytes"},
		{"items too long", `return await llm.classify(["x".repeat(1200000)], ["a", "b"])`, "invalid_arguments", "filter.max_budget_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := srv
			if strings.HasSuffix(tc.name, "too long") && !strings.Contains(tc.name, "stop") {
				srv = roomy
			}
			rec, _ := srv.Execute(t.Context(), engine.Execution{Code: tc.code})
			if rec.Error == nil || rec.Error.Code != tc.code2 || !strings.Contains(rec.Error.Message, tc.mention) {
				t.Fatalf("%+v, want %s saying %q", rec.Error, tc.code2, tc.mention)
			}
		})
	}
	if n := cs.calls.Load(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	// A prompt of a few addresses is held, filtered and sent.
	rec, _ := srv.Execute(t.Context(), engine.Execution{Code: `return (await llm.call(` + addresses(200) + `)).text`})
	if rec.Error != nil || !strings.Contains(string(rec.Result), "echo:") || strings.Contains(cs.last().Body.Messages[0].Content, "@example.com") {
		t.Fatalf("a prompt of 200 addresses: %+v %.200s", rec.Error, rec.Result)
	}
}

// TestApprovalArgumentsHeld (K1): the arguments an approval shows its
// user are held before they are filtered; a call whose arguments'
// findings cannot be held is refused before the user is asked.
func TestApprovalArgumentsHeld(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{
		Approval: engine.ApprovalConfig{ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"destructive"}}},
		Limits:   engine.Limits{ResultBytesInFlightPerRun: 1 << 20},
	})
	deletes := deleter(t, srv)
	var asked atomic.Int32
	h := host{elicit: func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked.Add(1)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	}}
	c := startLegacy(t, runtimeTransports[0].connect(t, srv, client.WithElicitationHandler(h)))
	_, rec := execute(t, c, map[string]any{"code": `return await files.delete({path: "/a", owner: ` + addresses(2000) + `})`})
	if rec == nil || rec.Error == nil || rec.Error.Code != "result_bytes_limit" || !strings.Contains(rec.Error.Message, "findings") {
		t.Fatalf("record %+v, want result_bytes_limit naming the findings", rec)
	}
	if asked.Load() != 0 || deletes.Load() != 0 {
		t.Errorf("the user was asked %d times, the call made %d", asked.Load(), deletes.Load())
	}
	if _, rec := execute(t, c, map[string]any{"code": `return await files.delete({path: "/a", owner: ` + addresses(20) + `})`}); rec == nil || rec.Error != nil || asked.Load() != 1 {
		t.Fatalf("a call of 20 addresses: %+v, asked %d", rec, asked.Load())
	}
}
