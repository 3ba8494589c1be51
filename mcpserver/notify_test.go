package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
)

// notes collects notifications of one method.
type notes struct {
	mu   sync.Mutex
	got  []mcp.JSONRPCNotification
	seen chan struct{}
}

func collect(method string) (*notes, func(mcp.JSONRPCNotification)) {
	n := &notes{seen: make(chan struct{}, 100)}
	return n, func(x mcp.JSONRPCNotification) {
		if x.Method != method {
			return
		}
		n.mu.Lock()
		n.got = append(n.got, x)
		n.mu.Unlock()
		select {
		case n.seen <- struct{}{}:
		default:
		}
	}
}

func (n *notes) wait(t *testing.T) []mcp.JSONRPCNotification {
	t.Helper()
	select {
	case <-n.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification arrived")
	}
	time.Sleep(50 * time.Millisecond) // let the rest of a burst arrive
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]mcp.JSONRPCNotification(nil), n.got...)
}

func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		// Protocol versions before 2026-07-28 stream a request's
		// notifications on a resumable stream; later ones do not.
		for _, version := range []string{mcp.LATEST_PROTOCOL_VERSION, "2025-11-25"} {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				srv := newServer(t, mcpserver.Config{})
				c := startVersion(t, tr.connect(t, srv), version)
				got, handler := collect("notifications/progress")
				c.OnNotification(handler)
				req := mcp.CallToolRequest{}
				req.Params.Name = "execute_code"
				req.Params.Arguments = map[string]any{"code": `progress("loading", 0.25); progress("half", 0.5); progress("done", 1); 7`}
				req.Params.Meta = &mcp.Meta{ProgressToken: "tok-1"}
				res, err := c.CallTool(t.Context(), req)
				if err != nil || res.IsError {
					t.Fatalf("call: %v %v", err, res)
				}
				ns := got.wait(t)
				last := -1.0
				for _, n := range ns {
					f := n.Params.AdditionalFields
					if f["progressToken"] != "tok-1" {
						t.Errorf("token %v", f["progressToken"])
					}
					p, _ := f["progress"].(float64)
					if p <= last {
						t.Errorf("progress went from %v to %v", last, p)
					}
					last = p
					if m, _ := f["message"].(string); !strings.Contains("loading half done", m) {
						t.Errorf("message %q", m)
					}
				}
			})
		}
	}
}

func TestConsoleAsLogNotifications(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	c := start(t, transports[1].connect(t, srv))
	got, handler := collect("notifications/message")
	c.OnNotification(handler)

	// Without logging/setLevel the console stays in the run record only.
	execute(t, c, map[string]any{"code": `console.error("quiet"); 1`})
	time.Sleep(100 * time.Millisecond)
	got.mu.Lock()
	if len(got.got) != 0 {
		t.Errorf("log notification without setLevel: %+v", got.got)
	}
	got.mu.Unlock()

	//lint:ignore SA1019 logging/setLevel is what clients of protocol versions before 2026-07-28 use.
	if err := c.SetLevel(t.Context(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	execute(t, c, map[string]any{"code": `console.warn("streamed line"); 1`})
	ns := got.wait(t)
	f := ns[0].Params.AdditionalFields
	if f["level"] != "warning" || f["data"] != "streamed line" {
		t.Errorf("log notification %+v", f)
	}
}

// TestCancellation cancels a runaway program from the client: the VM is
// interrupted, so the pool's only slot is free at once for the next run.
// Over Streamable HTTP the client cancels by closing the request; mcp-go's
// SSE client sends no notifications/cancelled, so SSE cancellation is
// tested with the TypeScript SDK (and stdio with the binary).
func TestCancellation(t *testing.T) {
	t.Parallel()
	for _, tr := range transports[1:2] {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{}, executor.Config{PoolSize: 1, QueueWait: 3 * time.Second, Timeout: 30 * time.Second})
			c := start(t, tr.connect(t, srv))
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			req := mcp.CallToolRequest{}
			req.Params.Name = "execute_code"
			req.Params.Arguments = map[string]any{"code": "while (true) {}", "timeout_ms": 30000}
			if _, err := c.CallTool(ctx, req); err == nil {
				t.Fatal("the runaway call returned a result")
			}
			// Had the runaway kept its VM, this run would fail as busy
			// after the 3s queue wait, long before the runaway's 30s.
			_, rec := execute(t, c, map[string]any{"code": "'next'"})
			if rec == nil || string(rec.Result) != `"next"` {
				t.Fatalf("next run: %+v", rec)
			}
		})
	}
}

// TestProgressFloodIsBounded: a program that reports progress 200,000
// times, with long messages holding an e-mail address, sends a bounded
// number of short, filtered notifications.
func TestProgressFloodIsBounded(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	got, handler := collect("notifications/progress")
	c.OnNotification(handler)
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": `const m = "mail ada@example.com " + "p".repeat(5000); for (let i = 0; i < 40000; i++) progress(m, i / 40000); 1`, "timeout_ms": 60000}
	req.Params.Meta = &mcp.Meta{ProgressToken: "flood"}
	if res, err := c.CallTool(t.Context(), req); err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	ns := got.wait(t)
	if len(ns) > 500 {
		t.Errorf("%d progress notifications, want at most 500", len(ns))
	}
	for _, n := range ns {
		m, _ := n.Params.AdditionalFields["message"].(string)
		if len(m) > 1100 || strings.Contains(m, "ada@example.com") {
			t.Fatalf("a progress message of %d bytes reached the client: %.100s", len(m), m)
		}
	}
}
