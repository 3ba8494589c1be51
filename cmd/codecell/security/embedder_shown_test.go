package security

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestRemoteEmbedderSeesFilteredText (issue 19, attack27 T5): an
// OpenAI-compatible embeddings endpoint is another party, as an llm
// provider is. What a program remembers and recalls by reaches it as the
// output filter shows it: a password the run read from a tool, a key,
// and the value behind a token the model passed are tokens there — the
// same token for the same value, so the token's memory is recalled by
// it — while the store keeps what the program gave.
func TestRemoteEmbedderSeesFilteredText(t *testing.T) {
	var mu sync.Mutex
	var inputs []string
	emb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Input []string `json:"input"`
		}
		json.Unmarshal(b, &req)
		mu.Lock()
		inputs = append(inputs, req.Input...)
		mu.Unlock()
		var data []string
		for i, in := range req.Input {
			// A bag of the text's byte trigrams: texts that share
			// words are near.
			v := make([]float64, 64)
			for j := 0; j+3 <= len(in); j++ {
				v[(int(in[j])*31*31+int(in[j+1])*31+int(in[j+2]))%64]++
			}
			vs := make([]string, len(v))
			for j, x := range v {
				vs[j] = fmt.Sprint(x + 0.01)
			}
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%s]}`, i, strings.Join(vs, ",")))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":"m","data":[%s]}`, strings.Join(data, ","))
	}))
	defer emb.Close()
	api := newHostileAPI(t)
	extra := fmt.Sprintf("[memory]\nembedder = \"openai\"\nembedder_url = %q\nembedder_model = \"m\"\nembedder_dimensions = 64\n", emb.URL+"/v1")
	s := start(t, "--config", gateConfig(t, api, nil, extra))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	rec := alice.run(`const s = await vault.get_secret(); await memory.remember({content: "dana's login is " + s.password + ", key " + s.api_key}); return s.email`)
	if rec.Status != "ok" {
		t.Fatalf("remember: %s", rec.raw)
	}
	tok := ""
	if i := strings.Index(rec.raw, "⟦email:"); i >= 0 {
		tok = rec.raw[i : i+strings.Index(rec.raw[i:], "⟧")+len("⟧")]
	}
	if tok == "" {
		t.Fatalf("no e-mail token in %s", rec.raw)
	}
	// The model, which sees only the token, has a program remember it and
	// recall by it; the store keeps the value (a program reads it back),
	// and the memory is found by its token.
	rec = alice.run(`await memory.remember({content: "contact: ` + tok + `"});
		const r = await memory.recall({query: "` + tok + `", mode: "vector", limit: 1});
		return {raw: r.results.length > 0 && r.results[0].content === "contact: " + (await vault.get_secret()).email}`)
	if rec.Status != "ok" || !strings.Contains(string(rec.Result), `"raw":true`) {
		t.Errorf("the token's memory is not recalled by it with its value as stored: %s", rec.raw)
	}
	mu.Lock()
	all := strings.Join(inputs, "\n")
	mu.Unlock()
	noPlanted(t, "what the embeddings endpoint received", all)
	for _, want := range []string{"dana's login is ⟦password:", "contact: " + tok, "\n" + tok} {
		if !strings.Contains(all, want) {
			t.Errorf("the embeddings endpoint did not receive %q:\n%s", want, all)
		}
	}
}
