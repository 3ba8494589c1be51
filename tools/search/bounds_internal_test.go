package search

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestIndexedTextBounded: a tool's text is indexed up to maxIndexedText
// of each of its description, its parameters' descriptions and its
// summary — a hostile upstream's tool whose description was 1.5 million
// distinct words made every principal's search cost seconds of CPU and
// hundreds of MiB (attack15 I8) — and a description within the bound is
// indexed whole.
func TestIndexedTextBounded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 9)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	many := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"q": map[string]any{"type": "string", "description": many(100_000)},
	}})
	hostile := &tools.Tool{Name: "evil__get", Summary: many(50_000), Description: "Get the thing. " + many(200_000), InputSchema: schema}
	tt := analyzeTool(hostile, nil)
	total := 0
	for f := range numFields {
		total += len(tt.Fields[f])
	}
	if limit := 3 * maxIndexedText / 4; total > limit {
		t.Errorf("a hostile tool indexed %d terms, past %d", total, limit)
	}
	plain := &tools.Tool{Name: "api__get", Summary: "Get a widget", Description: "Get a widget. " + many(maxIndexedText/12)}
	if got, want := len(analyzeTool(plain, nil).Fields[fieldText]), maxIndexedText/12; got < want {
		t.Errorf("a description within the bound indexed %d terms of its %d words", got, want)
	}
}
