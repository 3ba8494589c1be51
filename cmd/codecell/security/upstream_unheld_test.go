package security

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 19, attack15 I3 and I4: what an upstream server sends outside a
// call's answer — its notifications, over stdio or on the Streamable HTTP
// GET stream, its answer to initialize — was decoded whole by mcp-go into
// maps of every value, held by nothing, and an upstream tool's schema was
// decoded whole before its bounds were measured. Four notifications of
// 15 MB of {} grew codecell by 700–800 MiB; an initialize answer of them
// was kept for the connection's life (535 MiB); one tool's schema of them
// took 862 MiB. Each is now bounded by what it decodes into before it is
// decoded: refused, saying which limit, with memory near where it was.

// unheldGrowth bounds what the tests below let codecell's peak memory
// grow by: the messages' bytes, read and dropped one at a time, and the
// work around them; the holes took 500–800 MiB.
const unheldGrowth = 150 << 20

// TestUpstreamStdioNotesBounded: a stdio upstream writes, during a call,
// four notifications/message of five million empty objects each (15 MB,
// within max_response_bytes); they are dropped as they are read, the call
// answers, and the next call too.
func TestUpstreamStdioNotesBounded(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "", nil)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	before := peakRSS(e.cmd.Process.Pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	rec := alice.run(`return await evil.notes({n: 5 << 20, times: 4})`, "timeout_ms", 60000)
	if !strings.Contains(string(rec.Result), "sent 4") {
		t.Errorf("a call during which the server sent four notifications of 15 MB: %.600s", rec.raw)
	}
	after := peakRSS(e.cmd.Process.Pid)
	t.Logf("codecell's peak memory: %d MiB → %d MiB", before>>20, after>>20)
	if after-before > unheldGrowth {
		t.Errorf("four notifications of 15 MB of empty objects grew codecell's peak memory by %d MiB", (after-before)>>20)
	}
	if rec := alice.run(`await evil.echo({text: "still"})`); rec.Status != "ok" {
		t.Errorf("the next call: %.600s", rec.raw)
	}
	e.waitLog(t, "dropped a message that decodes into more than max_response_bytes")
}

