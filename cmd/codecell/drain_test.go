package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/executor"
)

// TestDrainOnSIGTERM: a rolling restart. On SIGTERM the server first
// drains for cluster.drain_delay — /readyz answers 503 so that a balancer
// stops routing to it, a new session is refused with 503 — while a run in
// flight goes on; the run finishes within server.shutdown_grace and the
// process exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "serve", "-http", "127.0.0.1:0", "-shutdown-grace", "20s")
	cmd.Env = append(append(os.Environ(), dataDir(t)...), "CODECELL_CLUSTER_DRAIN_DELAY=3s")
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	base := waitForURL(t, pr)

	readyz := func() (int, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, 30*time.Second, func() bool { code, _ := readyz(); return code == 200 })

	c, err := client.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	done := make(chan string, 1)
	go func() {
		isErr, rec, txt := callExecute(t, c, map[string]any{"code": "await util.sleep({ms: 4000}); 'finished'", "timeout_ms": 30000})
		if isErr || rec.Status != executor.StatusOK {
			done <- txt
			return
		}
		done <- string(rec.Result)
	}()
	waitFor(t, 20*time.Second, func() bool { return metric(t, base, "codecell_pool_in_use") >= 1 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	waitFor(t, 3*time.Second, func() bool { code, _ := readyz(); return code == 503 })
	if code, body := readyz(); code == 503 && !strings.Contains(body, "draining") {
		t.Errorf("readyz while draining: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a new session while draining: %d, want 503 with Retry-After", resp.StatusCode)
		}
	} else {
		t.Errorf("a new session while draining: %v, want 503 (the listener stays open during the drain delay)", err)
	}

	if got := <-done; got != `"finished"` {
		t.Errorf("the run in flight: %s", got)
	}
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	select {
	case err := <-exit:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not exit")
	}
}
