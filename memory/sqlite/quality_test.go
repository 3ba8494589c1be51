package sqlite

import (
	"github.com/codecell/codecell/memory"

	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

type labelledMemory struct {
	Key     string       `json:"key"`
	Layer   memory.Layer `json:"layer"`
	Content string       `json:"content"`
	Tags    []string     `json:"tags"`
}

type labelledQuery struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
	Kind     string   `json:"kind"`
}

func readJSONL[T any](tb testing.TB, path string) []T {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// loadLabelled stores the labelled memories and returns the id of each key.
func loadLabelled(tb testing.TB, s *Store) (map[int64]string, []labelledQuery) {
	tb.Helper()
	mems := readJSONL[labelledMemory](tb, "testdata/recall_memories.jsonl")
	qs := readJSONL[labelledQuery](tb, "testdata/recall_queries.jsonl")
	if len(mems) < 200 || len(qs) < 40 {
		tb.Fatalf("labelled set has %d memories and %d queries; want at least 200 and 40", len(mems), len(qs))
	}
	ins := make([]memory.RememberInput, len(mems))
	for i, m := range mems {
		ins[i] = memory.RememberInput{Layer: m.Layer, Content: m.Content, Tags: m.Tags}
	}
	stored, err := s.RememberBatch(tb.Context(), ins)
	if err != nil {
		tb.Fatal(err)
	}
	keys := map[int64]string{}
	for i, m := range stored {
		keys[m.ID] = mems[i].Key
	}
	return keys, qs
}

// recallAt returns the mean share of each query's relevant memories found
// in the top k, over all queries and per kind of query.
func recallAt(tb testing.TB, s *Store, keys map[int64]string, qs []labelledQuery, mode string, k int) (float64, map[string]float64) {
	tb.Helper()
	var total float64
	byKind := map[string]float64{}
	count := map[string]int{}
	for _, q := range qs {
		r, err := s.Recall(tb.Context(), memory.RecallInput{Query: q.Query, Mode: mode, Limit: k})
		if err != nil {
			tb.Fatal(err)
		}
		found := 0
		for _, h := range r.Results {
			if slices.Contains(q.Relevant, keys[h.ID]) {
				found++
			}
		}
		share := float64(found) / float64(len(q.Relevant))
		total += share
		byKind[q.Kind] += share
		count[q.Kind]++
	}
	for kind := range byKind {
		byKind[kind] /= float64(count[kind])
	}
	return total / float64(len(qs)), byKind
}

// TestRecallQuality measures recall@5 on the labelled set with the default
// embedder, for each retriever alone and fused.
func TestRecallQuality(t *testing.T) {
	s := openTest(t, Config{})
	keys, qs := loadLabelled(t, s)
	results := map[string]float64{}
	for _, mode := range []string{memory.ModeVector, memory.ModeKeyword, memory.ModeHybrid} {
		r, byKind := recallAt(t, s, keys, qs, mode, 5)
		results[mode] = r
		t.Logf("recall@5 %-7s %.3f (keyword queries %.3f, paraphrases %.3f)", mode, r, byKind["keyword"], byKind["paraphrase"])
	}
	if results[memory.ModeHybrid] < 0.85 {
		t.Fatalf("hybrid recall@5 is %.3f, want >= 0.85", results[memory.ModeHybrid])
	}
}
