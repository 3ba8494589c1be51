package security

import (
	"net/http"
	"strings"
	"testing"
)

// TestRequestHeadersBounded (issue 19, attack26 T5): net/http reads a
// request's headers before any handler — before the guard, the token and
// the bodies' bounds — up to http.Server.MaxHeaderBytes, 1 MiB by default:
// 1,000 unauthenticated connections that each sent most of a megabyte of
// header and never ended it took the server from 50 to 1,190–1,418 MiB.
// codecell reads 16 KiB of headers (and net/http's 4 KiB of slack): a
// request with more is answered 431 and its connection closed; a request
// with a 12 KB header (a long OAuth token) is served.
func TestRequestHeadersBounded(t *testing.T) {
	t.Parallel()
	s := start(t)
	a := s.open(t, aliceToken)
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	h := a.header()
	h["X-Long"] = strings.Repeat("a", 12_000)
	if code, _, body := do(t, http.MethodPost, a.url, h, ping); code != http.StatusOK {
		t.Errorf("a request with 12 KB of headers: %d %.200s", code, body)
	}
	h["X-Long"] = strings.Repeat("a", 64<<10)
	if code, _, body := do(t, http.MethodPost, a.url, h, ping); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a request with 64 KiB of headers: %d %.200s, want 431", code, body)
	}
}
