package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptSDKRuntime drives the programs' runtime with the official
// TypeScript SDK client as the host, over stdio and Streamable HTTP: it
// answers sampling and elicitation, a destructive call waits for its
// approval, and a client without the capabilities gets the clear errors
// (testdata/sdk/runtime.mjs).
func TestTypeScriptSDKRuntime(t *testing.T) {
	t.Parallel()
	node(t)
	conf := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(conf, []byte("[approval]\nrequired_for = [\"destructive\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, err := filepath.Abs(filepath.Join("..", "..", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	serve := []string{"--config", conf, "--catalog", catalog}
	_, base, _ := startHTTP(t, serve...)
	for _, tr := range []struct{ name, kind, target string }{
		{"stdio", "stdio", binary},
		{"streamable-http", "http", base + "/mcp"},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"runtime.mjs", tr.kind, tr.target}
			if tr.kind == "stdio" {
				args = append(append(args, "serve"), serve...)
			}
			out, err := runNode(t, 2*time.Minute, args...)
			if err != nil {
				t.Fatalf("TypeScript SDK host: %v\n%s", err, out)
			}
			for _, check := range []string{
				"sampling: three calls aggregated",
				"approval.request: accept", "approval.request: decline", "approval.request: cancel",
				"policy: a destructive call declined is not made", "policy: a destructive call accepted is made",
				"without capabilities: llm.call", "without capabilities: approval.request", "without capabilities: policy fails closed",
			} {
				if !strings.Contains(out, `"check":"`+check+`","ok":true`) {
					t.Errorf("check %q did not pass:\n%s", check, out)
				}
			}
		})
	}
}
