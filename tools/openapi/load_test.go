package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/vfs"
)

func TestToolName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ id, method, path, want string }{
		{"issues/list-for-repo", "GET", "/x", "issues_list_for_repo"},
		{"listPets", "GET", "/pets", "list_pets"},
		{"getHTTPServerURL", "GET", "/", "get_http_server_url"},
		{"get_v2Users", "GET", "/", "get_v2_users"},
		{"", "GET", "/pets/{petId}/photos", "get_pets_pet_id_photos"},
		{"2fa.enable", "POST", "/", "op_2fa_enable"},
		{"Ünïcode-Name", "GET", "/", "n_code_name"},
		{"", "GET", "/", "get"},
		{strings.Repeat("very-long-", 12), "GET", "/", "very_long_very_long_very_long_very_long_very_long_very_f6f68f79"},
	} {
		if got := openapi.ToolName(tc.id, tc.method, tc.path); got != tc.want {
			t.Errorf("ToolName(%q, %q, %q) = %q, want %q", tc.id, tc.method, tc.path, got, tc.want)
		}
		if got := openapi.ToolName(tc.id, tc.method, tc.path); !tools.ValidName("c." + got) {
			t.Errorf("%q is not a valid tool name", got)
		}
	}
}

// TestConfigCheck: every problem of a configuration is reported at once,
// each naming its key, and no message holds a secret.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "a-secret-value", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name string
		cfg  openapi.Config
		want []string // "key: message" fragments
	}{
		{"fine", openapi.Config{Spec: "api.json", Auth: openapi.Auth{Type: "bearer", TokenEnv: "TOKEN"}, RateLimit: "5000/h", Headers: map[string]string{"X-Id": "${TOKEN}"}}, nil},
		{"no spec", openapi.Config{}, []string{"spec: is empty"}},
		{"http spec", openapi.Config{Spec: "http://example.com/api.json"}, []string{"spec: \"http://example.com/api.json\": fetch documents over https"}},
		{"bad base url", openapi.Config{Spec: "a.json", BaseURL: "ftp://x"}, []string{"base_url: \"ftp://x\" is not an http or https URL"}},
		{"credentials in base url", openapi.Config{Spec: "a.json", BaseURL: "https://u:p@x"}, []string{"base_url: must not hold credentials"}},
		{"unset variable", openapi.Config{Spec: "a.json", Auth: openapi.Auth{Type: "bearer", TokenEnv: "EMPTY"}}, []string{"auth.token_env: environment variable EMPTY is empty or unset"}},
		{"unknown auth", openapi.Config{Spec: "a.json", Auth: openapi.Auth{Type: "oauth"}}, []string{`auth.type: "oauth" is not bearer, basic or api_key`}},
		{"api key without a name", openapi.Config{Spec: "a.json", Auth: openapi.Auth{Type: "api_key", In: "body", KeyEnv: "TOKEN"}},
			[]string{`auth.in: "body" is not header, query or cookie`, "auth.name: is empty"}},
		{"bad rate", openapi.Config{Spec: "a.json", RateLimit: "fast"}, []string{"rate_limit: \"fast\": want requests per time"}},
		{"bad method", openapi.Config{Spec: "a.json", Methods: []string{"GET", "FETCH"}}, []string{"methods[1]: \"FETCH\" is not an HTTP method"}},
		{"bad header", openapi.Config{Spec: "a.json", Headers: map[string]string{"Bad Name": "x", "X-Env": "${EMPTY}"}},
			[]string{"headers.Bad Name: \"Bad Name\" is not a header name", "headers.X-Env: environment variable EMPTY is empty or unset"}},
		{"negative limits", openapi.Config{Spec: "a.json", Timeout: -1, MaxConcurrentCalls: -1}, []string{"timeout: must not be negative", "max_concurrent_calls: must not be negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Check(getenv)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			var ce *openapi.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("not a *ConfigError: %T", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), env["TOKEN"]) {
				t.Errorf("the error holds a secret: %v", err)
			}
		})
	}
}

