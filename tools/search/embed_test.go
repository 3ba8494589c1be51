package search_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
)

// conceptServer is an OpenAI-compatible embeddings endpoint computing
// deterministic vectors: each word adds its own hashed coordinate and,
// for the words of one of a few made-up concepts, the concept's
// coordinate, weighted high. Texts that share a concept are close
// whatever their words: what a real embedding model does for meaning,
// and what the lexical ranking alone cannot see here. It counts the
// texts it embedded, and fails while fail is set.
func conceptServer(t *testing.T, fail *atomic.Bool, texts *atomic.Int32) *httptest.Server {
	concepts := map[string]int{
		"zorble": 0, "quux": 0, // a made-up thing and its made-up other name
		"frobnicate": 1, "twiddle": 1,
	}
	const dims = 64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "model not loaded", http.StatusBadRequest)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i, text := range req.Input {
			texts.Add(1)
			v := make([]float32, dims)
			for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
				if c, ok := concepts[w]; ok {
					v[c] += 4
					continue
				}
				h := fnv.New32a()
				h.Write([]byte(w))
				v[2+int(h.Sum32()%(dims-2))]++
			}
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSearchEmbeddings: with an OpenAI-compatible embedder, a query
// whose words no tool has finds the tool its embedding is close to; the
// tools are embedded once; and an embedder that fails leaves search to
// its ranking of words. The embedder here is the real client
// (memory.OpenAIEmbedder) against a test server whose vectors stand for
// meaning by a table: it shows the fusion and its plumbing, not what a
// real model ranks.
func TestSearchEmbeddings(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	if err := r.Register(
		tools.Tool{Name: "lab.make_zorble", Summary: "Make a zorble from parts.", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: noop},
		tools.Tool{Name: "lab.frobnicate_widget", Summary: "Frobnicate a widget.", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: noop},
	); err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	var texts atomic.Int32
	srv := conceptServer(t, &fail, &texts)
	emb, err := memory.NewOpenAIEmbedder(memory.OpenAIConfig{URL: srv.URL + "/v1", Model: "concepts", Dimensions: 64, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ix *search.Index, q string) []string {
		hits, err := ix.SearchContext(t.Context(), search.Query{Text: q, Limit: 5, Detail: search.DetailName})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Name)
		}
		return out
	}
	plain := newIndex(t, r)
	withEmb := newIndex(t, r)
	withEmb.SetEmbedder(emb, nil)
	const q = "build a quux"
	if got := names(plain, q); len(got) > 0 && got[0] == "lab.make_zorble" {
		t.Fatalf("without embeddings %q already finds lab.make_zorble first (%v): the test shows nothing", q, got)
	}
	if got := names(withEmb, q); len(got) == 0 || got[0] != "lab.make_zorble" {
		t.Errorf("with embeddings %q = %v, want lab.make_zorble first", q, got)
	}
	// A query the words answer keeps its answer.
	if got := names(withEmb, "refund a customer's payment"); len(got) == 0 || got[0] != "payments.refund_charge" {
		t.Errorf("with embeddings, refund a customer's payment = %v, want payments.refund_charge first", got)
	}
	// The tools were embedded on the first search; a search now embeds
	// its query only.
	before := texts.Load()
	names(withEmb, "frobnicate something")
	if got := texts.Load() - before; got != 1 {
		t.Errorf("a later search embedded %d texts, want 1 (its query)", got)
	}
	if got := names(withEmb, "twiddle a widget"); len(got) == 0 || got[0] != "lab.frobnicate_widget" {
		t.Errorf("with embeddings, twiddle a widget = %v, want lab.frobnicate_widget first", got)
	}
	fail.Store(true)
	if got := names(withEmb, "refund a customer's payment"); len(got) == 0 || got[0] != "payments.refund_charge" {
		t.Errorf("with the embedder failing, refund a customer's payment = %v, want payments.refund_charge first (words alone)", got)
	}
}

func noop(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
