package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// denseFeatureServer is attack10 E3's upstream MCP server (Streamable
// HTTP, JSON answers): the resources mem://dense and mem://small and the
// prompts dense and small answer one small content or message and, under
// the answer's _meta, 15 MB of empty objects (five million values, under
// max_response_bytes) or a marker.
func denseFeatureServer(t *testing.T) string {
	t.Helper()
	dense := `{"v":` + emptyObjects(5<<20) + `}`
	small := `{"upstream.example/marker":"meta-of-the-upstream"}`
	ts := httptest.NewServer(upstreamHandler(func(method string, params json.RawMessage) string {
		var p struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		}
		json.Unmarshal(params, &p)
		meta := small
		if p.URI == "mem://dense" || p.Name == "dense" {
			meta = dense
		}
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"dense","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
		case "resources/list":
			return `{"resources":[{"uri":"mem://dense","name":"dense"},{"uri":"mem://small","name":"small"}]}`
		case "prompts/list":
			return `{"prompts":[{"name":"dense"},{"name":"small"}]}`
		case "resources/read":
			return fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/plain","text":"ok"}],"_meta":%s}`, p.URI, meta)
		case "prompts/get":
			return `{"messages":[{"role":"user","content":{"type":"text","text":"ok"}}],"_meta":` + meta + `}`
		}
		return ""
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestUpstreamFeatureValuesHeld (issue 19, attack10 E3, high): an
// upstream's resources/read and prompts/get answers were decoded whole
// into maps by mcp-go, nothing counted: bob's 12 reads at once of a
// resource answering 15 MB of {} under _meta took the server from 542 to
// 5,646 MiB, and a prompt's 15 MB _meta reached him unfiltered. Each is
// now held as its bytes plus 128 a JSON value of the results in flight
// before it is decoded: all 12 are refused, naming the limit; a small
// resource and prompt are read without the upstream's _meta; and the
// server still serves.
func TestUpstreamFeatureValuesHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.dense]\nurl = %q\n", denseFeatureServer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	bob := s.open(t, bobToken)
	ask := func(method string, params any) string {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		code, _, out := do(t, http.MethodPost, bob.url, bob.header(), string(body))
		return fmt.Sprintf("%d %s", code, lastMessage(out))
	}
	small := map[string]any{"resources/read": map[string]any{"uri": "codecell://upstream/dense/mem://small"}, "prompts/get": map[string]any{"name": "dense__small"}}
	dense := map[string]any{"resources/read": map[string]any{"uri": "codecell://upstream/dense/mem://dense"}, "prompts/get": map[string]any{"name": "dense__dense"}}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if got := ask("prompts/get", small["prompts/get"]); strings.Contains(got, `"ok"`) || time.Now().After(deadline) {
			break
		}
	}
	pid := s.cmd.Process.Pid
	for _, method := range []string{"resources/read", "prompts/get"} {
		got := ask(method, small[method])
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"text":"ok"`) || strings.Contains(got, "meta-of-the-upstream") {
			t.Errorf("a small %s: %.600s", method, got)
		}
		before := peakRSS(pid)
		var wg sync.WaitGroup
		answers := make([]string, 12)
		for i := range answers {
			wg.Go(func() { answers[i] = ask(method, dense[method]) })
		}
		wg.Wait()
		for _, got := range answers {
			if !strings.Contains(got, `"error"`) || !strings.Contains(got, "JSON value") || !strings.Contains(got, "limits.result_bytes_in_flight") {
				t.Errorf("one of 12 %s of 15 MB of empty objects: %.600s", method, got)
				break
			}
		}
		if after := peakRSS(pid); before > 0 {
			t.Logf("12 %s at once: peak RSS %d → %d MiB", method, before>>20, after>>20)
		}
	}
	bob.normal()
}
