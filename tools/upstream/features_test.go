package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// denseMeta is a JSON object of n empty objects under "v".
func denseMeta(n int) string {
	return `{"v":[` + strings.Repeat("{},", n-1) + `{}]}`
}

// denseFeatures is a hostile upstream MCP server over Streamable HTTP:
// its resources/read and prompts/get answer with one small content or
// message, each with n empty objects under the answer's _meta and the
// content's (attack10 E3). The answers' result texts are in results.
func denseFeatures(t *testing.T, n int) (url string, results map[string]string) {
	t.Helper()
	meta := denseMeta(n)
	results = map[string]string{
		"resources/read": `{"contents":[{"uri":"mem://r","mimeType":"text/plain","text":"ok","_meta":` + meta + `}],"_meta":` + meta + `}`,
		"prompts/get": `{"description":"P.","messages":[{"role":"user","content":{"type":"text","text":"ok","_meta":` + meta + `}},` +
			`{"role":"user","content":{"type":"resource","resource":{"uri":"mem://r","text":"inner","_meta":` + meta + `},"annotations":{"priority":0.5}}}],"_meta":` + meta + `}`,
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(b, &msg) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result, ok := results[msg.Method]
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"dense","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
		case "resources/list":
			result = `{"resources":[{"uri":"mem://r","name":"r"}]}`
		case "prompts/list":
			result = `{"prompts":[{"name":"p"}]}`
		default:
			if !ok {
				result = `{}`
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", results
}

// TestFeatureAnswersHeld (issue 19, attack10 E3): an upstream's answer to
// resources/read and prompts/get is held, through the caller's
// tools.DecodedHolder, as its bytes plus DecodedValueBytes a JSON value
// before it is decoded — after the server's max_response_bytes up front,
// as a tool call's result, and, over HTTP, as it is read; an answer the
// holder refuses fails with the holder's error; and what is kept has none
// of the server's _meta.
func TestFeatureAnswersHeld(t *testing.T) {
	t.Parallel()
	url, results := denseFeatures(t, 100_000)
	const maxResponse = 4 << 20
	e := start(t, map[string]upstream.Server{"dense": {URL: url, MaxResponseBytes: maxResponse}})
	holding := func(limit int64) (context.Context, *[]int64) {
		var held []int64
		return tools.WithDecodedHolder(t.Context(), func(_ context.Context, n int64) error {
			held = append(held, n)
			if n > limit {
				return errRefused
			}
			return nil
		}), &held
	}
	read := func(ctx context.Context) (any, error) { return e.src.ReadResource(ctx, "dense", "mem://r") }
	get := func(ctx context.Context) (any, error) { return e.src.GetPrompt(ctx, "dense", "p", nil) }
	for method, do := range map[string]func(context.Context) (any, error){"resources/read": read, "prompts/get": get} {
		t.Run(method, func(t *testing.T) {
			answer := results[method]
			want := tools.DecodedSize(int64(len(answer)), tools.JSONValues([]byte(answer), 1<<30))
			if want < 200_000*tools.DecodedValueBytes {
				t.Fatalf("the answer counts %d bytes held; want its 200,000 values and more", want)
			}
			ctx, held := holding(1 << 30)
			res, err := do(ctx)
			// Over HTTP the answer is held as it is read, too (holdCopies),
			// between the two.
			if n := len(*held); err != nil || n < 2 || (*held)[0] != maxResponse || (*held)[n-1] != want {
				t.Fatalf("held %v, %v; want %d, then %d last", *held, err, maxResponse, want)
			}
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), "_meta") || !strings.Contains(string(b), `"ok"`) {
				t.Errorf("what is kept of the answer: %.300s", b)
			}
			ctx, held = holding(want - 1)
			if _, err := do(ctx); !errors.Is(err, errRefused) {
				t.Fatalf("an answer the holder refuses: held %v, %v", *held, err)
			}
		})
	}
	p, err := e.src.GetPrompt(t.Context(), "dense", "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The kinds of content a prompt may hold are kept, with their
	// annotations.
	er, ok := p.Messages[1].Content.(mcp.EmbeddedResource)
	if p.Description != "P." || len(p.Messages) != 2 || !ok || er.Annotations == nil || *er.Annotations.Priority != 0.5 {
		t.Fatalf("the prompt: %q, %d messages, the second's content a %T", p.Description, len(p.Messages), p.Messages[len(p.Messages)-1].Content)
	}
	if tr, ok := er.Resource.(mcp.TextResourceContents); !ok || tr.Text != "inner" || tr.URI != "mem://r" || tr.Meta != nil {
		t.Fatalf("the prompt's embedded resource: %q %q, %d keys of _meta", tr.URI, tr.Text, len(tr.Meta))
	}
}
