package security

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBodyOfTooManyValues (issue 19, attack7 B1): the body budget counted
// a request's bytes, not what they decode into. 4 MiB of [{},{},…] is
// about 1.4 million values, decoded twice (mcp-go's request, the
// engine's arguments) into 300 MB; eight at once, within one principal's
// 32 MiB of bodies, raised the server's peak memory by 2.8 GiB. A body of
// more than 65,536 values is refused before it is decoded.
func TestBodyOfTooManyValues(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.open(t, aliceToken)
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1","args":{"x":[`)
	for range 100_000 {
		sb.WriteString(`{},`)
	}
	sb.WriteString(`{}]}}}}`)
	req, err := http.NewRequest(http.MethodPost, alice.url, strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range alice.header() {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "JSON values") {
		t.Fatalf("a body of 100,001 values: %d %.300s, want 413 naming the JSON values' limit", resp.StatusCode, msg)
	}
	// The principal's next request is served.
	alice.normal()
}
