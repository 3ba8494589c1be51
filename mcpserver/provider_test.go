package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// chatServer is a local OpenAI-compatible chat completions endpoint: it
// records what it is asked and answers with reply.
type chatServer struct {
	*httptest.Server
	calls atomic.Int32

	mu       sync.Mutex
	requests []chatCall
}

type chatCall struct {
	Auth string
	Body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
}

// reply answers the n-th call (from 1): a status and a body.
type reply func(n int, call chatCall) (int, string)

// completion is a chat completion answer with text.
func completion(text string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "local-model-served",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
	})
	return string(b)
}

func newChatServer(t testing.TB, r reply) *chatServer {
	t.Helper()
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		var c chatCall
		c.Auth = req.Header.Get("Authorization")
		if err := json.NewDecoder(req.Body).Decode(&c.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		cs.requests = append(cs.requests, c)
		cs.mu.Unlock()
		status, body := r(int(cs.calls.Add(1)), c)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) last() chatCall {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.requests) == 0 {
		return chatCall{}
	}
	return cs.requests[len(cs.requests)-1]
}

// echo answers with the last message's text, and a request to classify
// one item with its first label.
func echo(_ int, c chatCall) (int, string) {
	last := c.Body.Messages[len(c.Body.Messages)-1].Content
	if strings.Contains(last, "Classify each of the 1 items") {
		return http.StatusOK, completion(`["billing"]`)
	}
	return http.StatusOK, completion("echo:" + last)
}

// contact registers crm.contact, which returns a person's e-mail address.
func contact(t testing.TB, srv *mcpserver.Server) {
	t.Helper()
	if err := srv.Registry().Register(tools.Tool{
		Name:        "crm.contact",
		Summary:     "A contact.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"name":"Alice","email":"alice.smith@example.com"}`), nil
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func providerConfig(cs *chatServer, key string) *engine.ProviderConfig {
	return &engine.ProviderConfig{URL: cs.URL + "/v1", Model: "local-model", APIKeyEnv: "TEST_LLM_KEY",
		Getenv: func(name string) string {
			if name == "TEST_LLM_KEY" {
				return key
			}
			return ""
		}}
}

// TestProviderStatelessProtocol: a request of protocol 2026-07-28 cannot
// be sampled, and a configured provider answers llm.* instead, with the
// prompt filtered as anything the model reads.
func TestProviderStatelessProtocol(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, echo)
	srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: providerConfig(cs, "sk-test-0123456789")}})
	contact(t, srv)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL + mcpserver.PathStreamable)
	if err != nil {
		t.Fatal(err)
	}
	c = start(t, c)
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
	}
	res, rec := execute(t, c, map[string]any{"code": `
		const who = await crm.contact({});
		const a = await llm.call({prompt: "Write to " + who.email, system: "Be brief."});
		const b = await llm.classify(["refund"], ["billing", "bug"]);
		return {a, labels: b.labels, via: b.via};`})
	if rec == nil || rec.Error != nil {
		t.Fatalf("run failed: %s", text(res))
	}
	var out struct {
		A struct {
			Text, Model, StopReason, Via string
		}
		Labels []string
		Via    string
	}
	if err := json.Unmarshal(rec.Result, &out); err != nil {
		t.Fatal(err)
	}
	if out.A.Via != "provider" || out.A.Model != "local-model-served" || out.A.StopReason != "endTurn" || out.Via != "provider" {
		t.Errorf("result %s, want answers via the provider", rec.Result)
	}
	cs.mu.Lock()
	first := cs.requests[0]
	cs.mu.Unlock()
	if first.Auth != "Bearer sk-test-0123456789" || first.Body.Model != "local-model" || first.Body.MaxTokens != 1024 {
		t.Errorf("provider asked with auth %q, model %q, max_tokens %d", first.Auth, first.Body.Model, first.Body.MaxTokens)
	}
	if len(first.Body.Messages) != 2 || first.Body.Messages[0].Role != "system" || first.Body.Messages[0].Content != "Be brief." {
		t.Fatalf("messages %+v, want the system prompt then the user's", first.Body.Messages)
	}
	prompt := first.Body.Messages[1].Content
	if strings.Contains(prompt, "alice.smith@example.com") || !strings.Contains(prompt, "⟦") {
		t.Errorf("the provider was sent %q: the e-mail address the filter hides, not its token", prompt)
	}
	// The model's echo of the token stays a token for the program too.
	if strings.Contains(string(rec.Result), "alice.smith@example.com") {
		t.Errorf("result shows the address: %s", rec.Result)
	}
}

