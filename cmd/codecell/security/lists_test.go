package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manyFeaturesUpstream is an MCP server over Streamable HTTP with n
// prompts and n resources, each described by size bytes; every resource
// has the same name.
func manyFeaturesUpstream(n, size int) http.Handler {
	desc := strings.Repeat("x", size)
	var prompts, resources strings.Builder
	prompts.WriteString(`{"prompts":[`)
	resources.WriteString(`{"resources":[`)
	for i := range n {
		if i > 0 {
			prompts.WriteString(",")
			resources.WriteString(",")
		}
		fmt.Fprintf(&prompts, `{"name":"p%d","description":%q}`, i, desc)
		fmt.Fprintf(&resources, `{"uri":"mem://r%d","name":"same","description":%q}`, i, desc)
	}
	prompts.WriteString(`]}`)
	resources.WriteString(`]}`)
	return upstreamHandler(func(method string, _ json.RawMessage) string {
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"many","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get","description":"Get.","inputSchema":{"type":"object"}}]}`
		case "prompts/list":
			return prompts.String()
		case "resources/list":
			return resources.String()
		case "resources/read":
			return `{"contents":[{"uri":"mem://r9999","text":"the last"}]}`
		}
		return ""
	})
}

// TestBridgedListsArePaged (attack15 L2): a bridged server's 10,000
// prompts of 1.5 KB made every client's prompts/list a 16 MB answer, and
// its resources were listed whole too. Of each bridged server the first
// limits.bridged_listed (256) prompts are served and as many resources
// listed, with a warning naming the setting; the lists come in pages of
// server.list_page_size (200) that a client follows by nextCursor, each
// entry once; a host that does not page gets the first page; a resource
// left out is still read by its URI.
func TestBridgedListsArePaged(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(manyFeaturesUpstream(10_000, 1500))
	t.Cleanup(up.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.many]\nurl = %q\n", up.URL+"/mcp")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config="+cfg)
	alice := s.open(t, aliceToken)
	type page struct {
		Prompts   []struct{ Name string } `json:"prompts"`
		Resources []struct{ URI string }  `json:"resources"`
		Next      string                  `json:"nextCursor"`
	}
	list := func(method, cursor string) (page, int) {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw := alice.rpc(method, params)
		var p page
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return p, len(raw)
	}
	// The server's prompts join once it is connected.
	var first page
	var size int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		first, size = list("prompts/list", "")
		if strings.Contains(fmt.Sprint(first.Prompts), "many__p") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no prompt of the bridged server listed: %v", first.Prompts)
		}
	}
	if size > 1<<20 || len(first.Prompts) != 200 || first.Next == "" {
		t.Errorf("the first page of prompts/list: %d bytes, %d prompts, next %q; want at most 1 MiB, 200 and a cursor", size, len(first.Prompts), first.Next)
	}
	all := func(method string, key func(page) []string) map[string]bool {
		seen := map[string]bool{}
		cursor := ""
		for range 100 {
			p, n := list(method, cursor)
			if n > 1<<20 {
				t.Errorf("a page of %s of %d bytes", method, n)
			}
			for _, k := range key(p) {
				if seen[k] {
					t.Errorf("%s: %s listed twice", method, k)
				}
				seen[k] = true
			}
			if p.Next == "" {
				return seen
			}
			cursor = p.Next
		}
		t.Fatalf("%s: more than 100 pages", method)
		return nil
	}
	count := func(seen map[string]bool, prefix string) int {
		n := 0
		for k := range seen {
			if strings.HasPrefix(k, prefix) {
				n++
			}
		}
		return n
	}
	prompts := all("prompts/list", func(p page) (out []string) {
		for _, e := range p.Prompts {
			out = append(out, e.Name)
		}
		return out
	})
	resources := all("resources/list", func(p page) (out []string) {
		for _, e := range p.Resources {
			out = append(out, e.URI)
		}
		return out
	})
	if n := count(prompts, "many__"); n != 256 {
		t.Errorf("prompts of the bridged server listed: %d, want 256", n)
	}
	if n := count(resources, "codecell://upstream/many/"); n != 256 {
		t.Errorf("resources of the bridged server listed: %d, want 256", n)
	}
	if got := string(alice.rpc("resources/read", map[string]any{"uri": "codecell://upstream/many/mem://r9999"})); !strings.Contains(got, "the last") {
		t.Errorf("a resource left out of the list, read by its URI: %s", got)
	}
	if log := s.stderr.String(); !strings.Contains(log, "limits.bridged_listed") {
		t.Errorf("no warning names limits.bridged_listed:\n%.2000s", log)
	}
}
