package security

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metric reads one value from /metrics.
func (s *server) metric(t *testing.T, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum, found := 0.0, false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum, found = sum+v, true
		}
	}
	if !found {
		t.Fatalf("no metric %s", name)
	}
	return sum
}

// TestVaultsAreBounded (issue 10, item 5): sessions that never end held
// their vaults forever. Now a principal holds a bounded number of
// sessions, idle ones are dropped, and their tokens then say so.
func TestVaultsAreBounded(t *testing.T) {
	t.Parallel()
	s := start(t, "CODECELL_LIMITS_SESSION_IDLE_TTL=2s", "CODECELL_LIMITS_SESSIONS_PER_PRINCIPAL=3")
	var first *session
	var tok string
	for i := range 10 {
		ss := s.open(t, aliceToken)
		rec := ss.run(fmt.Sprintf(`({who: "user%d@example.com"})`, i))
		if i == 9 {
			first, tok = ss, regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(rec.raw)
		}
	}
	if n := s.metric(t, "codecell_sessions_evicted_total"); n < 7 {
		t.Errorf("%v sessions evicted beyond the per-principal cap, want at least 7", n)
	}
	// The newest session's token resolves while it is in use ...
	if rec := first.run(fmt.Sprintf(`(await util.echo({text: %q})).text`, tok)); rec.Status != "ok" {
		t.Fatalf("a live session's token: %.300s", rec.raw)
	}
	// ... and not once the session sat idle past its TTL: the session is
	// gone (404), and its token resolves nowhere.
	time.Sleep(3 * time.Second)
	if code, _, _ := do(t, http.MethodPost, first.url, first.header(), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("an idle session answered %d, want 404", code)
	}
	if rec := s.open(t, aliceToken).run(fmt.Sprintf(`(await util.echo({text: %q})).text`, tok)); rec.Status != "error" || !strings.Contains(rec.raw, "expired") {
		t.Fatalf("an idle session's token: %.300s", rec.raw)
	}
	if v := s.metric(t, "codecell_vault_bytes"); v < 0 {
		t.Errorf("vault bytes %v", v)
	}
	s.open(t, bobToken).normal()
}
