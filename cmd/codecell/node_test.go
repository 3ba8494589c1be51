package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sdkDir holds the official MCP clients, installed by `make node-deps`.
var sdkDir = filepath.Join("..", "..", "testdata", "sdk")

// node returns the Node.js that `make node-deps` installed (the npm
// package node, version 22, which the conformance suite needs). Without
// it the test is skipped, unless CODECELL_REQUIRE_NODE is set, as `make
// test` does, so CI cannot skip it by accident.
func node(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(sdkDir, "node_modules", ".bin", "node"))
	if err == nil {
		if _, err = os.Stat(bin); err == nil {
			return bin
		}
	}
	if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
		t.Fatalf("the MCP TypeScript SDK and conformance suite are not installed (%v); run make node-deps", err)
	}
	t.Skip("run make node-deps to test with the official TypeScript SDK and conformance suite")
	return ""
}

func runNode(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node(t), args...)
	cmd.Dir = sdkDir
	cmd.Env = append(os.Environ(), dataDir(t)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestTypeScriptSDK drives codecell with the official TypeScript SDK client
// over stdio, SSE and Streamable HTTP: initialize, list, read a resource,
// get the prompt, execute_code, progress and cancellation (testdata/sdk/client.mjs).
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node(t)
	_, base, _ := startHTTP(t, "-pool", "2", "-queue-wait", "5s")
	for _, tr := range []struct{ name, kind, target string }{
		{"stdio", "stdio", binary},
		{"sse", "sse", base + "/sse"},
		{"streamable-http", "http", base + "/mcp"},
	} {
		t.Run(tr.name, func(t *testing.T) {
			args := []string{"client.mjs", tr.kind, tr.target}
			if tr.kind == "stdio" {
				args = append(args, "serve", "-pool", "2", "-queue-wait", "5s")
			}
			out, err := runNode(t, 2*time.Minute, args...)
			if err != nil {
				t.Fatalf("TypeScript SDK client: %v\n%s", err, out)
			}
			for _, check := range []string{"initialize", "tools/list", "resources/read", "execute_code", "progress", "cancellation"} {
				if !strings.Contains(out, `"check":"`+check+`","ok":true`) {
					t.Errorf("check %s did not pass:\n%s", check, out)
				}
			}
		})
	}
}

// TestTypeScriptSDKDirectMode lists every catalogue tool through the
// TypeScript SDK, which validates their schemas, and calls one whose
// result the filter changes (an e-mail address becomes a token): what
// codecell advertises must still accept what it sends
// (testdata/sdk/direct.mjs).
func TestTypeScriptSDKDirectMode(t *testing.T) {
	t.Parallel()
	node(t)
	// Pages of ten tools: the SDK's client follows nextCursor.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[server]\nlist_page_size = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runNode(t, 2*time.Minute, "direct.mjs", binary, "serve", "--config", cfg, "--expose", "both", "--catalog", filepath.Join("..", "catalog"))
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("direct mode through the TypeScript SDK: %v\n%s", err, out)
	}
	var res struct{ Tools, Pages int }
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "{"):]), &res); err != nil || res.Pages < 2 || res.Tools <= 10 {
		t.Errorf("tools/list through the TypeScript SDK in pages of ten: %+v %v\n%s", res, err, out)
	}
}

// TestConformance runs the official MCP conformance suite against the
// binary over Streamable HTTP. Scenarios that need the suite's own
// fixtures are listed, with the reason, in testdata/sdk/conformance-baseline.yml;
// every other one must pass, and a listed one that starts to pass fails
// the run.
func TestConformance(t *testing.T) {
	t.Parallel()
	node(t)
	_, base, _ := startHTTP(t)
	out, err := runNode(t, 5*time.Minute,
		filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", base+"/mcp", "--expected-failures", "conformance-baseline.yml", "-o", t.TempDir())
	summary := out
	if i := strings.Index(out, "=== SUMMARY ==="); i >= 0 {
		summary = out[i:]
	}
	t.Log("\n" + summary)
	if err != nil {
		t.Fatalf("conformance suite: %v", err)
	}
}
