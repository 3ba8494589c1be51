package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hugeLister is an upstream MCP server over Streamable HTTP (JSON
// answers) whose tools/list never ends: every page is 1,000 tools with a
// 15 KB description in each input schema (14.4 MB, under the default
// max_response_bytes) and a next cursor.
type hugeLister struct {
	page     []byte // a page's tools, %s standing for the page's number
	listings atomic.Int32
	deepest  atomic.Int32 // the most pages one listing was given
}

func newHugeLister() *hugeLister {
	var b bytes.Buffer
	desc := strings.Repeat("lorem ipsum ", 1250)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%%s_%d","description":"a tool","inputSchema":{"type":"object","description":%q,"properties":{"x":{"type":"string"}}}}`, i, desc)
	}
	return &hugeLister{page: b.Bytes()}
}

func (h *hugeLister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "s1")
	switch msg.Method {
	case "initialize":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"huge","version":"1"}}}`, msg.ID)
	case "tools/list":
		n, _ := strconv.Atoi(msg.Params.Cursor)
		if n == 0 {
			h.listings.Add(1)
		}
		for d := h.deepest.Load(); int32(n+1) > d; d = h.deepest.Load() {
			if h.deepest.CompareAndSwap(d, int32(n+1)) {
				break
			}
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[`, msg.ID)
		w.Write(bytes.ReplaceAll(h.page, []byte("%s"), []byte(strconv.Itoa(n))))
		fmt.Fprintf(w, `],"nextCursor":"%d"}}`, n+1)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
	}
}

// TestUpstreamToolListIsBounded (issue 19, attack9 D4): an upstream's
// tools/list was bounded page by page (max_response_bytes) and in pages
// (100), not as a whole: a server answering 100 pages of 14.4 MB grew
// codecell's memory by 959 MiB, at start and at every retry. A list
// stops now at max_list_bytes (16 MiB), all its pages together: the
// upstream is unavailable with a reason that names it and the bound,
// each attempt reads at most two such pages, and another upstream is
// served.
func TestUpstreamToolListIsBounded(t *testing.T) {
	t.Parallel()
	h := newHugeLister()
	huge := httptest.NewServer(h)
	t.Cleanup(huge.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[upstream.huge]\nurl = %q\n[upstream.web]\nurl = %q\n", huge.URL+"/mcp", bigWeb(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	alice := s.open(t, aliceToken)
	const want = `upstream "huge": its tools/list passed max_list_bytes (16.0 MiB) within its first 2 pages`
	// Until the upstream has been tried three times: retries are bounded
	// as the first attempt is.
	var seen string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		seen = strings.ReplaceAll(string(alice.rpc("tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": "/huge/index.json"}})), `\`, "")
		if strings.Contains(seen, want) && h.listings.Load() >= 3 || h.deepest.Load() > 2 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(seen, want) || h.listings.Load() < 3 {
		t.Errorf("after %d listings, the upstream's index does not say %s:\n%.2000s", h.listings.Load(), want, seen)
	}
	if !strings.Contains(seen, "unavailable") {
		t.Errorf("the upstream is not shown unavailable:\n%.2000s", seen)
	}
	if n := h.deepest.Load(); n > 2 {
		t.Errorf("one listing read %d pages of 14.4 MB; max_list_bytes (16 MiB) holds two", n)
	}
	if peak := peakRSS(s.cmd.Process.Pid); peak >= 0 {
		t.Logf("codecell's peak memory after %d listings: %.0f MiB", h.listings.Load(), float64(peak)/(1<<20))
		// Before, one listing held up to 100 pages: 959 MiB more.
		if peak > 384<<20 {
			t.Errorf("codecell's peak memory is %.0f MiB", float64(peak)/(1<<20))
		}
	}
	if rec := alice.run(`await web.echo({text: "b"})`, "timeout_ms", 30000); string(rec.Result) != `"b"` {
		t.Errorf("another upstream: %.600s", rec.raw)
	}
}
