package security

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestPaginationDowngradesToHTTP (issue 19, fourth round, A3): an
// OpenAPI source's credentials go to the hosts it trusts, host[:port]
// names with no scheme; redirects were refused from https to http, but a
// next page's URL (a Link header's rel="next", or a cursor the document
// declares as a URL) was checked by host alone. An API at https whose
// next link is http:// (as an application behind a TLS-terminating proxy
// commonly writes it) got the next page's request, bearer token
// included, in clear text. Here the plain listener's host is in
// allowed_hosts, as the https one's port 80 would be the same host.
func TestPaginationDowngradesToHTTP(t *testing.T) {
	t.Parallel()
	const token = "api-bearer-0123456789abcdef-SECRET"
	var mu sync.Mutex
	var clear []string // Authorization headers seen over plain HTTP
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		clear = append(clear, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"page":2}]`)
	}))
	t.Cleanup(plain.Close)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<`+plain.URL+`/things?p=2>; rel="next"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"page":1}]`)
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o600)
	doc := `{"openapi":"3.0.3","info":{"title":"pages","version":"1"},"paths":{"/things":{"get":{"operationId":"list_things","summary":"List things.",` +
		`"parameters":[{"name":"p","in":"query","schema":{"type":"integer"}}],` +
		`"responses":{"200":{"description":"ok","headers":{"Link":{"schema":{"type":"string"}}},"content":{"application/json":{"schema":{"type":"array","items":{"type":"object"}}}}}}}}}}`
	spec := filepath.Join(dir, "pages.json")
	os.WriteFile(spec, []byte(doc), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.pages]\nspec = %q\nbase_url = %q\nallowed_hosts = [%q]\nauth = { type = \"bearer\", token_env = \"SECURITY_API_TOKEN\" }\n",
		spec, api.URL, strings.TrimPrefix(plain.URL, "http://"))), 0o600)
	s := start(t, "--config", cfg, "SECURITY_API_TOKEN="+token, "SSL_CERT_FILE="+ca)
	h := s.connect(t, aliceToken, &user{}, "pages")
	rec := h.run(`return await tools.paginate(pages.list_things, {}, {max: 2})`)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range clear {
		if strings.Contains(a, token) {
			t.Fatalf("the API's bearer token went over plain HTTP to the next page's http:// link: %q", a)
		}
	}
	if len(clear) > 0 {
		t.Errorf("a next page was fetched from https to http (%d requests)", len(clear))
	}
	if rec.Status == "ok" || !strings.Contains(rec.raw, "never from https to http") {
		t.Errorf("the run does not say why the next page was refused: %.600s", rec.raw)
	}
}
