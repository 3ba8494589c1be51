package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// failingEmbedder fails or returns vectors of the wrong length, on demand.
type failingEmbedder struct {
	dims  int
	fail  atomic.Bool
	wrong atomic.Bool
}

func (f *failingEmbedder) Name() string { return "test-failing" }

func (f *failingEmbedder) Dimensions() int { return f.dims }

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.fail.Load() {
		return nil, &memory.EmbedError{Endpoint: "http://embedder.test/v1/embeddings", Err: fmt.Errorf("connection refused"), Attempts: 4}
	}
	d := f.dims
	if f.wrong.Load() {
		d = f.dims / 2
	}
	out, err := memory.NewHashEmbedder(f.dims).Embed(ctx, texts)
	for i, v := range out {
		out[i] = v[:d]
	}
	return out, err
}

func TestStoreWithFailingEmbedder(t *testing.T) {
	e := &failingEmbedder{dims: 64}
	s := openTest(t, Config{Embedder: e})
	ctx := t.Context()
	m := mustRemember(t, s, ctx, memory.RememberInput{Content: "the first memory"})
	before, _ := s.Stats(ctx)

	e.fail.Store(true)
	_, err := s.Remember(ctx, memory.RememberInput{Content: "lost while the embedder is down"})
	te := wantCode(t, err, memory.CodeEmbedderUnavailable)
	if !strings.Contains(te.Message, "connection refused") || !strings.Contains(te.Message, "nothing was stored") {
		t.Fatalf("message: %s", te.Message)
	}
	_, err = s.Recall(ctx, memory.RecallInput{Query: "first"})
	wantCode(t, err, memory.CodeEmbedderUnavailable)
	_, err = s.Update(ctx, memory.UpdateInput{ID: m.ID, Content: ptr("changed")})
	wantCode(t, err, memory.CodeEmbedderUnavailable)
	// Keyword recall needs no embedder.
	if r, err := s.Recall(ctx, memory.RecallInput{Query: "first", Mode: memory.ModeKeyword}); err != nil || len(r.Results) != 1 {
		t.Fatalf("keyword recall while the embedder is down: %v", err)
	}
	e.fail.Store(false)
	e.wrong.Store(true)
	_, err = s.Remember(ctx, memory.RememberInput{Content: "wrong size"})
	te = wantCode(t, err, memory.CodeEmbedderMismatch)
	if !strings.Contains(te.Message, "32 dimensions, want 64") {
		t.Fatalf("message: %s", te.Message)
	}
	e.wrong.Store(false)
	after, _ := s.Stats(ctx)
	got, _ := s.Get(ctx, m.ID)
	if after.Memories != before.Memories || got.Content != "the first memory" {
		t.Fatalf("store changed by failures: %d -> %d memories, content %q", before.Memories, after.Memories, got.Content)
	}
	var n int
	s.r.QueryRow(`SELECT count(*) FROM memory_vectors`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d vectors, want 1", n)
	}
}

func TestEmbedderMismatchAndReindex(t *testing.T) {
	path := t.TempDir() + "/m.db"
	s := openTest(t, Config{Path: path})
	ctx := t.Context()
	m := mustRemember(t, s, ctx, memory.RememberInput{Content: "kubernetes cluster upgrade procedure", Tags: []string{"ops"}})
	mustRemember(t, s, ctx, memory.RememberInput{Content: "lunch is at noon"})
	s.Close()

	other := memory.NewHashEmbedder(128)
	s2 := openTest(t, Config{Path: path, Embedder: other})
	st, err := s2.EmbedderStatus(ctx)
	if !errors.Is(err, memory.ErrEmbedderMismatch) || st.Stored != memory.NewWordsEmbedder().Name() || st.Name != "codecell-hash-v1-128" {
		t.Fatalf("status: %+v %v", st, err)
	}
	_, err = s2.Remember(ctx, memory.RememberInput{Content: "x"})
	te := wantCode(t, err, memory.CodeEmbedderMismatch)
	if !strings.Contains(te.Message, "codecell memory reindex") || !strings.Contains(te.Message, "488 dimensions") {
		t.Fatalf("mismatch message: %s", te.Message)
	}
	_, err = s2.Recall(ctx, memory.RecallInput{Query: "x"})
	wantCode(t, err, memory.CodeEmbedderMismatch)
	// Server state still works.
	if _, _, err := s2.WriteFile(ctx, "a.txt", []byte("x")); err != nil {
		t.Fatalf("workspace during mismatch: %v", err)
	}
	// A failing reindex changes nothing.
	bad := &failingEmbedder{dims: 64}
	bad.fail.Store(true)
	if _, err := s2.Reindex(ctx, bad); err == nil {
		t.Fatal("reindex with a failing embedder succeeded")
	}
	if _, err := s2.EmbedderStatus(ctx); !errors.Is(err, memory.ErrEmbedderMismatch) {
		t.Fatalf("status after a failed reindex: %v", err)
	}
	rep, err := s2.Reindex(ctx, other)
	if err != nil || rep.Memories != 2 || rep.Previous != memory.NewWordsEmbedder().Name() {
		t.Fatalf("reindex: %+v %v", rep, err)
	}
	if _, err := s2.EmbedderStatus(ctx); err != nil {
		t.Fatalf("status after reindex: %v", err)
	}
	r, err := s2.Recall(ctx, memory.RecallInput{Query: "upgrade the kubernetes cluster", Mode: memory.ModeVector})
	if err != nil || r.Results[0].ID != m.ID {
		t.Fatalf("recall after reindex: %+v %v", r, err)
	}
	var blob []byte
	s2.r.QueryRow(`SELECT embedding FROM memory_vectors WHERE memory_id = ?`, m.ID).Scan(&blob)
	if len(blob) != 128*4 {
		t.Fatalf("vector of %d bytes after reindex, want %d", len(blob), 128*4)
	}
	var norm float64
	v, _ := memory.DecodeVector(blob, nil)
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-4 {
		t.Fatalf("stored vector norm %v", norm)
	}
}
