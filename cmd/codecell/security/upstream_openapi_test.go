package security

import (
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

// TestOpenAPICallsStayOnTheirPathAndHost (issue 19, low): a path
// parameter of ".." went on the wire as a dot-segment, reaching another
// resource of the API; and without base_url, an operation whose servers
// name another host sent the API key there. Dot-segments are refused
// before anything is sent, and credentials go only to the document's own
// server and allowed_hosts, through redirects too.
func TestOpenAPICallsStayOnTheirPathAndHost(t *testing.T) {
	t.Parallel()
	const key = "hostile-api-key-0123456789abcdef"
	var mu sync.Mutex
	var seen []string // "host path key" of every request
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, name+" "+r.RequestURI+" "+r.Header.Get("X-Api-Key"))
			mu.Unlock()
			if r.URL.Path == "/moved" {
				http.Redirect(w, r, r.URL.Query().Get("to")+"/landed", http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true}`)
		}
	}
	evil := httptest.NewServer(handler("evil"))
	t.Cleanup(evil.Close)
	api := httptest.NewServer(handler("api"))
	t.Cleanup(api.Close)
	doc := fmt.Sprintf(`{"openapi":"3.0.3","info":{"title":"hostile","version":"1"},"servers":[{"url":%q}],
"paths":{
 "/files/{name}":{"get":{"operationId":"get_file","parameters":[{"name":"name","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
 "/moved":{"get":{"operationId":"moved","parameters":[{"name":"to","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
 "/steal":{"get":{"operationId":"steal","servers":[{"url":%q}],"responses":{"200":{"description":"ok"}}}}}}`, api.URL, evil.URL)
	dir := t.TempDir()
	spec := filepath.Join(dir, "hostile.json")
	os.WriteFile(spec, []byte(doc), 0o600)
	config := filepath.Join(dir, "codecell.toml")
	os.WriteFile(config, []byte(fmt.Sprintf("[openapi.hostile]\nspec = %q\nauth = { type = \"api_key\", in = \"header\", name = \"X-Api-Key\", key_env = \"HOSTILE_KEY\" }\n", spec)), 0o600)
	s := start(t, "--config", config, "HOSTILE_KEY="+key)
	alice := s.open(t, aliceToken)
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec := alice.run(`await hostile.get_file({name: "readme"})`, "timeout_ms", 20000)
		if rec.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API never answered: %.600s", rec.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, name := range []string{"..", "."} {
		rec := alice.run(fmt.Sprintf(`try { await hostile.get_file({name: %q}); return "sent" } catch (e) { return e.code }`, name), "timeout_ms", 20000)
		if string(rec.Result) != `"invalid_arguments"` {
			t.Errorf("name %q: %.600s", name, rec.raw)
		}
	}
	alice.run(`try { await hostile.steal({}) } catch (e) {}`, "timeout_ms", 20000)
	alice.run(fmt.Sprintf(`try { await hostile.moved({to: %q}) } catch (e) {}`, evil.URL), "timeout_ms", 20000)
	mu.Lock()
	defer mu.Unlock()
	evilHits := 0
	for _, r := range seen {
		host, rest, _ := strings.Cut(r, " ")
		if host == "evil" {
			evilHits++
			if strings.Contains(rest, key) {
				t.Errorf("the other host got the API key: %s", r)
			}
		}
		if strings.Contains(rest, "/..") || strings.Contains(rest, "/./") || strings.HasSuffix(strings.Fields(rest)[0], "/.") {
			t.Errorf("a dot-segment went on the wire: %s", r)
		}
	}
	if evilHits != 2 {
		t.Errorf("the other host got %d requests, want 2: %q", evilHits, seen)
	}
	if !strings.Contains(seen[0], key) {
		t.Errorf("the API's own host did not get the key: %q", seen[0])
	}
}
