package memory

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"deployment": "deploy", "deployed": "deploi", "deploying": "deploi", "caresses": "caress", "ponies": "poni",
		"relational": "relat", "hopping": "hop", "generalization": "gener", "running": "run", "go": "go", "naïve": "naïve",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHashEmbedder(t *testing.T) {
	e := NewHashEmbedder(DefaultDimensions)
	ctx := t.Context()
	vs, err := e.Embed(ctx, []string{"Deploying the billing service", "deployment of billing services", "my cat sleeps all afternoon", ""})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:3] {
		if len(v) != DefaultDimensions {
			t.Fatalf("vector %d has %d dims", i, len(v))
		}
		normalize(v)
	}
	near, far := Dot(vs[0], vs[1]), Dot(vs[0], vs[2])
	if near < 0.5 || far > 0.2 {
		t.Fatalf("similarity of paraphrase %.3f, of unrelated %.3f", near, far)
	}
	again, _ := e.Embed(ctx, []string{"Deploying the billing service"})
	normalize(again[0])
	for i := range again[0] {
		if again[0][i] != vs[0][i] {
			t.Fatal("the hashing embedder is not deterministic")
		}
	}
	for _, x := range vs[3] {
		if x != 0 {
			t.Fatal("empty text has a non-zero vector")
		}
	}
}

// fakeEmbeddings serves /v1/embeddings with the hashing embedder's vectors
// (of dims values), after behave decides what to do with a request.
func fakeEmbeddings(t *testing.T, dims int, behave func(n int32, w http.ResponseWriter) bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	h := NewHashEmbedder(dims)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if behave != nil && !behave(n, w) {
			return
		}
		var req embedRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
			// Like some servers, echo the key it was sent.
			http.Error(w, `{"error":{"message":"invalid api key `+strings.TrimPrefix(got, "Bearer ")+`"}}`, http.StatusUnauthorized)
			return
		}
		vs, _ := h.Embed(r.Context(), req.Input)
		var resp embedResponse
		// Answer out of order: clients must sort by index.
		for i := len(vs) - 1; i >= 0; i-- {
			resp.Data = append(resp.Data, struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			}{i, vs[i]})
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func newOpenAI(t *testing.T, url string, dims int, mod func(*OpenAIConfig)) *OpenAIEmbedder {
	t.Helper()
	cfg := OpenAIConfig{URL: url + "/v1", Model: "test-embed", Dimensions: dims, APIKeyEnv: "TEST_EMBED_KEY",
		Getenv: func(k string) string {
			if k == "TEST_EMBED_KEY" {
				return "sk-test-123"
			}
			return ""
		},
		Backoff: time.Millisecond, Timeout: 2 * time.Second, BatchSize: 3}
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewOpenAIEmbedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenAIEmbedder(t *testing.T) {
	srv, calls := fakeEmbeddings(t, 64, nil)
	e := newOpenAI(t, srv.URL, 64, nil)
	texts := []string{"a", "b", "c", "d", "e", "f", "g"}
	vs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 7 || calls.Load() != 3 {
		t.Fatalf("%d vectors in %d calls; want 7 in 3 batches", len(vs), calls.Load())
	}
	want, _ := NewHashEmbedder(64).Embed(t.Context(), texts)
	for i := range vs {
		for j := range vs[i] {
			if vs[i][j] != want[i][j] {
				t.Fatalf("vector %d differs: responses not put back in index order", i)
			}
		}
	}
	if e.Name() != "openai:test-embed" || e.Dimensions() != 64 {
		t.Fatalf("name %s dims %d", e.Name(), e.Dimensions())
	}
}

func TestOpenAIEmbedderRetries(t *testing.T) {
	srv, calls := fakeEmbeddings(t, 64, func(n int32, w http.ResponseWriter) bool {
		switch n {
		case 1:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return false
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return false
		}
		return true
	})
	e := newOpenAI(t, srv.URL, 64, nil)
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatalf("after two retryable failures: %v", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls, want 3", calls.Load())
	}
}

func TestOpenAIEmbedderFailures(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	defer slow.Close()
	wrongDims, _ := fakeEmbeddings(t, 32, nil)
	always500, calls500 := fakeEmbeddings(t, 64, func(_ int32, w http.ResponseWriter) bool {
		http.Error(w, "boom", http.StatusInternalServerError)
		return false
	})
	unauthorized, callsUnauth := fakeEmbeddings(t, 64, nil)

	cases := []struct {
		name     string
		e        *OpenAIEmbedder
		sentinel error
		mention  []string
	}{
		{"down", newOpenAI(t, downURL, 64, nil), ErrEmbedder, []string{downURL, "connection refused", "4 attempts"}},
		{"slow", newOpenAI(t, slow.URL, 64, func(c *OpenAIConfig) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = 1 }), ErrEmbedder, []string{"no answer within 50ms", "2 attempts"}},
		{"wrong dimension", newOpenAI(t, wrongDims.URL, 64, nil), ErrEmbedderMismatch, []string{"32-dimension", "configured dimensions are 64"}},
		{"server error", newOpenAI(t, always500.URL, 64, func(c *OpenAIConfig) { c.MaxRetries = 2 }), ErrEmbedder, []string{"HTTP 500", "boom", "3 attempts"}},
		{"unauthorized", newOpenAI(t, unauthorized.URL, 64, func(c *OpenAIConfig) { c.Getenv = func(string) string { return "sk-wrong-456" } }), ErrEmbedder, []string{"HTTP 401", "invalid api key [redacted]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.e.Embed(t.Context(), []string{"hello"})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.sentinel) {
				t.Fatalf("%v does not wrap %v", err, c.sentinel)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "sk-test-123") || strings.Contains(err.Error(), "sk-wrong-456") {
				t.Fatalf("error leaks the API key: %v", err)
			}
		})
	}
	if calls500.Load() != 3 {
		t.Errorf("500s: %d calls, want 3", calls500.Load())
	}
	if callsUnauth.Load() != 1 {
		t.Errorf("401 retried: %d calls", callsUnauth.Load())
	}
}

