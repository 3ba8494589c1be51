package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// testSpec is a slice of GitHub's REST API and operations that exercise
// every parameter style and body kind (testdata/openapi/api.yaml).
const testSpec = "../../testdata/openapi/api.yaml"

// secret is the credential the tests configure; no output may hold it.
const secret = "s3cr3t-t0ken-0f-the-tests"

// received is a request as the test server saw it.
type received struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// testAPI is the local server the tests call: it records every request
// and answers as the operations of testdata/openapi/api.yaml do.
type testAPI struct {
	*httptest.Server
	foreign *httptest.Server // another host, which /moved redirects to

	mu       sync.Mutex
	requests []received
	limited  int // 429s still to send on /rate_limited
	retry    string
	delay    time.Duration // how long /echo takes
	inflight int           // requests of /echo in progress
	peak     int           // the most of them at once
}

func newTestAPI(t testing.TB) *testAPI {
	t.Helper()
	a := &testAPI{retry: "1"}
	a.foreign = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.record(r)
		fmt.Fprintf(w, `{"foreign":true,"authorization":%q}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(a.foreign.Close)
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

func (a *testAPI) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, received{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	a.mu.Unlock()
	return body
}

// last returns the last request received, and how many there were.
func (a *testAPI) last() (received, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) == 0 {
		return received{}, 0
	}
	return a.requests[len(a.requests)-1], len(a.requests)
}

func (a *testAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (a *testAPI) serve(w http.ResponseWriter, r *http.Request) {
	body := a.record(r)
	p := r.URL.Path
	switch {
	case p == "/repos/octo/hello/issues" && r.Method == http.MethodGet:
		// Three pages of two issues, linked as GitHub links them.
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		if page < 3 {
			next := fmt.Sprintf("%s%s?state=%s&per_page=2&page=%d", a.URL, p, r.URL.Query().Get("state"), page+1)
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s%s?page=3>; rel="last"`, next, a.URL, p))
		}
		var issues []map[string]any
		for i := 1; i <= 2; i++ {
			n := (page-1)*2 + i
			issues = append(issues, map[string]any{"number": n, "title": fmt.Sprintf("Issue %d", n), "state": "open",
				"user": map[string]any{"login": "mona", "email": "mona.lisa@example.com"}})
		}
		writeJSON(w, 200, issues)
	case p == "/repos/octo/hello/issues" && r.Method == http.MethodPost:
		var in map[string]any
		json.Unmarshal(body, &in)
		writeJSON(w, 201, map[string]any{"number": 7, "title": in["title"], "state": "open"})
	case p == "/repos/octo/hello/issues/7/labels":
		writeJSON(w, 200, []map[string]any{{"id": 1, "name": "bug"}})
	case p == "/repos/octo/hello", p == "/repos/a b/c/d?e":
		writeJSON(w, 200, map[string]any{"id": 1, "full_name": "octo/hello"})
	case p == "/repos/octo/elsewhere/issues":
		// A page whose next page is on another host.
		w.Header().Set("Link", fmt.Sprintf(`<%s/repos/octo/hello/issues?page=2>; rel="next"`, a.foreign.URL))
		writeJSON(w, 200, []map[string]any{{"number": 1, "title": "One"}})
	case strings.HasPrefix(p, "/repos/"):
		writeJSON(w, 404, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
	case p == "/rate_limited":
		a.mu.Lock()
		limited := a.limited > 0
		if limited {
			a.limited--
		}
		a.mu.Unlock()
		if limited {
			w.Header().Set("Retry-After", a.retry)
			writeJSON(w, 429, map[string]any{"message": "API rate limit exceeded"})
			return
		}
		writeJSON(w, 200, map[string]any{"ok": true})
	case p == "/avatar":
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\nfake image bytes"))
	case p == "/readme":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "# Hello\n")
	case p == "/echo":
		a.mu.Lock()
		a.inflight++
		a.peak = max(a.peak, a.inflight)
		delay := a.delay
		a.mu.Unlock()
		time.Sleep(delay)
		a.mu.Lock()
		a.inflight--
		a.mu.Unlock()
		// Echoes what it received, credentials included: the source must
		// keep them from the program.
		h := map[string]string{}
		for k := range r.Header {
			h[k] = r.Header.Get(k)
		}
		writeJSON(w, 200, map[string]any{"headers": h, "query": r.URL.RawQuery})
	case p == "/moved":
		http.Redirect(w, r, a.foreign.URL+"/elsewhere", http.StatusFound)
	case p == "/contacts":
		next := map[string]string{"": "c2", "c2": "c3", "c3": ""}[r.URL.Query().Get("cursor")]
		n := len(r.URL.Query().Get("cursor"))
		writeJSON(w, 200, map[string]any{"contacts": []any{map[string]any{"n": n}}, "response_metadata": map[string]any{"next_cursor": next}})
	case p == "/charges":
		after := r.URL.Query().Get("starting_after")
		ids := map[string][]string{"": {"ch_1", "ch_2"}, "ch_2": {"ch_3", "ch_4"}, "ch_4": {"ch_5"}}[after]
		var data []any
		for _, id := range ids {
			data = append(data, map[string]any{"id": id})
		}
		writeJSON(w, 200, map[string]any{"has_more": after != "ch_4", "data": data})
	default:
		writeJSON(w, 200, map[string]any{"ok": true})
	}
}

// source opens testdata/openapi/api.yaml against a, with cfg's settings, bearer
// auth with secret and a log into logs.
func openSource(t testing.TB, a *testAPI, cfg openapi.Config, opts openapi.Options) (*openapi.Source, *tools.Registry, *bytes.Buffer) {
	t.Helper()
	if cfg.Spec == "" {
		cfg.Spec = testSpec
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = a.URL
	}
	if cfg.Auth == (openapi.Auth{}) {
		cfg.Auth = openapi.Auth{Type: "bearer", TokenEnv: "TEST_TOKEN"}
	}
	if opts.Name == "" {
		opts.Name = "gh"
	}
	if opts.Getenv == nil {
		opts.Getenv = func(k string) string { return map[string]string{"TEST_TOKEN": secret}[k] }
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := openapi.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.Open(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, reg, &logs
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// recorder collects the audit records of requests.
type recorder struct {
	mu   sync.Mutex
	reqs []openapi.Request
}

func (r *recorder) RecordRequest(_ context.Context, req openapi.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
}

func (r *recorder) all() []openapi.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]openapi.Request(nil), r.reqs...)
}

// artifacts is a fake artifact store.
type artifacts struct {
	put func(mimeType string, data []byte) (string, error)
}

func (a artifacts) PutArtifact(_ context.Context, mimeType string, data []byte) (string, error) {
	return a.put(mimeType, data)
}
