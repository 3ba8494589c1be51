package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// host is the client side of the runtime tests: an MCP host whose model
// and user are functions.
type host struct {
	sample func(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	elicit func(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
}

func (h host) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return h.sample(ctx, req)
}

func (h host) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return h.elicit(ctx, req)
}

// answer is a model that answers with text.
func answer(text string) *mcp.CreateMessageResult {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(text)},
		Model:           "test-model",
		StopReason:      "endTurn",
	}
}

// lastText is the text of a sampling request's last message.
func lastText(req mcp.CreateMessageRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	if tc, ok := req.Messages[len(req.Messages)-1].Content.(mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// runtimeTransports connect a host to a server over the transports whose
// clients can answer server-to-client requests.
var runtimeTransports = []struct {
	name    string
	connect func(t testing.TB, srv *mcpserver.Server, opts ...client.ClientOption) *client.Client
}{
	{"streamable-http", func(t testing.TB, srv *mcpserver.Server, opts ...client.ClientOption) *client.Client {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		//lint:ignore SA1019 protocol 2025-11-25 sends sampling requests on the standalone GET stream
		tr, err := transport.NewStreamableHTTP(ts.URL+mcpserver.PathStreamable, transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		return client.NewClient(tr, opts...)
	}},
	{"stdio", func(t testing.TB, srv *mcpserver.Server, opts ...client.ClientOption) *client.Client {
		holdStdio(t)
		toServer, fromClient := io.Pipe()
		toClient, fromServer := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.ServeStdio(ctx, toServer, fromServer)
			fromServer.Close()
		}()
		t.Cleanup(func() {
			cancel()
			fromClient.Close()
			<-done
		})
		return client.NewClient(transport.NewIO(toClient, fromClient, io.NopCloser(strings.NewReader(""))), opts...)
	}},
}

// mcp-go's stdio transport has one session per process (its
// stdioSessionInstance): the client's capabilities, the writer of
// server-to-client requests and their pending replies. Two stdio
// servers at once in the test binary mix their clients: one client's
// capabilities, or its sampling requests, show in another's runs (a
// client that declared sampling refused as one that did not).
// holdStdio serves the tests' stdio servers one test at a time: t
// holds the lock, once, until its end, after its server's cleanup.
var (
	stdioMu      sync.Mutex
	stdioHolders sync.Map // testing.TB -> holding stdioMu
)

func holdStdio(t testing.TB) {
	if _, held := stdioHolders.LoadOrStore(t, true); held {
		return
	}
	stdioMu.Lock()
	t.Cleanup(func() {
		stdioHolders.Delete(t)
		stdioMu.Unlock()
	})
}

// startLegacy starts c with the initialize handshake of protocol
// 2025-11-25, which has server-to-client requests.
func startLegacy(t testing.TB, c *client.Client) *client.Client {
	t.Helper()
	return startVersion(t, c, mcp.ProtocolVersion20251125)
}

// deleter is a destructive tool that counts its calls.
func deleter(t testing.TB, srv *mcpserver.Server) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	err := srv.Registry().Register(tools.Tool{
		Name:        "files.delete",
		Summary:     "Delete a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"owner":{"type":"string"}},"required":["path"]}`),
		Annotations: tools.Annotations{Destructive: true},
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			n.Add(1)
			return json.RawMessage(`{"deleted":true}`), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestRuntimeSamplingAndApproval(t *testing.T) {
	for _, tr := range runtimeTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{Approval: engine.ApprovalConfig{ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"destructive"}}}})
			deletes := deleter(t, srv)
			var classifyCalls atomic.Int32
			var mu sync.Mutex
			var asked []string
			h := host{
				sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					text := lastText(req)
					switch {
					case strings.Contains(text, "Classify each of the 3 items"):
						// A wrong first answer: the helper asks again.
						if classifyCalls.Add(1) == 1 {
							return answer(`["bug"]`), nil
						}
						return answer("```json\n[\"billing\",\"bug\",\"bug\"]\n```"), nil
					case strings.Contains(text, "That answer is not valid"):
						return answer(`["billing","bug","bug"]`), nil
					case strings.Contains(text, "Extract from the text"):
						return answer(`{"number":42,"total":120.5}`), nil
					}
					return answer("echo:" + text + ":" + req.SystemPrompt), nil
				},
				elicit: func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					res := &mcp.ElicitationResult{}
					switch m := req.Params.Message; {
					case strings.Contains(m, "please accept"):
						res.Action = mcp.ElicitationResponseActionAccept
						res.Content = map[string]any{"comment": "fine"}
					case strings.Contains(m, "please cancel"):
						res.Action = mcp.ElicitationResponseActionCancel
					default:
						res.Action = mcp.ElicitationResponseActionDecline
					}
					return res, nil
				},
			}
			c := startLegacy(t, tr.connect(t, srv, client.WithSamplingHandler(h), client.WithElicitationHandler(h)))

			for _, tc := range []struct {
				name, code, purpose string
				want                string // the result, or the error code
			}{
				{"three samples aggregated", `
					const a = await llm.call({prompt: "one"});
					const b = await llm.call("two");
					const c = await llm.call({messages: [{role: "user", content: "three"}], system: "sys"});
					return {texts: [a.text, b.text, c.text].join("|"), model: a.model, stop: c.stopReason};`, "",
					`{"model":"test-model","stop":"endTurn","texts":"echo:one:|echo:two:|echo:three:sys"}`},
				{"classify retries once", `return await llm.classify(["refund missing", "crash", "error 500"], ["billing", "bug"]);`, "",
					`{"attempts":2,"labels":["billing","bug","bug"],"model":"test-model","via":"sampling"}`},
				{"extract", `return (await llm.extract("Invoice 42, total 120.50", {type: "object", properties: {number: {type: "integer"}, total: {type: "number"}}, required: ["number", "total"]})).data;`, "",
					`{"number":42,"total":120.5}`},
				{"approval accepted", `return await approval.request("please accept", {schema: {type: "object", properties: {comment: {type: "string"}}}});`, "",
					`{"action":"accept","content":{"comment":"fine"}}`},
				{"approval declined", `return await approval.request("no thanks");`, "", `{"action":"decline"}`},
				{"approval cancelled", `return await approval.request("please cancel");`, "", `{"action":"cancel"}`},
				{"destructive call declined", `return await files.delete({path: "/a", owner: "jane@example.com"});`, "tidy up, please decline",
					"approval_declined"},
				{"destructive call cancelled", `return await files.delete({path: "/a"});`, "tidy up, please cancel",
					"approval_declined"},
				{"destructive call accepted", `return await files.delete({path: "/b"});`, "tidy up, please accept",
					`{"deleted":true}`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res, rec := execute(t, c, map[string]any{"code": tc.code, "purpose": tc.purpose})
					if rec == nil {
						t.Fatalf("no record: %s", text(res))
					}
					if rec.Error != nil {
						if rec.Error.Code != tc.want {
							t.Fatalf("error %+v, want %s", rec.Error, tc.want)
						}
						return
					}
					if got := string(rec.Result); got != tc.want {
						t.Errorf("result %s, want %s", got, tc.want)
					}
				})
			}
			if n := deletes.Load(); n != 1 {
				t.Errorf("files.delete ran %d times, want once (after the accept)", n)
			}
			mu.Lock()
			defer mu.Unlock()
			var policyAsks []string
			for _, m := range asked {
				if strings.Contains(m, "files.delete") {
					policyAsks = append(policyAsks, m)
				}
			}
			if len(policyAsks) != 3 {
				t.Fatalf("asked %d times about files.delete, want 3: %q", len(policyAsks), asked)
			}
			first := policyAsks[0]
			for _, want := range []string{"codecell — approval required", "files.delete (it may change or destroy data)", `"path":"/a"`, `Purpose of the run, as the model gave it: "tidy up, please decline"`} {
				if !strings.Contains(first, want) {
					t.Errorf("the approval request lacks %q:\n%s", want, first)
				}
			}
			if strings.Contains(first, "jane@example.com") {
				t.Errorf("the approval request shows an e-mail address the filter hides:\n%s", first)
			}
		})
	}
}