func TestOpenAIConfigErrors(t *testing.T) {
	for _, cfg := range []OpenAIConfig{
		{URL: "ftp://x", Model: "m", Dimensions: 8},
		{URL: "http://user:pass@x/v1", Model: "m", Dimensions: 8},
		{URL: "http://x/v1", Dimensions: 8},
		{URL: "http://x/v1", Model: "m"},
	} {
		if _, err := NewOpenAIEmbedder(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

var _ = tools.CodeInvalidArguments

func BenchmarkQuantize(b *testing.B) {
	e := NewHashEmbedder(DefaultDimensions)
	vs, err := Embed(b.Context(), e, []string{"deploy the billing service to the staging cluster after the migration"})
	if err != nil {
		b.Fatal(err)
	}
	q := NewQuantizer(DefaultDimensions)
	b.ReportAllocs()
	for b.Loop() {
		q.Code(vs[0])
	}
}

// TestFWHT checks the unrolled transform against the textbook loop, to the
// bit: stored binary codes depend on it.
func TestFWHT(t *testing.T) {
	ref := func(x []float32) {
		for h := 1; h < len(x); h *= 2 {
			for i := 0; i < len(x); i += 2 * h {
				for j := i; j < i+h; j++ {
					a, b := x[j], x[j+h]
					x[j], x[j+h] = a+b, a-b
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 4, 8, 64, 512, 1024} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		want := slices.Clone(x)
		ref(want)
		fwht(x)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: x[%d] = %v, want %v", n, i, x[i], want[i])
			}
		}
	}
}

// TestEmbedShowsRemoteEmbedders (issue 19, attack27 T5): a remote
// embedder is sent a text as the context's Shown makes it, and nothing
// without one; an in-process embedder embeds the text as given.
func TestEmbedShowsRemoteEmbedders(t *testing.T) {
	srv, calls := fakeEmbeddings(t, 64, nil)
	remote := newOpenAI(t, srv.URL, 64, nil)
	local := NewHashEmbedder(64)
	texts := []string{"pw hunter2", "mail dana@example.com"}
	shown := func(s string) (string, error) { return strings.ReplaceAll(s, "hunter2", "⟦password:1a2b⟧"), nil }

	_, err := Embed(t.Context(), remote, texts)
	if tools.CodeOf(err) != CodeEmbedderUnavailable || calls.Load() != 0 {
		t.Fatalf("a remote embedder without a Shown: err %v, %d calls; want %s and none", err, calls.Load(), CodeEmbedderUnavailable)
	}
	ctx := WithShown(t.Context(), shown)
	got, err := Embed(ctx, remote, texts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Embed(t.Context(), local, []string{"pw ⟦password:1a2b⟧", texts[1]})
	if !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("the remote embedder was not sent the texts as shown")
	}
	got, _ = Embed(ctx, local, texts)
	raw, _ := Embed(t.Context(), local, texts)
	if !slices.Equal(got[0], raw[0]) {
		t.Fatalf("an in-process embedder was given the texts as shown, not as stored")
	}
	failing := WithShown(t.Context(), func(string) (string, error) { return "", errors.New("held") })
	if _, err := Embed(failing, remote, texts); err == nil || calls.Load() != 1 {
		t.Fatalf("a Shown that fails: err %v, %d calls; want its error and no call", err, calls.Load())
	}
}
