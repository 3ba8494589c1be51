package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver/engine"
)

// stateRewriter is the HTTP transport of a client that may replace the
// requestState of the requests it sends.
type stateRewriter struct {
	mu      sync.Mutex
	last    string
	rewrite func(string) string
}

func (w *stateRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		var msg map[string]any
		if json.Unmarshal(b, &msg) == nil {
			if p, ok := msg["params"].(map[string]any); ok {
				if s, ok := p["requestState"].(string); ok {
					w.mu.Lock()
					w.last = s
					if w.rewrite != nil {
						p["requestState"] = w.rewrite(s)
						b, _ = json.Marshal(msg)
					}
					w.mu.Unlock()
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (w *stateRewriter) set(fn func(string) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rewrite = fn
}

func (w *stateRewriter) state() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// TestMultiRoundTripBinary drives the built binary over Streamable HTTP on
// protocol 2026-07-28 with mcp-go's client, which answers input_required
// (sampling, elicitation) and retries: a program reads a file through the
// reference filesystem server, asks llm.call, moves the file (a write that
// fails if made twice), asks again, and returns — the move is made once
// and the read's result is the same on every replay, though the file is
// gone by then; approval.request accepted, declined, cancelled; a guarded
// move declined is not made; a tampered, a replayed and another server's
// requestState are refused.
func TestMultiRoundTripBinary(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	config := map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": node, "args": []string{serverScript(dir, "server-filesystem"), work}},
	}}
	b, _ := json.Marshal(config)
	mcpConfig := filepath.Join(t.TempDir(), "mcp.json")
	conf := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[approval]\nrequired_for = [\"fs.move_file\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveUpstreams(t, nil, "--mcp-config", mcpConfig, "--config", conf)

	var sampled, elicited atomic.Int32
	h := mrtrHost{
		sample: func(req mcp.CreateMessageRequest) *mcp.CreateMessageResult {
			sampled.Add(1)
			text := ""
			if m, ok := req.Messages[len(req.Messages)-1].Content.(map[string]any); ok {
				text, _ = m["text"].(string)
			}
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("model saw " + strings.TrimSpace(text))}, Model: "host-model", StopReason: "endTurn"}
		},
		elicit: func(req mcp.ElicitationRequest) *mcp.ElicitationResult {
			elicited.Add(1)
			m := req.Params.Message
			switch {
			case strings.Contains(m, "please accept"):
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"ok": true}}}
			case strings.Contains(m, "please cancel"):
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}
			}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
		},
	}
	connect := func(base string) (*client.Client, *stateRewriter) {
		rw := &stateRewriter{}
		tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPBasicClient(&http.Client{Transport: rw}))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr, client.WithSamplingHandler(h), client.WithElicitationHandler(h))
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		initialize(t, c)
		if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
			t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
		}
		return c, rw
	}
	c, rw := connect(s.base)
	// Ready, not "14 tools, unavailable (connecting: starting)": the
	// tools of a server not yet connected are listed from its last start.
	ready := regexp.MustCompile(`"fs":"\d+ tools[^,]`)
	eventuallyTrue(t, "the filesystem server ready", func() bool {
		return ready.MatchString(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"}))
	})
	run := func(args map[string]any) *engine.Record {
		t.Helper()
		_, rec, txt := callExecute(t, c, args)
		if rec.Status == "" {
			t.Fatalf("no record: %s", txt)
		}
		return rec
	}
	write := func(name, text string) string {
		p := filepath.Join(work, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(work, name))
		return err == nil
	}

	t.Run("read, ask, move, ask", func(t *testing.T) {
		src := write("report.txt", "quarterly numbers: 42")
		dst := filepath.Join(work, "archived.txt")
		before := sampled.Load()
		rec := run(map[string]any{"code": `
			const text = await fs.read_text_file({path: ` + jsString(src) + `});
			const a = await llm.call("Summarise: " + JSON.stringify(text).slice(0, 200));
			await fs.move_file({source: ` + jsString(src) + `, destination: ` + jsString(dst) + `});
			const b = await llm.call("Filed at " + new Date().toISOString().slice(0, 4));
			return {text, a: a.text, b: b.text};`, "purpose": "archive, please accept"})
		if rec.Error != nil {
			t.Fatalf("run failed: %+v", rec.Error)
		}
		var out struct {
			Text any
			A, B string
		}
		if err := json.Unmarshal(rec.Result, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(toJSON(out.Text), "quarterly numbers: 42") || !strings.Contains(out.A, "quarterly numbers: 42") {
			t.Errorf("result %s: the read's result, and what the model saw of it, should be the file's", rec.Result)
		}
		if n := sampled.Load() - before; n != 2 {
			t.Errorf("the host's model was asked %d times, want 2", n)
		}
		if exists("report.txt") || !exists("archived.txt") {
			t.Errorf("the file was not moved once")
		}
	})

	t.Run("approval.request", func(t *testing.T) {
		for _, tc := range []struct{ msg, want string }{
			{"please accept", `{"action":"accept","content":{"ok":true}}`},
			{"no thanks", `{"action":"decline"}`},
			{"please cancel", `{"action":"cancel"}`},
		} {
			rec := run(map[string]any{"code": `return await approval.request("` + tc.msg + `", {schema: {type: "object", properties: {ok: {type: "boolean"}}}});`})
			if rec.Error != nil || string(rec.Result) != tc.want {
				t.Errorf("%s: %s %+v, want %s", tc.msg, rec.Result, rec.Error, tc.want)
			}
		}
	})

	t.Run("a guarded move declined is not made", func(t *testing.T) {
		src := write("keep.txt", "keep me")
		rec := run(map[string]any{"purpose": "tidy up, please decline", "code": `
			try { await fs.move_file({source: ` + jsString(src) + `, destination: ` + jsString(filepath.Join(work, "gone.txt")) + `}); return "moved"; }
			catch (e) { return e.code; }`})
		if rec.Error != nil || string(rec.Result) != `"approval_declined"` {
			t.Errorf("result %s %+v, want approval_declined", rec.Result, rec.Error)
		}
		if !exists("keep.txt") || exists("gone.txt") {
			t.Error("the declined move was made")
		}
	})

	code := `const a = await llm.call("hi"); return a.text;`
	refused := func(t *testing.T, rec *engine.Record, want string) {
		t.Helper()
		if rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, want) {
			t.Errorf("record %s %+v, want %s saying %q", rec.Result, rec.Error, engine.KindStateRefused, want)
		}
	}
	t.Run("a tampered state is refused", func(t *testing.T) {
		rw.set(func(s string) string { return s[:len(s)-4] + "AAAA" })
		defer rw.set(nil)
		refused(t, run(map[string]any{"code": code}), "does not open")
	})
	t.Run("a replayed state is refused", func(t *testing.T) {
		if rec := run(map[string]any{"code": code}); rec.Error != nil {
			t.Fatalf("run failed: %+v", rec.Error)
		}
		used := rw.state()
		rw.set(func(string) string { return used })
		defer rw.set(nil)
		refused(t, run(map[string]any{"code": code}), "sent back already")
	})
	t.Run("another server's state is refused", func(t *testing.T) {
		other := serveUpstreams(t, nil) // another data directory: another key
		oc, orw := connect(other.base)
		_, rec, txt := callExecute(t, oc, map[string]any{"code": code})
		if rec.Error != nil {
			t.Fatalf("run on the other server failed: %s", txt)
		}
		foreign := orw.state()
		rw.set(func(string) string { return foreign })
		defer rw.set(nil)
		refused(t, run(map[string]any{"code": code}), "another installation")
	})
}

// mrtrHost answers a client's sampling and elicitation requests.
type mrtrHost struct {
	sample func(mcp.CreateMessageRequest) *mcp.CreateMessageResult
	elicit func(mcp.ElicitationRequest) *mcp.ElicitationResult
}

func (h mrtrHost) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return h.sample(req), nil
}

func (h mrtrHost) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return h.elicit(req), nil
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
