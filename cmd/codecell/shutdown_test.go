package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
)

// TestGracefulShutdown sends SIGTERM while 20 programs run: those that
// finish within the grace period return their result, the others end with
// a clear "canceled" error, every one is in the audit log, and the process
// exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cmd := exec.Command(binary, "serve", "-http", "127.0.0.1:0", "-pool", "20", "-shutdown-grace", "3s") // room for twenty sandbox workers to start on a loaded machine
	cmd.Env = append(os.Environ(), "CODECELL_SERVER_DATA_DIR="+data)
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	base := waitForURL(t, pr)

	var wg sync.WaitGroup
	results := make(chan *engine.Record, 20)
	started := make(chan struct{}, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.NewStreamableHttpClient(base + "/mcp")
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			if err := c.Start(context.Background()); err != nil {
				t.Error(err)
				return
			}
			initialize(t, c)
			code := "await util.sleep({ms: 300}); 'finished'"
			if i%2 == 1 {
				code = "while (true) {}"
			}
			started <- struct{}{}
			_, rec, txt := callExecute(t, c, map[string]any{"code": code, "timeout_ms": 30000})
			if rec.Status == "" {
				t.Errorf("no run record: %s", txt)
			}
			results <- rec
		}()
	}
	for range 20 {
		<-started
	}
	// SIGTERM once every request is in the server: running, or answered
	// already (a short program may end before the last client arrives on
	// a loaded machine). A request still on its way would be cut off by
	// the listener's close, which is not what this test is about.
	waitFor(t, 20*time.Second, func() bool {
		inUse := metric(t, base, "codecell_pool_in_use")
		return inUse >= 10 && int(inUse)+len(results) >= 20
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	var finished, cancelled int
	for rec := range results {
		switch {
		case rec.Status == executor.StatusOK && string(rec.Result) == `"finished"`:
			finished++
		case rec.Error != nil && rec.Error.Kind == executor.KindCanceled && strings.Contains(rec.Error.Message, "shutting down"):
			cancelled++
		default:
			t.Errorf("unexpected outcome %+v %v", rec, rec.Error)
		}
	}
	if finished != 10 || cancelled != 10 {
		t.Errorf("%d finished, %d cancelled; want 10 and 10", finished, cancelled)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit")
	}

	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(data, "codecell.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	execs, err := st.ListExecutions(t.Context(), memory.ExecutionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 20 {
		t.Fatalf("%d executions in the audit log, want 20", len(execs))
	}
	kinds := map[string]int{}
	for _, e := range execs {
		kinds[e.Status+"/"+e.ErrorKind]++
	}
	if kinds["ok/"] != 10 || kinds["error/canceled"] != 10 {
		t.Errorf("audit outcomes %v", kinds)
	}
}

// metric reads one gauge from the server's /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForURL reads the server's stderr until it prints its address, and
// drains it afterwards.
func waitForURL(t *testing.T, r *os.File) string {
	t.Helper()
	urlRE := regexp.MustCompile(`Streamable HTTP\s+(http://\S+)/mcp`)
	found := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var acc []byte
		for {
			n, err := r.Read(buf)
			if len(acc) < 1<<16 {
				acc = append(acc, buf[:n]...)
			}
			if m := urlRE.FindSubmatch(acc); m != nil {
				select {
				case found <- string(m[1]):
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(15 * time.Second):
		t.Fatal("server did not print its address")
	}
	return ""
}