// TestParseRefuses: a document that cannot be used is refused with a
// message that names the problem.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, want string }{
		{"empty", "  \n", "the document is empty"},
		{"not JSON or YAML", "{\"openapi\": ", "not valid JSON at line 1, column 13"},
		{"YAML syntax", "openapi: [3.0\n", "neither JSON nor YAML"},
		{"no version", `{"info":{}}`, `no "openapi" or "swagger" field`},
		{"old swagger", `{"swagger":"1.2"}`, `swagger version "1.2" is not supported`},
		{"future openapi", `{"openapi":"4.0.0"}`, `openapi version "4.0.0" is not supported`},
		{"version not a string", `{"openapi":3.1}`, `openapi version 3.1 is not supported`},
		{"no paths", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}`, "it has no paths"},
		{"webhooks only", `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"webhooks":{"x":{"post":{"responses":{"200":{"description":"ok"}}}}}}`, "only webhooks"},
		{"external reference", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"other.json#/Pet"}}}}}}}}}`,
			"bundle the document"},
		{"missing reference", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}}`,
			"Nope"},
		{"wrong type", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":{}}}}}`, "parameters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openapi.Parse([]byte(tc.doc))
			if !errors.Is(err, openapi.ErrDocument) {
				t.Fatalf("error %v does not wrap ErrDocument", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q lacks %q", err, tc.want)
			}
		})
	}
}

