package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClient checks what the load's client sends and how it reads each
// form of answer a Streamable HTTP server may give.
func TestClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter, id json.RawMessage)
		wantErr string
		wantTxt string
		isError bool
	}{
		{name: "json", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"2"}],"structuredContent":{"result":2}}}`)
		}, wantTxt: "2"},
		{name: "gzipped json", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			io.WriteString(gz, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 3000)+`"}]}}`)
			gz.Close()
		}, wantTxt: strings.Repeat("x", 3000)},
		{name: "connection closed after each answer", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"2"}]}}`)
		}, wantTxt: "2"},
		{name: "event stream with a notification first", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(id)+",\"result\":{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"busy\"}]}}\n\n")
		}, wantTxt: "busy", isError: true},
		{name: "event stream without the response", answer: func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n")
		}, wantErr: "ended without the response to request"},
		{name: "another request's answer", answer: func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
		}, wantErr: "the answer is to request 7, not"},
		{name: "JSON-RPC error", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32602,"message":"no such tool"}}`)
		}, wantErr: "error -32602: no such tool"},
		{name: "HTTP error", answer: func(w http.ResponseWriter, _ json.RawMessage) {
			http.Error(w, "too many", http.StatusTooManyRequests)
		}, wantErr: "HTTP 429: too many"},
		{name: "truncated body", answer: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[`)
		}, wantErr: "read the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
					Params  struct {
						Meta      map[string]any  `json:"_meta"`
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"params"`
				}
				body, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(body, &req); err != nil {
					t.Errorf("request body %s: %v", body, err)
				}
				if req.JSONRPC != "2.0" || req.Method != "tools/call" || req.Params.Name != "execute_code" || string(req.Params.Arguments) != `{"code":"1+1"}` ||
					req.Params.Meta["io.modelcontextprotocol/protocolVersion"] != protocolVersion {
					t.Errorf("request body %s", body)
				}
				for h, want := range map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "execute_code", "Mcp-Protocol-Version": protocolVersion, "Content-Type": "application/json"} {
					if got := r.Header.Get(h); got != want {
						t.Errorf("header %s: %q, want %q", h, got, want)
					}
				}
				tt.answer(w, req.ID)
			}))
			defer srv.Close()
			c, err := newMCPClient(srv.URL + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			// Twice on one client: the second answer is read from where
			// the first ended, on the same connection or a new one.
			for range 2 {
				res, err := c.callTool(t.Context(), "execute_code", func(b []byte) []byte { return append(b, `{"code":"1+1"}`...) })
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("error %v, want one with %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.text() != tt.wantTxt || res.IsError != tt.isError {
					t.Errorf("result %q (isError %v), want %q (%v)", res.text(), res.IsError, tt.wantTxt, tt.isError)
				}
			}
		})
	}
}