// TestProviderOrSampling: with a provider and a client that can sample,
// prefer decides; a client without sampling gets the provider. (Over
// Streamable HTTP: mcp-go's stdio servers share one session per process,
// so parallel stdio servers in one test binary would take each other's
// sampling requests.)
func TestProviderOrSampling(t *testing.T) {
	for _, tc := range []struct {
		name, prefer string
		sampling     bool
		want         string
	}{
		{"prefer client, client samples", engine.PreferClient, true, "sampling"},
		{"prefer provider, client samples", engine.PreferProvider, true, "provider"},
		{"client without sampling", engine.PreferClient, false, "provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := newChatServer(t, echo)
			cfg := providerConfig(cs, "")
			srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: cfg, Prefer: tc.prefer}})
			var sampled atomic.Int32
			var opts []client.ClientOption
			if tc.sampling {
				opts = append(opts, client.WithSamplingHandler(host{sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return answer("client:" + lastText(req)), nil
				}}))
			}
			c := startLegacy(t, runtimeTransports[0].connect(t, srv, opts...))
			res, rec := execute(t, c, map[string]any{"code": `return await llm.call("hi")`})
			if rec == nil || rec.Error != nil {
				t.Fatalf("run failed: %s", text(res))
			}
			var out struct{ Text, Via string }
			json.Unmarshal(rec.Result, &out)
			if out.Via != tc.want {
				t.Fatalf("answered via %q (%s), want %s", out.Via, rec.Result, tc.want)
			}
			if wantSampled := tc.want == "sampling"; (sampled.Load() == 1) != wantSampled || (cs.calls.Load() == 1) == wantSampled {
				t.Errorf("client sampled %d times, provider asked %d times", sampled.Load(), cs.calls.Load())
			}
			if tc.want == "provider" && cs.last().Auth != "" {
				t.Errorf("sent Authorization %q with no key set", cs.last().Auth)
			}
		})
	}
}

// TestProviderFailures: what a program learns when the provider fails,
// without the key in any message; retries of what may pass.
func TestProviderFailures(t *testing.T) {
	const key = "sk-live-secret-key-4242"
	for _, tc := range []struct {
		name     string
		key      string
		reply    reply
		code     string   // the error's code; "" for success
		mentions []string // in the error message
		calls    int32
	}{
		{"key refused", key, func(int, chatCall) (int, string) {
			return http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: ` + key + `"}}`
		}, tools.CodeToolFailed, []string{"HTTP 401", "Incorrect API key provided", "$TEST_LLM_KEY was refused"}, 1},
		{"key not set", "", func(int, chatCall) (int, string) {
			return http.StatusUnauthorized, `{"error":"missing key"}`
		}, tools.CodeToolFailed, []string{"HTTP 401", "$TEST_LLM_KEY is not set"}, 1},
		{"unavailable then answers", key, func(n int, c chatCall) (int, string) {
			if n == 1 {
				return http.StatusServiceUnavailable, `{"error":{"message":"loading model"}}`
			}
			return echo(n, c)
		}, "", nil, 2},
		{"not a completion", key, func(int, chatCall) (int, string) { return http.StatusOK, `{"choices":[]}` },
			tools.CodeToolFailed, []string{"no choices"}, 1},
		{"bad request is not retried", key, func(int, chatCall) (int, string) {
			return http.StatusBadRequest, `{"error":{"message":"model 'local-model' not found"}}`
		}, tools.CodeToolFailed, []string{"HTTP 400", "model 'local-model' not found"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := newChatServer(t, tc.reply)
			srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: providerConfig(cs, tc.key)}})
			c := startLegacy(t, runtimeTransports[0].connect(t, srv))
			res, rec := execute(t, c, map[string]any{"code": `return await llm.call("hi")`})
			if rec == nil {
				t.Fatalf("no record: %s", text(res))
			}
			if n := cs.calls.Load(); n != tc.calls {
				t.Errorf("provider asked %d times, want %d", n, tc.calls)
			}
			if strings.Contains(text(res), key) {
				t.Errorf("the key is in what the client got:\n%s", text(res))
			}
			if tc.code == "" {
				if rec.Error != nil {
					t.Fatalf("error %+v, want an answer", rec.Error)
				}
				return
			}
			if rec.Error == nil || rec.Error.Code != tc.code {
				t.Fatalf("error %+v, want %s", rec.Error, tc.code)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(rec.Error.Message, m) {
					t.Errorf("error %q does not say %q", rec.Error.Message, m)
				}
			}
		})
	}
}

// TestProviderBudgets: a provider's calls are charged to the same
// budgets as sampling, with the provider's own token count.
func TestProviderBudgets(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, echo)
	srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: providerConfig(cs, ""), MaxCallsPerRun: 2}})
	c := startLegacy(t, runtimeTransports[0].connect(t, srv))
	_, rec := execute(t, c, map[string]any{"code": `await llm.call("a"); await llm.call("b"); return await llm.call("c")`})
	if rec == nil || rec.Error == nil || rec.Error.Code != engine.CodeQuotaExceeded {
		t.Fatalf("record %+v, want quota_exceeded at the third call", rec)
	}
	if n := cs.calls.Load(); n != 2 {
		t.Errorf("provider asked %d times, want 2", n)
	}
}