// TestOperationsLeftOut: an operation that cannot be called is left out
// and reported, the others become tools.
func TestOperationsLeftOut(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Parse([]byte(`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"servers":[{"url":"https://api.example.invalid"}],"paths":{
		"/a/{id}":{"get":{"operationId":"noParam","responses":{"200":{"description":"ok"}}}},
		"/b":{"get":{"operationId":"fine","responses":{"200":{"description":"ok"}}},
		      "post":{"operationId":"badIn","parameters":[{"name":"x","in":"body","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := openapi.New(openapi.Config{Spec: "t.json"}, openapi.Options{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.OpenDocument(tools.NewRegistry(), doc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`GET /a/{id} (noParam): the path names {id} but no path parameter "id" is defined`,
		`POST /b (badIn): parameter "x": "in" is "body", not path, query, header or cookie`,
	}
	if rep.Tools != 1 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d tools, problems:\n%s", rep.Tools, strings.Join(got, "\n"))
	}
}

// TestSchemas checks what the arguments' and result's schemas become:
// parameters and body merged, nullable as a null type, exclusive bounds
// as numbers, readOnly properties out of arguments and writeOnly ones out
// of results, a circular schema as a definition that names itself.
func TestSchemas(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Parse([]byte(`
openapi: 3.0.3
info: {title: t, version: '1'}
servers: [{url: 'https://api.example.invalid'}]
paths:
  /nodes/{id}:
    put:
      operationId: putNode
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer, minimum: 0, exclusiveMinimum: true}}
        - {name: body, in: query, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Node'}
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}
components:
  schemas:
    Node:
      type: object
      properties:
        id: {type: integer, readOnly: true}
        secret: {type: string, writeOnly: true}
        label: {type: string, nullable: true, pattern: '(?=lookahead)x'}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := openapi.New(openapi.Config{Spec: "t.yaml"}, openapi.Options{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		t.Fatal(err)
	}
	tl, _ := reg.Get("t.put_node")
	// The body clashes with the query parameter "body": it goes under
	// request_body.
	wantIn := `{"type":"object","properties":{"id":{"type":"integer","exclusiveMinimum":0},"body":{"type":"string"},"request_body":{"$ref":"#/$defs/Node","description":"The request body (application/json)."}},"required":["id"],"additionalProperties":false,` +
		`"$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}},"label":{"type":["string","null"],"description":"Pattern (not checked here): (?=lookahead)x"},"secret":{"type":"string"}}}}}`
	if got := tl.InputDocument(); string(got) != wantIn {
		t.Errorf("input schema\n got %s\nwant %s", got, wantIn)
	}
	wantOut := `{"$ref":"#/$defs/Node","$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}},"id":{"type":"integer"},"label":{"type":["string","null"],"description":"Pattern (not checked here): (?=lookahead)x"}}}}}`
	if got := tl.OutputDocument(); string(got) != wantOut {
		t.Errorf("output schema\n got %s\nwant %s", got, wantOut)
	}
	if tl.Annotations != (tools.Annotations{Idempotent: true, Destructive: true, OpenWorld: true}) {
		t.Errorf("annotations %+v", tl.Annotations)
	}
	d, err := vfs.Declaration(tl)
	if err != nil || !strings.Contains(d, "children?: Node[];") || !strings.Contains(d, "label?: string | null;") {
		t.Errorf("declaration: %v\n%s", err, d)
	}
	if err := reg.Validate("t.put_node", json.RawMessage(`{"id":0}`)); err == nil {
		t.Error("exclusiveMinimum 0 accepted 0")
	}
}

// TestFetchCachesWithETag: a document fetched from a URL is kept with its
// ETag; the next start asks whether it changed (304), and a start while
// the server is down uses the kept copy.
func TestFetchCachesWithETag(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile(testSpec)
	if err != nil {
		t.Fatal(err)
	}
	var full, notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		w.Header().Set("ETag", `"v1"`)
		w.Write(spec)
	}))
	cache := t.TempDir()
	open := func() (*openapi.Report, error) {
		s, err := openapi.New(openapi.Config{Spec: srv.URL + "/api.yaml", BaseURL: "https://api.example.invalid"}, openapi.Options{Name: "gh", CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		return s.Open(context.Background(), tools.NewRegistry())
	}
	for i, want := range []struct {
		cached            bool
		full, notModified int32
	}{{false, 1, 0}, {true, 1, 1}} {
		rep, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Cached != want.cached || full.Load() != want.full || notModified.Load() != want.notModified || rep.Tools < 10 {
			t.Errorf("start %d: cached %v, %d full and %d conditional fetches, %d tools", i+1, rep.Cached, full.Load(), notModified.Load(), rep.Tools)
		}
	}
	srv.Close()
	rep, err := open()
	if err != nil || !rep.Cached {
		t.Errorf("with the server down: %+v, %v", rep, err)
	}
	// Without a cache, a server that is down is an error that says so.
	s, _ := openapi.New(openapi.Config{Spec: srv.URL + "/api.yaml"}, openapi.Options{Name: "gh"})
	if _, err := s.Open(context.Background(), tools.NewRegistry()); err == nil || !strings.Contains(err.Error(), "fetch the document") {
		t.Errorf("no cache, server down: %v", err)
	}
}

// TestOperationIDsAreAliases (attack27 T6): a tool answers to its
// operation's operationId as the document spells it, so that a policy
// written with it (approval.required_for = ["t.createUser"]) means the
// tool; an operationId that is the tool's name, or none, adds nothing.
func TestOperationIDsAreAliases(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Parse([]byte(`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"servers":[{"url":"https://api.example.invalid"}],"paths":{
		"/users":{"post":{"operationId":"createUser","responses":{"200":{"description":"ok"}}},
		          "get":{"operationId":"list_users","responses":{"200":{"description":"ok"}}}},
		"/ping":{"get":{"responses":{"200":{"description":"ok"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := openapi.New(openapi.Config{Spec: "t.json"}, openapi.Options{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"t.create_user": {"createUser"}, "t.list_users": nil, "t.get_ping": nil} {
		tl, ok := reg.Get(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		if !slices.Equal(tl.Aliases, want) {
			t.Errorf("%s answers to %q, want %q", name, tl.Aliases, want)
		}
	}
	if !reg.MatchName("t.createUser", "t.create_user") || reg.MatchName("t.createUser", "t.list_users") {
		t.Error("a pattern naming the operationId does not mean its tool alone")
	}
}
