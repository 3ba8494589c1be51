package security

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// heavyWeb is an MCP server over Streamable HTTP, answering JSON, whose
// tool dense answers a structuredContent of 15 MB of empty objects (five
// million values), and whose tool text answers 15 MiB of text: each
// message is under the default max_response_bytes (16 MiB).
func heavyWeb(t *testing.T) string {
	t.Helper()
	dense := emptyObjects(5 << 20)
	text := strings.Repeat("a", 15<<20)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &msg)
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case msg.Method == "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"heavy","version":"1"}}}`, msg.ID)
		case msg.Method == "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"dense","inputSchema":{"type":"object"}},{"name":"text","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case msg.Method == "tools/call" && msg.Params.Name == "dense":
			// The id last, as the TypeScript SDK writes it.
			fmt.Fprintf(w, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"v":%s}},"id":%s}`, dense, msg.ID)
		case msg.Method == "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, msg.ID, text)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestUpstreamMessagesHeldAsRead (issue 19, attack9 D7): an HTTP
// upstream's answers were read whole, each under max_response_bytes, and
// copied as they were decoded before anything counted them: a run's eight
// calls to an upstream answering 15 MB of empty objects each grew
// codecell by 470 MiB, though every one then failed result_bytes_limit.
// Each answer is held in its call's results in flight as it is read —
// three times its bytes so far, and 128 a JSON value — and one the call
// cannot hold is dropped as it arrives: the eight fail as they did, and
// codecell's memory stays within a quarter of a gigabyte of where it was.
// Answers that can be held are read a few at a time: eight of 15 MiB of
// text all arrive.
func TestUpstreamMessagesHeldAsRead(t *testing.T) {
	t.Parallel()
	e := startEvil(t, fmt.Sprintf("\n[upstream.heavy]\nurl = %q\n", heavyWeb(t)), nil)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rec := alice.run(`return typeof heavy.text`)
		if string(rec.Result) == `"function"` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heavy never loaded: %.600s", rec.raw)
		}
	}
	before := peakRSS(e.cmd.Process.Pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	rec := alice.run(`const rs = await Promise.allSettled(Array.from({length: 8}, () => heavy.dense({})));
		return rs.map(r => r.status == "rejected" ? r.reason.code + ": " + r.reason.message : "fulfilled")`, "timeout_ms", 60000)
	if got := string(rec.Result); strings.Count(got, "result_bytes_limit") != 8 || !strings.Contains(got, "JSON value") {
		t.Errorf("eight answers of five million values: %.1200s", rec.raw)
	}
	after := peakRSS(e.cmd.Process.Pid)
	t.Logf("codecell's peak memory: %d MiB → %d MiB", before>>20, after>>20)
	if after-before > 256<<20 {
		t.Errorf("a run's eight calls of answers of 15 MB of empty objects grew codecell's peak memory by %d MiB", (after-before)>>20)
	}
	rec = alice.run(`return await Promise.all(Array.from({length: 8}, () => heavy.text({}).then(r => r.length)))`, "timeout_ms", 60000)
	if got, want := string(rec.Result), "["+strings.TrimSuffix(strings.Repeat(fmt.Sprint(15<<20)+",", 8), ",")+"]"; got != want {
		t.Errorf("eight answers of 15 MiB of text: %.600s", rec.raw)
	}
	alice.normal()
}