// TestNoModelSaysBothWays: without sampling and without a provider, the
// error names both ways to get a model.
func TestNoModelSaysBothWays(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	c := startLegacy(t, runtimeTransports[0].connect(t, srv))
	_, rec := execute(t, c, map[string]any{"code": `return await llm.call("hi")`})
	if rec == nil || rec.Error == nil || rec.Error.Code != engine.CodeCapabilityMissing ||
		!strings.Contains(rec.Error.Message, "enable sampling") || !strings.Contains(rec.Error.Message, "[llm] provider") {
		t.Fatalf("record %+v, want capability_missing naming sampling and [llm] provider", rec)
	}
}

// TestAskFromAHandler: a tool's handler asks a model with engine.Ask, as
// a call of llm.call through the gate of the program's call: the prompt
// is filtered and the call counts against the run's llm budget.
func TestAskFromAHandler(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, echo)
	srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{Provider: providerConfig(cs, ""), MaxCallsPerRun: 1}})
	if err := srv.Registry().Register(tools.Tool{
		Name:        "notes.expand",
		Summary:     "Expand a query with a model.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: tools.Handle(func(ctx context.Context, in struct {
			Q string `json:"q"`
		}) (engine.Answer, error) {
			return engine.Ask(ctx, engine.Question{System: "Expand.", Prompt: in.Q})
		}),
	}); err != nil {
		t.Fatal(err)
	}
	contact(t, srv)
	c := startLegacy(t, runtimeTransports[0].connect(t, srv))
	_, rec := execute(t, c, map[string]any{"code": `
		const who = await crm.contact({});
		return await notes.expand({q: "mail " + who.email});`})
	if rec == nil || rec.Status != "ok" {
		t.Fatalf("record %+v, want ok", rec)
	}
	var ans engine.Answer
	if err := json.Unmarshal(rec.Result, &ans); err != nil || ans.Via != "provider" || ans.Model == "" {
		t.Fatalf("result %s (%v), want the provider's answer", rec.Result, err)
	}
	if last := cs.last().Body.Messages; len(last) != 2 || last[0].Content != "Expand." || strings.Contains(last[1].Content, "alice.smith@example.com") || !strings.Contains(last[1].Content, "⟦") {
		t.Errorf("provider was sent %+v, want the system prompt and the question with the address filtered", last)
	}
	if n := cs.calls.Load(); n != 1 {
		t.Errorf("provider asked %d times, want 1", n)
	}
	// The question counts against the run's llm budget: a second one is
	// refused.
	_, rec = execute(t, c, map[string]any{"code": `await notes.expand({q: "a"}); return await notes.expand({q: "b"})`})
	if rec == nil || rec.Error == nil || rec.Error.Code != engine.CodeQuotaExceeded {
		t.Fatalf("record %+v, want quota_exceeded at the second question", rec)
	}
}

// TestHelperThroughTheRegistryInDirectMode: a tool's handler that calls
// llm.call through the registry, as memory.recall's expand does, reaches
// the model through the gate of its own call when the tool is called in
// direct mode too (a run of one call), with the prompt filtered.
func TestHelperThroughTheRegistryInDirectMode(t *testing.T) {
	t.Parallel()
	cs := newChatServer(t, echo)
	srv := newServer(t, mcpserver.Config{Expose: mcpserver.ExposeBoth, LLM: engine.LLMConfig{Provider: providerConfig(cs, "")}})
	reg := srv.Registry()
	if err := reg.Register(tools.Tool{
		Name:        "notes.expand",
		Summary:     "Expand a query with a model.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ Q string }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			q, _ := json.Marshal(map[string]string{"prompt": in.Q})
			return reg.Call(ctx, "llm.call", q)
		},
	}); err != nil {
		t.Fatal(err)
	}
	c := startLegacy(t, runtimeTransports[0].connect(t, srv))
	req := mcp.CallToolRequest{}
	req.Params.Name = "notes__expand"
	req.Params.Arguments = map[string]any{"q": "mail alice.smith@example.com"}
	res, err := c.CallTool(t.Context(), req)
	if err != nil || res.IsError {
		t.Fatalf("direct call: %v %s", err, text(res))
	}
	if !strings.Contains(text(res), `"via":"provider"`) {
		t.Errorf("direct call answered %s, want the provider's answer", text(res))
	}
	if got := cs.last().Body.Messages; len(got) != 1 || strings.Contains(got[0].Content, "alice.smith@example.com") {
		t.Errorf("provider was sent %+v, want the question with the address filtered", got)
	}
}