// hostileWeb is an MCP server over Streamable HTTP with one tool, get.
// Once release is closed, its GET stream sends events notifications of n
// empty objects each; capsN > 0 puts that many in its initialize answer's
// capabilities.experimental, schemaN > 0 in get's inputSchema, under an
// unknown keyword. It answers nothing before release is closed.
func hostileWeb(t *testing.T, release <-chan struct{}, n, events, capsN, schemaN int, sent *atomic.Int64) string {
	t.Helper()
	caps := `{"tools":{"listChanged":true}}`
	if capsN > 0 {
		caps = `{"tools":{"listChanged":true},"experimental":{"x":` + emptyObjects(capsN) + `}}`
	}
	schema := `{"type":"object"}`
	if schemaN > 0 {
		schema = `{"type":"object","x-pad":` + emptyObjects(schemaN) + `}`
	}
	var note string
	if events > 0 {
		note = `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + emptyObjects(n) + "}}\n\n"
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		if r.Method == http.MethodGet {
			if events == 0 {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for range events {
				if _, err := io.WriteString(w, note); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				sent.Add(1)
			}
			<-r.Context().Done()
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &msg)
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		switch msg.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":%s,"serverInfo":{"name":"hostile","version":"1"}}}`, msg.ID, caps)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"get","description":"Get.","inputSchema":%s}]}}`, msg.ID, schema)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, msg.ID)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// startHostile starts codecell with the hostile web server as upstream
// hostile, and returns it with alice's session and codecell's peak
// memory before the server answers anything.
func startHostile(t *testing.T, url string, release chan struct{}) (*server, *session, int64) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.hostile]\nurl = %q\n", url)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	alice := s.open(t, aliceToken)
	alice.run(`return 1`) // the pool warm
	before := peakRSS(s.cmd.Process.Pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	close(release)
	return s, alice, before
}

// callGet calls hostile.get until the source is no longer connecting,
// and returns what the program returned.
func callGet(t *testing.T, alice *session) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		rec := alice.run(`try { return await hostile.get({}) } catch (e) { return "threw: " + String(e.message || e) }`, "timeout_ms", 60000)
		got = string(rec.Result)
		if !strings.Contains(got, "connecting") {
			break
		}
	}
	return got
}

// TestUpstreamGetStreamBounded: a Streamable HTTP upstream's GET stream,
// which codecell opens for list_changed and no call holds, sends four
// notifications of 15 MB of empty objects; they are dropped as they are
// read, and the tool answers.
func TestUpstreamGetStreamBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var sent atomic.Int64
	s, alice, before := startHostile(t, hostileWeb(t, release, 5<<20, 4, 0, 0, &sent), release)
	if got := callGet(t, alice); !strings.Contains(got, "ok") {
		t.Errorf("hostile.get: %.600s", got)
	}
	for deadline := time.Now().Add(60 * time.Second); sent.Load() < 4 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}
	// Each is dropped once it has been read whole.
	const dropped = "dropped a message that decodes into more than max_response_bytes"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.stderr.String(), dropped) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}
	after := peakRSS(s.cmd.Process.Pid)
	t.Logf("%d events sent; codecell's peak memory: %d MiB → %d MiB", sent.Load(), before>>20, after>>20)
	if after-before > unheldGrowth {
		t.Errorf("four events of 15 MB of empty objects on the GET stream grew codecell's peak memory by %d MiB", (after-before)>>20)
	}
	if !strings.Contains(s.stderr.String(), dropped) {
		t.Errorf("codecell did not log %q", dropped)
	}
}

// TestUpstreamInitializeBounded: an upstream's initialize answer holding
// five million empty objects under capabilities.experimental is refused:
// the server is unavailable with a reason that names max_response_bytes,
// and codecell's memory stays near where it was (the answer was decoded
// into maps and kept for the connection's life: 535 MiB).
func TestUpstreamInitializeBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s, alice, before := startHostile(t, hostileWeb(t, release, 0, 0, 5<<20, 0, nil), release)
	got := callGet(t, alice)
	if !strings.Contains(got, "max_response_bytes") || !strings.Contains(got, "initialize") {
		t.Errorf("hostile.get, whose server's initialize answer decodes into 700 MB: %.600s; want the reason, naming max_response_bytes", got)
	}
	t.Logf("hostile.get: %.600s", got)
	after := peakRSS(s.cmd.Process.Pid)
	t.Logf("codecell's peak memory: %d MiB → %d MiB", before>>20, after>>20)
	if after-before > unheldGrowth {
		t.Errorf("an initialize answer of 15 MB of empty objects grew codecell's peak memory by %d MiB", (after-before)>>20)
	}
}

// TestUpstreamSchemaBounded: an upstream tool whose inputSchema holds
// five million empty objects under an unknown keyword is registered
// without it — its documentation says why, naming the bound — and its
// calls reach the server, which checks their arguments; codecell's
// memory stays near where it was (the schema was decoded whole, at each
// connection and again at the first call: 862 MiB).
func TestUpstreamSchemaBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s, alice, before := startHostile(t, hostileWeb(t, release, 0, 0, 0, 5<<20, nil), release)
	if got := callGet(t, alice); !strings.Contains(got, "ok") {
		t.Errorf("hostile.get, whose schema holds five million values: %.600s", got)
	}
	if doc := alice.readTool("/hostile/get.md"); !strings.Contains(doc, "JSON values") {
		t.Errorf("hostile.get's documentation does not say why its schema is not used: %.1500s", doc)
	}
	after := peakRSS(s.cmd.Process.Pid)
	t.Logf("codecell's peak memory: %d MiB → %d MiB", before>>20, after>>20)
	if after-before > unheldGrowth {
		t.Errorf("a tool's schema of 15 MB of empty objects grew codecell's peak memory by %d MiB", (after-before)>>20)
	}
}
