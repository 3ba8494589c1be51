package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// sampler is a client's model: a function of the last message.
type sampler func(prompt string) string

func (s sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt := ""
	if n := len(req.Messages); n > 0 {
		if tc, ok := req.Messages[n-1].Content.(mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(s(prompt))},
		Model:           "table",
		StopReason:      "endTurn",
	}, nil
}

// embeddingServer is an OpenAI-compatible embeddings endpoint whose
// vectors put "zorble" and "quux" on one coordinate (a made-up word and
// its made-up other name) and hash every other word; it counts requests.
func embeddingServer(t *testing.T, requests *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float32, 64)
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
				if w == "zorble" || w == "quux" {
					v[0] += 4
					continue
				}
				h := fnv.New32a()
				h.Write([]byte(w))
				v[1+int(h.Sum32()%63)]++
			}
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRecallExpandAndToolEmbeddings drives the built binary with
// mcp-go's client over stdio, on protocol 2025-11-25 with sampling
// declared: a program's memory.recall({expand: true}) asks the client's
// model (a fixed answer here) and finds, by its terms, a memory worded
// unlike the question; and with memory.embedder pointing at an
// OpenAI-compatible endpoint (a test server), search_tools finds a tool
// by its embedding where no word of the query is in it.
func TestRecallExpandAndToolEmbeddings(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	emb := embeddingServer(t, &requests)
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog")
	if err := os.MkdirAll(catalog, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(catalog, "lab.json"), []byte(`{"category": "lab", "description": "Laboratory things.", "tools": [
		{"name": "make_zorble", "summary": "Make a zorble from parts.", "description": "Makes one zorble from the parts in stock.", "inputSchema": {"type": "object"}},
		{"name": "list_parts", "summary": "List the parts in stock.", "description": "Lists every part in stock with its count.", "inputSchema": {"type": "object"}}
	]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "codecell.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
[server]
catalog = %q

[memory]
embedder = "openai"
embedder_url = %q
embedder_model = "concepts"
embedder_dimensions = 64
`, catalog, emb.URL+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	model := sampler(func(prompt string) string {
		asked.Add(1)
		if strings.Contains(prompt, "how do visitors get online here") {
			return `["wifi", "wireless network", "guest network", "password", "internet"]`
		}
		return `[]`
	})
	tr := transport.NewStdio(binary, dataDir(t), "serve", "--config", cfg)
	c := client.NewClient(tr, client.WithSamplingHandler(model))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		stderr := ""
		if r, ok := client.GetStderr(c); ok {
			b := make([]byte, 4096)
			n, _ := r.Read(b)
			stderr = string(b[:n])
		}
		t.Fatalf("initialize: %v\n%s", err, stderr)
	}

	if _, rec, text := callExecute(t, c, map[string]any{"code": `
for (const content of ["The wifi password for the guest network is tulip-4471", "Visitors sign in at reception and wear a badge",
	"The coffee machine on floor 2 is broken", "Payroll runs on the 25th"]) await memory.remember({content});
return 1`}); rec == nil || rec.Error != nil {
		t.Fatalf("remember: %s", text)
	}
	_, rec, text := callExecute(t, c, map[string]any{"code": `return await memory.recall({query: "how do visitors get online here", expand: true, limit: 1})`})
	if rec == nil || rec.Error != nil {
		t.Fatalf("recall: %s", text)
	}
	var got struct {
		Results []struct {
			Content string `json:"content"`
		} `json:"results"`
		Expansion struct {
			Terms []string `json:"terms"`
			Error string   `json:"error"`
		} `json:"expansion"`
	}
	if err := json.Unmarshal(rec.Result, &got); err != nil {
		t.Fatalf("recall: %v\n%s", err, rec.Result)
	}
	if len(got.Results) != 1 || !strings.Contains(got.Results[0].Content, "wifi") || len(got.Expansion.Terms) == 0 || asked.Load() != 1 {
		t.Fatalf("recall with expand = %s (model asked %d times); want the wifi memory first, with the model's terms", rec.Result, asked.Load())
	}

	before := requests.Load()
	a := searchTools(t, c, "build a quux")
	if len(a.Hits) == 0 || a.Hits[0].Name != "lab.make_zorble" {
		t.Errorf("search_tools with embeddings: %+v, want lab.make_zorble first", a)
	}
	if requests.Load() == before {
		t.Errorf("search_tools made no embeddings request")
	}
}
