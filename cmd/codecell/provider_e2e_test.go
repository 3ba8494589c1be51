package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// fakeProvider is a local OpenAI-compatible chat completions server: it
// answers "provider:" and the last message, and records the requests'
// Authorization headers and last messages.
type fakeProvider struct {
	*httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	auth  []string
	asked []string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	p := &fakeProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		p.calls.Add(1)
		last := req.Messages[len(req.Messages)-1].Content
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.asked = append(p.asked, last)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"model":   req.Model,
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "provider:" + last}, "finish_reason": "stop"}},
		})
	}))
	t.Cleanup(p.Close)
	return p
}

// providerEnv configures [llm] provider for the binary through variables,
// with the key in CODECELL_LLM_API_KEY as a host's "env" would set it.
func providerEnv(t *testing.T, p *fakeProvider, key string) []string {
	return append(append(os.Environ(), dataDir(t)...),
		"CODECELL_LLM_PROVIDER=openai",
		"CODECELL_LLM_PROVIDER_URL="+p.URL+"/v1",
		"CODECELL_LLM_PROVIDER_MODEL=e2e-model",
		"CODECELL_LLM_API_KEY="+key,
	)
}

// llmVia runs llm.call and returns its answer's text and via.
func llmVia(t *testing.T, c *client.Client) (string, string) {
	t.Helper()
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": `return await llm.call("hello")`})
	if isErr || rec.Error != nil {
		t.Fatalf("llm.call failed: %s", txt)
	}
	var out struct{ Text, Model, Via string }
	if err := json.Unmarshal(rec.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out.Text, out.Via
}

// TestLLMProvider drives llm.* through the built binary configured with a
// provider: over Streamable HTTP on protocol 2026-07-28, which cannot
// sample, and over stdio on 2025-11-25 with and without the client's
// sampling. The key reaches the provider and nothing else.
func TestLLMProvider(t *testing.T) {
	t.Parallel()
	const key = "sk-e2e-provider-key-31337"
	p := newFakeProvider(t)

	t.Run("stateless http", func(t *testing.T) {
		cmd := exec.Command(binary, "serve", "-http", "127.0.0.1:0", "-memory-limit", "16", "-log-level", "debug")
		cmd.Env = providerEnv(t, p, key)
		var logs bytes.Buffer
		var logMu sync.Mutex
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		found := make(chan string, 1)
		urlRE := regexp.MustCompile(`Streamable HTTP\s+(http://\S+)/mcp`)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				logMu.Lock()
				logs.WriteString(sc.Text() + "\n")
				logMu.Unlock()
				if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case found <- m[1]:
					default:
					}
				}
			}
		}()
		var base string
		select {
		case base = <-found:
		case <-time.After(15 * time.Second):
			t.Fatal("server did not print its address")
		}
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		initialize(t, c)
		if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
			t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
		}
		text, via := llmVia(t, c)
		if via != "provider" || text != "provider:hello" {
			t.Fatalf("answer %q via %q, want the provider's", text, via)
		}
		p.mu.Lock()
		auth := p.auth[len(p.auth)-1]
		p.mu.Unlock()
		if auth != "Bearer "+key {
			t.Errorf("provider got Authorization %q", auth)
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		logMu.Lock()
		defer logMu.Unlock()
		if strings.Contains(logs.String(), key) {
			t.Errorf("the key is in the server's log")
		}
	})

	for _, tc := range []struct {
		name     string
		sampling bool
		want     string
	}{
		{"stdio without sampling", false, "provider"},
		{"stdio with sampling", true, "sampling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []client.ClientOption
			if tc.sampling {
				opts = append(opts, client.WithSamplingHandler(samplerFunc(func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("client")}, Model: "host-model"}, nil
				})))
			}
			tr := transport.NewStdio(binary, providerEnv(t, p, key), "serve", "--stdio", "-memory-limit", "16")
			c := client.NewClient(tr, append(opts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))...)
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
			init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			if _, via := llmVia(t, c); via != tc.want {
				t.Fatalf("answered via %q, want %s", via, tc.want)
			}
		})
	}
}

type samplerFunc func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplerFunc) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}