// TestRuntimeWithoutCapabilities checks that a client that declared
// neither sampling nor elicitation gets capability_missing at once, and
// that a call the policy names is refused (fail closed) unless the
// principal's policy allows it.
func TestRuntimeWithoutCapabilities(t *testing.T) {
	for _, tr := range runtimeTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{Approval: engine.ApprovalConfig{
				ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"files.*"}},
			}})
			deletes := deleter(t, srv)
			c := startLegacy(t, tr.connect(t, srv))
			for _, tc := range []struct {
				name, code, code2, mention string
			}{
				{"llm.call", `return await llm.call("hi")`, "capability_missing", "enable sampling"},
				{"llm.classify", `return await llm.classify(["a"], ["x", "y"])`, "capability_missing", "enable sampling"},
				{"approval.request", `return await approval.request("ok?")`, "capability_missing", "enable elicitation"},
				{"policy", `return await files.delete({path: "/a"})`, "approval_unavailable", "enable elicitation"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, rec := execute(t, c, map[string]any{"code": tc.code})
					if rec.Error == nil || rec.Error.Code != tc.code2 || !strings.Contains(rec.Error.Message, tc.mention) {
						t.Fatalf("error %+v, want %s naming %q", rec.Error, tc.code2, tc.mention)
					}
				})
			}
			if n := deletes.Load(); n != 0 {
				t.Errorf("files.delete ran %d times without approval", n)
			}
		})
	}

	t.Run("on_unsupported allow", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, mcpserver.Config{Approval: engine.ApprovalConfig{
			ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"destructive"}},
			Principals:     map[string]engine.ApprovalPolicy{"local": {OnUnsupported: "allow"}},
		}})
		deletes := deleter(t, srv)
		c := startLegacy(t, runtimeTransports[1].connect(t, srv))
		if _, rec := execute(t, c, map[string]any{"code": `return await files.delete({path: "/a"})`}); rec.Error != nil {
			t.Fatalf("error %+v, want the call made", rec.Error)
		}
		if n := deletes.Load(); n != 1 {
			t.Errorf("files.delete ran %d times, want 1", n)
		}
	})

	t.Run("stateless protocol", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, mcpserver.Config{})
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		post := func(caps map[string]any) []byte {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
				"name": "execute_code", "arguments": map[string]any{"code": `return await llm.call("hi")`},
				"_meta": map[string]any{
					"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
					"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stateless", "version": "1"},
					"io.modelcontextprotocol/clientCapabilities": caps,
				},
			}})
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+mcpserver.PathStreamable, bytes.NewReader(body))
			for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "execute_code"} {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return out
		}
		// A request of protocol 2026-07-28 that declares sampling is asked
		// through input_required (TestMultiRoundTrip answers it).
		if out := post(map[string]any{"sampling": map[string]any{}}); !bytes.Contains(out, []byte(`"resultType":"input_required"`)) ||
			!bytes.Contains(out, []byte(`"method":"sampling/createMessage"`)) || !bytes.Contains(out, []byte(`"requestState":"ccrs1.`)) {
			t.Fatalf("%s, want input_required with a sampling request and a state", out)
		}
		// One that does not declare it is told to.
		if out := post(map[string]any{}); !bytes.Contains(out, []byte(`capability_missing`)) || !bytes.Contains(out, []byte("clientCapabilities")) {
			t.Fatalf("%s, want capability_missing saying to declare sampling", out)
		}
	})
}

