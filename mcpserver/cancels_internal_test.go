package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestSessionlessReadsMetaWhenItDecides (issue 23, speed10): a message's
// _meta, which mcp.Meta decodes into a map of every field, is decoded
// only when whether mcp-go serves the message without a session depends
// on it — not for a request that declares its protocol in its header,
// as a 2026-07-28 client's every request does — and, when it decides,
// decides as before: a _meta that does not decode is a message that did
// not parse.
func TestSessionlessReadsMetaWhenItDecides(t *testing.T) {
	c := newSessionless()
	cancel := func(meta string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"_meta":` + meta + `}}`
	}
	modern := `{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `"}`
	older := `{"` + mcp.MetaKeyProtocolVersion + `":"2025-06-18"}`
	serve := func(body string, header map[string]string) (passedOn bool, status int) {
		r := httptest.NewRequest(http.MethodPost, PathStreamable, strings.NewReader(body))
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		c.serve(w, r, "alice", []byte(body), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passedOn = true }))
		return passedOn, w.Code
	}
	session := map[string]string{server.HeaderKeySessionID: "s1"}
	for _, tc := range []struct {
		name     string
		body     string
		header   map[string]string
		passedOn bool
	}{
		{"no session: answered here", cancel("{}"), nil, false},
		{"a session, 2026-07-28 in the header", cancel("{}"), map[string]string{server.HeaderKeySessionID: "s1", mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728}, false},
		{"a session, 2026-07-28 in _meta", cancel(modern), session, false},
		{"a session, an older protocol in _meta", cancel(older), session, true},
		{"a session, a _meta that does not decode", cancel("5"), session, true},
		{"no session, a _meta that does not decode", cancel("5"), nil, true},
		{"no session, a null _meta", cancel("null"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passedOn, status := serve(tc.body, tc.header)
			if passedOn != tc.passedOn {
				t.Errorf("passed on to mcp-go: %v, want %v (status %d)", passedOn, tc.passedOn, status)
			}
			if !passedOn && status != http.StatusAccepted {
				t.Errorf("answered here with %d, want %d", status, http.StatusAccepted)
			}
		})
	}

	// A request declaring its protocol in its header costs the same
	// whatever its _meta holds.
	var big strings.Builder
	big.WriteString(`{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `"`)
	for i := range 200 {
		big.WriteString(`,"k` + strconv.Itoa(i) + `":{"v":[1,2,3]}`)
	}
	big.WriteString(`}`)
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1+1"},"_meta":` + meta + `}}`
	}
	header := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728}
	allocs := func(body string) float64 {
		return testing.AllocsPerRun(20, func() { serve(body, header) })
	}
	small, large := allocs(call(modern)), allocs(call(big.String()))
	if large > small+20 {
		t.Errorf("a 200-field _meta: %v allocations a request, against %v for a 1-field one; want about the same", large, small)
	}
}

// BenchmarkSessionless is the sessionless check of one tools/call of
// protocol 2026-07-28 as codecell-load's clients and mcp-go's send it: its
// protocol in a header and in _meta, no session.
func BenchmarkSessionless(b *testing.B) {
	c := newSessionless()
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"codecell-load","version":"1"},"io.modelcontextprotocol/protocolVersion":"` +
		mcp.ProtocolVersion20260728 + `"},"name":"execute_code","arguments":{"code":"1+1"}}}`)
	r := httptest.NewRequest(http.MethodPost, PathStreamable, nil)
	r.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		c.serve(nil, r, "alice", body, next)
	}
}
