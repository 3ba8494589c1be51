package upstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/tools/upstream"
)

// endlessLister is an MCP server over Streamable HTTP (JSON answers)
// whose list method never ends: every page holds entries of about
// entryBytes, pageBytes in all, and a next cursor. Its other lists are
// empty; it offers tools, prompts and resources.
type endlessLister struct {
	method, field string
	last          int          // with last > 0, the list ends at that page
	page          []byte       // the entries of a page, %s standing for its number
	pages         atomic.Int32 // pages served
	deepest       atomic.Int32 // the most pages served to one listing
}

func newEndlessLister(t *testing.T, method string, pageBytes, entryBytes int) (*endlessLister, string) {
	t.Helper()
	l := &endlessLister{method: method}
	pad := strings.Repeat("x", entryBytes)
	var entry string
	switch method {
	case "tools/list":
		l.field, entry = "tools", `{"name":"t%%s_%d","inputSchema":{"type":"object","description":"`+pad+`"}}`
	case "prompts/list":
		l.field, entry = "prompts", `{"name":"p%%s_%d","description":"`+pad+`"}`
	case "resources/list":
		l.field, entry = "resources", `{"uri":"file:///r%%s_%d","name":"r","description":"`+pad+`"}`
	case "resources/templates/list":
		l.field, entry = "resourceTemplates", `{"uriTemplate":"file:///r%%s_%d/{x}","name":"r","description":"`+pad+`"}`
	}
	var b bytes.Buffer
	for i := 0; b.Len() < pageBytes; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, entry, i)
	}
	l.page = b.Bytes()
	ts := httptest.NewServer(l)
	t.Cleanup(ts.Close)
	return l, ts.URL + "/mcp"
}

func (l *endlessLister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"endless","version":"1"}}}`, msg.ID)
	case l.method:
		n, _ := strconv.Atoi(msg.Params.Cursor)
		l.pages.Add(1)
		for d := l.deepest.Load(); int32(n+1) > d; d = l.deepest.Load() {
			if l.deepest.CompareAndSwap(d, int32(n+1)) {
				break
			}
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"%s":[`, msg.ID, l.field)
		w.Write(bytes.ReplaceAll(l.page, []byte("%s"), []byte(strconv.Itoa(n))))
		if l.last > 0 && n+1 >= l.last {
			fmt.Fprint(w, `]}}`)
			return
		}
		fmt.Fprintf(w, `],"nextCursor":"%d"}}`, n+1)
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object"}}],"prompts":[],"resources":[],"resourceTemplates":[]}}`, msg.ID)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
	}
}

// TestListsAreBoundedInBytes (issue 19, attack9 D4): a server's lists
// were bounded page by page (max_response_bytes) and in pages (100), not
// as a whole: a server answering tools/list with 100 pages of 15 MB had
// codecell hold 1.5 GB. Each list — tools, prompts, resources, resource
// templates — stops at max_list_bytes, all its pages together: the server
// is unavailable, with a reason that names it and the bound, and the
// other servers are served.
func TestListsAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	tools, toolsURL := newEndlessLister(t, "tools/list", 512<<10, 15<<10)
	prompts, promptsURL := newEndlessLister(t, "prompts/list", 256<<10, 1<<10)
	resources, resourcesURL := newEndlessLister(t, "resources/list", 256<<10, 1<<10)
	templates, templatesURL := newEndlessLister(t, "resources/templates/list", 256<<10, 1<<10)
	auth := map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}
	e := start(t, map[string]upstream.Server{
		"tools":     {URL: toolsURL, MaxListBytes: 2 << 20},
		"prompts":   {URL: promptsURL, MaxListBytes: 1 << 20},
		"resources": {URL: resourcesURL, MaxListBytes: 1 << 20},
		"templates": {URL: templatesURL, MaxListBytes: 1 << 20},
		"fine":      {URL: httpFake(t, false, false, nil).URL + "/mcp", Headers: auth},
	})
	for _, tt := range []struct {
		name     string
		lister   *endlessLister
		bound    string
		maxPages int32
	}{
		{"tools", tools, "2.0 MiB", 5},
		{"prompts", prompts, "1.0 MiB", 5},
		{"resources", resources, "1.0 MiB", 5},
		{"templates", templates, "1.0 MiB", 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := fmt.Sprintf("upstream %q: its %s passed max_list_bytes (%s)", tt.name, tt.lister.method, tt.bound)
			eventually(t, "unavailable: "+want, func() bool {
				st := e.status(tt.name)
				return st.State == upstream.StateUnavailable && strings.Contains(st.Reason, want)
			})
			// Each listing reads at most the bound, and one page past it.
			if n := tt.lister.deepest.Load(); n > tt.maxPages {
				t.Errorf("one listing asked the server for %d pages of its %s, more than the %d that hold max_list_bytes", n, tt.lister.method, tt.maxPages)
			}
		})
	}
	if st := e.status("fine"); st.State != upstream.StateReady {
		t.Errorf("another server: %+v", st)
	}
	if out, err := e.call(t, "fine.get-sum", `{"a":40,"b":2}`); err != nil || string(out) != "42" {
		t.Errorf("another server's tool: %s, %v", out, err)
	}
}

// TestListsKeepTheirFirstEntries: a page of many tiny tools is decoded
// only up to the tools codecell keeps (10,000), the first of which are
// registered, with a warning; the server is served.
func TestListsKeepTheirFirstEntries(t *testing.T) {
	t.Parallel()
	tools, url := newEndlessLister(t, "tools/list", 4<<20, 0)
	// Registering 10,000 tools takes a while under the race detector.
	e := startWithin(t, 3*time.Minute, map[string]upstream.Server{"many": {URL: url}},
		func(c *upstream.Config) { c.HandshakeTimeout = 3 * time.Minute })
	st := e.status("many")
	if st.State != upstream.StateReady || st.Tools != 10_000 {
		t.Errorf("status %+v, want ready with the first 10,000 tools", st)
	}
	if n := tools.pages.Load(); n != 1 {
		t.Errorf("the server was asked for %d pages; the first held more tools than codecell keeps", n)
	}
	if !strings.Contains(e.logs.String(), "kept the first") {
		t.Errorf("no warning of the tools left out:\n%.2000s", e.logs)
	}
	names := map[string]bool{}
	for _, tl := range e.reg.ListCategory("many") {
		names[tl.Name] = true
	}
	if !names["many.t0_9999"] || names["many.t0_10000"] || len(names) != 10_000 {
		t.Errorf("%d tools registered; t0_9999 %v, t0_10000 %v", len(names), names["many.t0_9999"], names["many.t0_10000"])
	}
}
