package filter

import (
	"encoding/json"
	"os"
	"testing"
)

func BenchmarkTmpObserve(b *testing.B) {
	var cat struct {
		Tools []struct {
			Examples []struct {
				Result json.RawMessage `json:"result"`
			} `json:"examples"`
		} `json:"tools"`
	}
	raw, _ := os.ReadFile("../testdata/peers/catalog/bench.json")
	json.Unmarshal(raw, &cat)
	doc := cat.Tools[0].Examples[0].Result
	b.Logf("doc %d bytes", len(doc))
	f, _ := benchFilter(b)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		fl, _ := f.NewFlow(FlowOptions{})
		fl.Observe("bench.export_orders", doc, Provenance{})
	}
}
