package security

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// This file holds the helpers of the surface_*_test.go attacks: a hostile
// MCP server (testdata/upstreams/hostile.mjs) bridged by the binary.

// hostile starts codecell bridging the hostile server, with env for it
// (TOOLS=5000, WIDE=1, DEEP=1), and waits until its tools are listed.
func hostile(t *testing.T, env map[string]string) *server {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "upstreams"))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			t.Fatalf("the MCP SDK is not installed in testdata/upstreams (%v); run make node-deps", err)
		}
		t.Skip("run make node-deps to bridge the hostile MCP server")
	}
	host := map[string]any{"mcpServers": map[string]any{
		"hostile": map[string]any{"command": node, "args": []string{filepath.Join(dir, "hostile.mjs")}, "env": env},
	}}
	b, _ := json.Marshal(host)
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--mcp-config", path)
	alice := s.open(t, aliceToken)
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(alice.tool("read_tools", map[string]any{"path": "/manifest.json"}), `"hostile":"`) ||
		strings.Contains(alice.tool("read_tools", map[string]any{"path": "/manifest.json"}), `"hostile":"0 tools`) {
		if time.Now().After(deadline) {
			t.Fatalf("the hostile server's tools were not listed:\n%s", s.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// tool calls one of codecell's MCP tools and returns the text the model
// reads.
// (Unlike rpc, it reads a JSON answer as JSON whatever its text holds:
// a catalogue's text may well say "data:".)
func (ss *session) tool(name string, args map[string]any) string {
	ss.t.Helper()
	ss.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ss.next, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	code, h, out := do(ss.t, "POST", ss.url, ss.header(), string(body))
	if code != 200 {
		ss.t.Fatalf("%s: HTTP %d %s", name, code, out)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		out = lastMessage(out)
	}
	var r struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		ss.t.Fatalf("%s: %v: %.300s", name, err, out)
	}
	var b strings.Builder
	for _, c := range r.Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// instructions initializes a session and returns the instructions the
// model is given.
func (s *server) instructions(t *testing.T, token string) string {
	t.Helper()
	_, _, body := do(t, "POST", s.base+"/mcp", map[string]string{"Authorization": "Bearer " + token},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"reader","version":"1"}}}`)
	var r struct {
		Result struct {
			Instructions string `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lastMessage(body)), &r); err != nil {
		t.Fatalf("initialize: %v: %s", err, body)
	}
	return r.Result.Instructions
}

// fmtSscan reads the number at the start of s.
func fmtSscan(s string, n *int) (int, error) { return fmt.Sscan(s, n) }