// TestRuntimeDeadlineWhileWaiting checks that a run waiting on the
// client ends at its deadline with a timeout, and the server serves the
// next run.
func TestRuntimeDeadlineWhileWaiting(t *testing.T) {
	for _, tr := range runtimeTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{})
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			h := host{
				sample: func(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					if lastText(req) == "quick" {
						return answer("quick"), nil
					}
					select { // a model that never answers in time
					case <-release:
					case <-ctx.Done():
					}
					return nil, fmt.Errorf("gone")
				},
				elicit: func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
					select { // a user who walked away
					case <-release:
					case <-ctx.Done():
					}
					return nil, fmt.Errorf("gone")
				},
			}
			c := startLegacy(t, tr.connect(t, srv, client.WithSamplingHandler(h), client.WithElicitationHandler(h)))
			for _, code := range []string{`return await llm.call("slow")`, `return await approval.request("still there?")`} {
				_, rec := execute(t, c, map[string]any{"code": code, "timeout_ms": 300})
				if rec.Error == nil || rec.Error.Kind != "timeout" {
					t.Fatalf("%s: error %+v, want timeout", code, rec.Error)
				}
			}
			if _, rec := execute(t, c, map[string]any{"code": `return (await llm.call("quick")).text`}); rec.Error != nil || string(rec.Result) != `"quick"` {
				t.Fatalf("the next run: %+v %s", rec.Error, rec.Result)
			}
		})
	}
}

// TestLLMBudgets checks the per-run call budget.
func TestLLMBudgets(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{MaxCallsPerRun: 2}})
	var n atomic.Int32
	h := host{sample: func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		n.Add(1)
		return answer("ok"), nil
	}}
	c := startLegacy(t, runtimeTransports[1].connect(t, srv, client.WithSamplingHandler(h)))
	_, rec := execute(t, c, map[string]any{"code": `for (let i = 0; i < 3; i++) await llm.call("x" + i); return 1`})
	if rec.Error == nil || rec.Error.Code != "quota_exceeded" || !strings.Contains(rec.Error.Message, "llm.max_calls_per_run") {
		t.Fatalf("error %+v, want quota_exceeded naming llm.max_calls_per_run", rec.Error)
	}
	if n.Load() != 2 {
		t.Errorf("the client was asked %d times, want 2", n.Load())
	}
	// The budget is the run's: the next run has its own.
	if _, rec := execute(t, c, map[string]any{"code": `return (await llm.call("y")).text`}); rec.Error != nil {
		t.Fatalf("next run: %+v", rec.Error)
	}
}
