package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// TestRequests calls each operation of testdata/openapi/api.yaml and checks the
// request the server received — method, path, query, headers and body —
// exactly as the document says to write them, and the result.
func TestRequests(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{Headers: map[string]string{"X-GitHub-Api-Version": "2022-11-28"}}, openapi.Options{})
	tests := []struct {
		name, tool, args string
		method, path     string
		query            string
		header           map[string]string // headers that must be sent, "" for absent
		body             string
		result           string
	}{
		{
			name: "query and path", tool: "gh.issues_list_for_repo", args: `{"owner":"octo","repo":"hello","state":"closed","labels":"bug,ui","per_page":2}`,
			method: "GET", path: "/repos/octo/hello/issues", query: "state=closed&labels=bug%2Cui&per_page=2",
			header: map[string]string{"Authorization": "Bearer " + secret, "X-Github-Api-Version": "2022-11-28", "Accept": "application/json, */*;q=0.5", "Content-Type": ""},
		},
		{
			name: "json body merged", tool: "gh.issues_create", args: `{"owner":"octo","repo":"hello","title":"Found a bug","labels":["bug"],"body":"It breaks"}`,
			method: "POST", path: "/repos/octo/hello/issues", header: map[string]string{"Content-Type": "application/json"},
			body: `{"body":"It breaks","labels":["bug"],"title":"Found a bug"}`, result: `{"number":7,"state":"open","title":"Found a bug"}`,
		},
		{
			name: "json body under body", tool: "gh.issues_add_labels", args: `{"owner":"octo","repo":"hello","issue_number":7,"body":["bug","ui"]}`,
			method: "POST", path: "/repos/octo/hello/issues/7/labels", body: `["bug","ui"]`, result: `[{"id":1,"name":"bug"}]`,
		},
		{
			name: "path escaping", tool: "gh.repos_get", args: `{"owner":"a b/c","repo":"d?e"}`,
			method: "GET", path: "/repos/a%20b%2Fc/d%3Fe",
		},
		{
			name: "every style", tool: "gh.styles",
			args: `{"simple":["a","b"],"label":[1,2],"matrix":{"a":"x","b":"y"},"ids":[1,2],"csv":["p","q"],"pipes":["p","q"],"spaces":["p","q"],` +
				`"filter":{"color":"red","size":2},"point":{"x":1,"y":2},"q":"a&b=c d","json":{"k":[1]},"X-Trace":["t1","t2"],"session":"abc"}`,
			method: "GET", path: "/styles/a,b/.1.2/;matrix=a,x,b,y",
			query:  "ids=1&ids=2&csv=p,q&pipes=p|q&spaces=p%20q&filter%5Bcolor%5D=red&filter%5Bsize%5D=2&x=1&y=2&q=a%26b%3Dc+d&json=%7B%22k%22%3A%5B1%5D%7D",
			header: map[string]string{"X-Trace": "t1,t2", "Cookie": "session=abc", "Accept": "application/json, */*;q=0.5"},
		},
		{
			name: "form body", tool: "gh.submit_form", args: `{"name":"Ann Lee","tags":["a","b"],"meta":{"k":"v"}}`,
			method: "POST", path: "/form", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			body: "meta=%7B%22k%22%3A%22v%22%7D&name=Ann+Lee&tags=a&tags=b",
		},
		{
			name: "no body", tool: "gh.repos_delete", args: `{"owner":"octo","repo":"hello"}`,
			method: "DELETE", path: "/repos/octo/hello", result: `{"full_name":"octo/hello","id":1}`,
		},
		{
			name: "text response", tool: "gh.get_readme", args: `{}`, method: "GET", path: "/readme", result: `"# Hello\n"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := reg.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			// Calls run in parallel with none of this test's: the last
			// request is this call's.
			r, _ := a.last()
			if r.Method != tc.method || r.Path != tc.path {
				t.Errorf("request %s %s, want %s %s", r.Method, r.Path, tc.method, tc.path)
			}
			if tc.query != "" || r.Query != "" {
				if r.Query != tc.query {
					t.Errorf("query\n got %s\nwant %s", r.Query, tc.query)
				}
			}
			for k, want := range tc.header {
				if got := r.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tc.body != "" || len(r.Body) > 0 {
				if got := strings.TrimSpace(string(r.Body)); got != tc.body {
					t.Errorf("body\n got %s\nwant %s", got, tc.body)
				}
			}
			if tc.result != "" && strings.TrimSpace(string(out)) != tc.result {
				t.Errorf("result %s, want %s", out, tc.result)
			}
		})
	}
}

// TestMultipart sends a file and fields as multipart/form-data.
func TestMultipart(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{})
	if _, err := reg.Call(context.Background(), "gh.upload", json.RawMessage(`{"file":"hello, file","note":"a note","meta":{"k":1}}`)); err != nil {
		t.Fatal(err)
	}
	r, _ := a.last()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(strings.NewReader(string(r.Body)), params["boundary"])
	want := map[string]struct{ file, ctype, data string }{
		"file": {"file", "application/octet-stream", "hello, file"},
		"note": {"", "", "a note"},
		"meta": {"", "application/json", `{"k":1}`},
	}
	seen := 0
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		w, ok := want[p.FormName()]
		if !ok {
			t.Errorf("unexpected part %q", p.FormName())
			continue
		}
		seen++
		data, _ := io.ReadAll(p)
		if p.FileName() != w.file || p.Header.Get("Content-Type") != w.ctype || string(data) != w.data {
			t.Errorf("part %s: file %q type %q data %q, want %+v", p.FormName(), p.FileName(), p.Header.Get("Content-Type"), data, w)
		}
	}
	if seen != 3 {
		t.Errorf("%d parts, want 3", seen)
	}
}

// TestErrors checks what a program sees when a call fails: a 404 with the
// API's error body, an unknown host in a redirect, invalid arguments.
func TestErrors(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, logs := openSource(t, a, openapi.Config{}, openapi.Options{})
	tests := []struct {
		name, tool, args string
		code             string
		msg              []string
	}{
		{"404 with the API's body", "gh.repos_get", `{"owner":"octo","repo":"nope"}`, "http_404",
			[]string{"GET /repos/{owner}/{repo}: HTTP 404 Not Found", `{"documentation_url":"https://docs.github.com/rest","message":"Not Found"}`}},
		{"redirect to a foreign host", "gh.moved", `{}`, openapi.CodeRedirectRefused,
			[]string{"redirected to 127.0.0.1:", "not an allowed host"}},
		{"missing path parameter", "gh.repos_get", `{"owner":"octo"}`, tools.CodeInvalidArguments, []string{"repo"}},
		{"wrong type", "gh.issues_add_labels", `{"owner":"o","repo":"r","issue_number":"seven"}`, tools.CodeInvalidArguments, []string{"issue_number"}},
		{"readOnly property refused", "gh.issues_create", `{"owner":"o","repo":"r","title":"t","number":3}`, tools.CodeInvalidArguments, []string{"number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tc.code {
				t.Fatalf("error %v, want code %s", err, tc.code)
			}
			for _, m := range tc.msg {
				if !strings.Contains(te.Message, m) {
					t.Errorf("message %q lacks %q", te.Message, m)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error holds the credential: %v", err)
			}
		})
	}
	// The foreign host never got the request.
	for _, r := range a.requests {
		if strings.HasPrefix(r.Path, "/elsewhere") {
			t.Error("the redirect was followed")
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Error("the log holds the credential")
	}
	var he *openapi.HTTPError
	_, err := reg.Call(context.Background(), "gh.repos_get", json.RawMessage(`{"owner":"octo","repo":"nope"}`))
	if !errors.As(err, &he) || he.Status != 404 || !strings.Contains(string(he.Body), "Not Found") {
		t.Errorf("HTTPError: %+v", he)
	}
}

// TestRetries: a GET limited with 429 and Retry-After is retried after the
// wait when the run's deadline leaves room, and fails at once with the
// wait in its message when it does not; a POST is never retried.
func TestRetries(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{})

	a.mu.Lock()
	a.limited = 1
	a.mu.Unlock()
	before := a.count()
	out, err := reg.Call(context.Background(), "gh.rate_limited", nil)
	if err != nil || string(out) != "{\"ok\":true}\n" {
		t.Fatalf("retried call: %s, %v", out, err)
	}
	if n := a.count() - before; n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}

	a.mu.Lock()
	a.limited, a.retry = 1, "30"
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	before = a.count()
	_, err = reg.Call(ctx, "gh.rate_limited", nil)
	var te *tools.Error
	var he *openapi.HTTPError
	if !errors.As(err, &te) || te.Code != "http_429" || !strings.Contains(te.Message, "retry after 30s") || !errors.As(err, &he) || he.RetryAfter != 30*time.Second {
		t.Fatalf("error %v, want http_429 asking to retry after 30s", err)
	}
	if n := a.count() - before; n != 1 {
		t.Errorf("%d requests, want 1: the wait does not fit in the deadline", n)
	}

	a.mu.Lock()
	a.limited, a.retry = 1, "1"
	a.mu.Unlock()
	before = a.count()
	if _, err = reg.Call(context.Background(), "gh.rate_limited_post", nil); tools.CodeOf(err) != "http_429" {
		t.Fatalf("POST: %v, want http_429", err)
	}
	if n := a.count() - before; n != 1 {
		t.Errorf("POST sent %d times, want once", n)
	}
}

// TestLimits: the source's concurrency bound queues calls rather than
// failing them, its rate limit refuses a call it cannot fit before the
// deadline, and its timeout ends a request that takes too long.
func TestLimits(t *testing.T) {
	t.Parallel()
	t.Run("concurrency", func(t *testing.T) {
		a := newTestAPI(t)
		a.delay = 50 * time.Millisecond
		_, reg, _ := openSource(t, a, openapi.Config{MaxConcurrentCalls: 2}, openapi.Options{})
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := reg.Call(context.Background(), "gh.echo", nil)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.peak != 2 {
			t.Errorf("%d requests at once, want 2", a.peak)
		}
	})
	t.Run("rate", func(t *testing.T) {
		a := newTestAPI(t)
		_, reg, _ := openSource(t, a, openapi.Config{RateLimit: "1/m"}, openapi.Options{})
		if _, err := reg.Call(context.Background(), "gh.echo", nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := reg.Call(ctx, "gh.echo", nil)
		if tools.CodeOf(err) != openapi.CodeRateLimited || !strings.Contains(err.Error(), "the rate limit of gh (1/m)") {
			t.Errorf("second call within a minute: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		a := newTestAPI(t)
		a.delay = 500 * time.Millisecond
		_, reg, _ := openSource(t, a, openapi.Config{Timeout: tools.Duration(50 * time.Millisecond)}, openapi.Options{})
		_, err := reg.Call(context.Background(), "gh.echo", nil)
		if tools.CodeOf(err) != openapi.CodeTimeout || !strings.Contains(err.Error(), "no response within 50ms") {
			t.Errorf("slow server: %v", err)
		}
		if n := a.count(); n != 1 {
			t.Errorf("%d requests: a timeout is not retried", n)
		}
	})
}

// TestCredentialsStayOnTheHost: every kind of credential reaches the
// server, and none comes back to the program, even from a server that
// echoes the request.
func TestCredentialsStayOnTheHost(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tests := []struct {
		name   string
		auth   openapi.Auth
		check  func(r received) bool
		secret string
	}{
		{"bearer", openapi.Auth{Type: "bearer", TokenEnv: "TEST_TOKEN"},
			func(r received) bool { return r.Header.Get("Authorization") == "Bearer "+secret }, secret},
		{"basic", openapi.Auth{Type: "basic", Username: "bot", PasswordEnv: "TEST_TOKEN"},
			func(r received) bool { u, p, ok := basicAuth(r); return ok && u == "bot" && p == secret }, secret},
		{"api key in a header", openapi.Auth{Type: "api_key", Name: "X-Api-Key", KeyEnv: "TEST_TOKEN"},
			func(r received) bool { return r.Header.Get("X-Api-Key") == secret }, secret},
		{"api key in the query", openapi.Auth{Type: "api_key", In: "query", Name: "api_key", KeyEnv: "TEST_TOKEN"},
			func(r received) bool { return r.Query == "api_key="+secret }, secret},
		{"api key in a cookie", openapi.Auth{Type: "api_key", In: "cookie", Name: "key", KeyEnv: "TEST_TOKEN"},
			func(r received) bool { return r.Header.Get("Cookie") == "key="+secret }, secret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, reg, logs := openSource(t, a, openapi.Config{Auth: tc.auth}, openapi.Options{})
			out, err := reg.Call(context.Background(), "gh.echo", nil)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := a.last()
			if !tc.check(r) {
				t.Errorf("the server did not get the credential: %+v", r)
			}
			if strings.Contains(string(out), tc.secret) || !strings.Contains(string(out), "[redacted]") {
				t.Errorf("the echoed credential reached the program: %s", out)
			}
			if strings.Contains(logs.String(), tc.secret) {
				t.Errorf("the log holds the credential")
			}
			// Nor is it in any documentation of the tools.
			for _, tl := range reg.List() {
				if strings.Contains(tl.Description+tl.Notes+string(tl.InputSchema), tc.secret) {
					t.Errorf("%s documents the credential", tl.Name)
				}
			}
		})
	}
}

func basicAuth(r received) (string, string, bool) {
	return (&http.Request{Header: r.Header}).BasicAuth()
}

// TestPagination follows Link: rel="next" over three pages, a Slack-like
// cursor and a Stripe-like starting_after, and stops at max.
func TestPagination(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	rec := &recorder{}
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{Recorder: rec})
	tests := []struct {
		name, args string
		want       string
		requests   int
	}{
		{"link header", `{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello","state":"open"}}`, "1,2,3,4,5,6", 3},
		{"qualified name and max", `{"tool":"gh.issues_list_for_repo","args":{"owner":"octo","repo":"hello"},"max":3}`, "1,2,3", 2},
		{"the document's operationId", `{"tool":"gh.issues/list-for-repo","args":{"owner":"octo","repo":"hello"},"max":2}`, "1,2", 1},
		{"cursor", `{"tool":"list_contacts"}`, "0,2,2", 3},
		{"starting_after", `{"tool":"list_charges"}`, "ch_1,ch_2,ch_3,ch_4,ch_5", 3},
	}
	ctx := (&gate{reg: reg}).ctx(context.Background())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := a.count()
			out, err := paginate(ctx, reg, "gh.paginate", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var items []map[string]any
			if err := json.Unmarshal(out, &items); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				for _, k := range []string{"number", "n", "id"} {
					if v, ok := it[k]; ok {
						got = append(got, strings.Trim(string(mustJSON(v)), `"`))
					}
				}
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("items %s, want %s", strings.Join(got, ","), tc.want)
			}
			if n := a.count() - before; n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
	// The first page asked for as many items as a page may hold.
	first := a.requests[0]
	if first.Query != "state=open&per_page=100" {
		t.Errorf("first page query %q", first.Query)
	}
	// Each request is in the audit records, with method, host and status
	// and nothing else.
	for _, r := range rec.all() {
		if r.Source != "gh" || r.Method != "GET" || r.Host != strings.TrimPrefix(a.URL, "http://") || r.Status != 200 || r.Attempt != 1 {
			t.Errorf("record %+v", r)
		}
	}
	if len(rec.all()) != 3+2+1+3+3 {
		t.Errorf("%d records, want 12", len(rec.all()))
	}
	// A page link to another host is refused, naming the host.
	_, err := paginate(ctx, reg, "gh.paginate", `{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"elsewhere"}}`)
	if tools.CodeOf(err) != openapi.CodeHostRefused || !strings.Contains(err.Error(), "page 2: "+strings.TrimPrefix(a.foreign.URL, "http://")+" is not an allowed host") {
		t.Errorf("next page on a foreign host: %v", err)
	}
	_, err = paginate(ctx, reg, "gh.paginate", `{"tool":"nope"}`)
	if tools.CodeOf(err) != tools.CodeUnknownTool {
		t.Errorf("unknown operation: %v", err)
	}
	_, err = paginate(ctx, reg, "gh.paginate", `{"tool":"issues_list_for_repo","args":{"owner":"octo"}}`)
	if tools.CodeOf(err) != tools.CodeInvalidArguments {
		t.Errorf("arguments not checked: %v", err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestBinaryResponse: a binary response is kept as an artifact and the
// program gets a handle; without a store it is an error that says why.
func TestBinaryResponse(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	var kept []byte
	store := artifacts{put: func(mt string, data []byte) (string, error) {
		kept = data
		return "codecell://results/abc", nil
	}}
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{Artifacts: store})
	out, err := reg.Call(context.Background(), "gh.get_avatar", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"type":"image","mimeType":"image/png","uri":"codecell://results/abc","bytes":24}` || len(kept) != 24 {
		t.Errorf("handle %s, kept %d bytes", out, len(kept))
	}
	_, reg2, _ := openSource(t, a, openapi.Config{}, openapi.Options{})
	if _, err := reg2.Call(context.Background(), "gh.get_avatar", nil); tools.CodeOf(err) != openapi.CodeBinary {
		t.Errorf("without a store: %v", err)
	}
}

// BenchmarkCall measures what the source adds to a request: a call of
// repos_get through the registry (validation, request, response) beside
// the same GET with net/http, against a local server that only answers.
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":1,"full_name":"octo/hello"}`)
	}))
	defer srv.Close()
	a := &testAPI{Server: srv}
	_, reg, _ := openSource(b, a, openapi.Config{}, openapi.Options{})
	ctx := context.Background()
	args := json.RawMessage(`{"owner":"octo","repo":"hello"}`)
	b.Run("net_http", func(b *testing.B) {
		for b.Loop() {
			resp, err := http.Get(srv.URL + "/repos/octo/hello")
			if err != nil {
				b.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("registry_call", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.Call(ctx, "gh.repos_get", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
