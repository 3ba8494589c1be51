package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// checkCoarse compares the in-process ranking of binary codes with the SQL
// scan in one transaction, and reports whether the copy answered.
func checkCoarse(tb testing.TB, s *Store, principal string, layers []memory.Layer, code []byte, k int) bool {
	tb.Helper()
	ctx := tb.Context()
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	got, ok, err := s.codes.nearest(ctx, tx, s.quant, principal, layers, code, k)
	if err != nil {
		tb.Fatal(err)
	}
	want, err := coarseSearchSQL(ctx, tx, principal, layers, code, k)
	if err != nil {
		tb.Fatal(err)
	}
	if ok && !slices.Equal(got, want) {
		tb.Fatalf("principal %q layers %v k %d: in-process ranking\n%v\nSQL ranking\n%v", principal, layers, k, got, want)
	}
	return ok
}

// embedOne is e's vector of text.
func embedOne(tb testing.TB, e memory.Embedder, text string) []float32 {
	tb.Helper()
	vs, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		tb.Fatal(err)
	}
	return vs[0]
}

// checkAll compares both rankings over a spread of queries, principals,
// layers and depths.
func checkAll(tb testing.TB, s *Store, seed uint64, principals ...string) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	for q := 0; q < 6; q++ {
		code := s.quant.Code(embedOne(tb, s.emb, synthText(r)))
		for _, p := range principals {
			for _, layers := range [][]memory.Layer{nil, {memory.Semantic}, {memory.Episodic, memory.Procedural}} {
				for _, k := range []int{1, 10, 200, 5000} {
					if !checkCoarse(tb, s, p, layers, code, k) {
						tb.Fatalf("principal %q: the in-process copy did not answer", p)
					}
				}
			}
		}
	}
}

// TestCodeIndexFollowsChanges checks that the in-process ranking of binary
// codes equals the SQL scan after every kind of change: inserts, layer
// and content updates, deletes by id and by filter, writes by another
// store on the same file (another process), a pruned log, a burst of
// changes, and a reindex with another quantizer.
func TestCodeIndexFollowsChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codes.db")
	s := openTest(t, Config{Path: path})
	ctx := t.Context()
	bob := as(ctx, "bob")
	fillSynthetic(t, s, 400, 21)
	fillSynthetic(t, s, 1, 22) // ids interleave below
	r := rand.New(rand.NewPCG(23, 23))
	var bobs []memory.Memory
	for i := 0; i < 150; i++ {
		bobs = append(bobs, mustRemember(t, s, bob, memory.RememberInput{Layer: memory.Layers[i%4], Content: synthText(r), Tags: []string{"b"}}))
	}
	checkAll(t, s, 1, "", "bob")

	t.Run("inserts", func(t *testing.T) {
		fillSynthetic(t, s, 50, 24)
		mustRemember(t, s, bob, memory.RememberInput{Content: "a new memory of bob about kubernetes"})
		checkAll(t, s, 2, "", "bob")
	})
	t.Run("updates", func(t *testing.T) {
		for i, m := range bobs[:20] {
			in := memory.UpdateInput{ID: m.ID}
			if i%2 == 0 {
				in.Layer = ptr(memory.Procedural)
			} else {
				in.Content = ptr(synthText(r))
			}
			if _, err := s.Update(bob, in); err != nil {
				t.Fatal(err)
			}
		}
		checkAll(t, s, 3, "", "bob")
	})
	t.Run("deletes", func(t *testing.T) {
		ids := []int64{bobs[20].ID, bobs[21].ID, bobs[40].ID}
		if _, err := s.Forget(bob, memory.ForgetInput{IDs: ids}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Forget(ctx, memory.ForgetInput{Filter: memory.Filter{Tags: []string{"t3"}}}); err != nil {
			t.Fatal(err)
		}
		checkAll(t, s, 4, "", "bob")
	})
	t.Run("another process", func(t *testing.T) {
		other := openTest(t, Config{Path: path})
		fillSynthetic(t, other, 30, 25)
		if _, err := other.Forget(bob, memory.ForgetInput{IDs: []int64{bobs[50].ID}}); err != nil {
			t.Fatal(err)
		}
		other.Close()
		checkAll(t, s, 5, "", "bob")
	})
	t.Run("pruned log", func(t *testing.T) {
		fillSynthetic(t, s, 5, 26)
		if _, err := s.w.Exec(`DELETE FROM memory_code_log WHERE seq < (SELECT max(seq) FROM memory_code_log)`); err != nil {
			t.Fatal(err)
		}
		checkAll(t, s, 6, "", "bob")
	})
	t.Run("burst", func(t *testing.T) {
		fillSynthetic(t, s, 1100, 27) // more changes than worth applying
		checkAll(t, s, 7, "", "bob")
	})
	t.Run("reindex", func(t *testing.T) {
		if _, err := s.Reindex(ctx, memory.NewHashEmbedder(128)); err != nil {
			t.Fatal(err)
		}
		checkAll(t, s, 8, "", "bob")
	})
}

// TestCodeIndexLimit checks that a principal whose codes do not fit is
// ranked in SQL, and that sets are evicted to make room.
func TestCodeIndexLimit(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	fillSynthetic(t, s, 300, 31)
	bob := as(ctx, "bob")
	r := rand.New(rand.NewPCG(32, 32))
	for i := 0; i < 100; i++ {
		mustRemember(t, s, bob, memory.RememberInput{Content: synthText(r)})
	}
	code := s.quant.Code(embedOne(t, s.emb, "deploy the database"))

	s.codes = newCodeIndex(s.quant.SetBytes(200)) // bob fits, the main principal does not
	if checkCoarse(t, s, "", nil, code, 10) {
		t.Fatal("a principal over the limit was held")
	}
	if !checkCoarse(t, s, "bob", nil, code, 10) {
		t.Fatal("bob was not held")
	}

	s.codes = newCodeIndex(s.quant.SetBytes(350)) // one at a time
	for i := 0; i < 4; i++ {
		for _, p := range []string{"", "bob"} {
			if !checkCoarse(t, s, p, nil, code, 10) {
				t.Fatalf("principal %q was not held", p)
			}
			if len(s.codes.sets) != 1 || s.codes.bytes > s.codes.limit {
				t.Fatalf("%d sets, %d bytes held, limit %d", len(s.codes.sets), s.codes.bytes, s.codes.limit)
			}
		}
	}

	s.codes = newCodeIndex(-1)
	if checkCoarse(t, s, "bob", nil, code, 10) {
		t.Fatal("a disabled copy answered")
	}
	// Recall works the same without the copy.
	s2 := openTest(t, Config{ExactSearchLimit: 10, CodeIndexBytes: -1})
	fillSynthetic(t, s2, 100, 33)
	if r, err := s2.Recall(ctx, memory.RecallInput{Query: "deploy the database"}); err != nil || r.Exact || len(r.Results) != 10 {
		t.Fatalf("recall without the copy: %v, exact %v, %d results", err, r.Exact, len(r.Results))
	}
}

// TestRescoreMatchesExact checks that re-scoring in Go (dot products of
// the stored float32 vectors) ranks and scores like the exact scan in SQL
// (sqlite-vec's cosine distance).
func TestRescoreMatchesExact(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	fillSynthetic(t, s, 500, 41)
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var all []int64
	rows, err := tx.Query(`SELECT memory_id FROM memory_vectors`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		all = append(all, id)
	}
	rows.Close()
	r := rand.New(rand.NewPCG(42, 42))
	for q := 0; q < 20; q++ {
		vs, err := memory.Embed(ctx, s.emb, []string{synthText(r)})
		if err != nil {
			t.Fatal(err)
		}
		v := vs[0]
		want, err := exactSearch(ctx, tx, "", memory.Filter{}, v, 50)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rescore(ctx, tx, all, v, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d re-scored, %d exact", len(got), len(want))
		}
		for i := range got {
			if math.Abs(got[i].Score-want[i].Score) > 1e-5 {
				t.Fatalf("rank %d: re-scored %v, exact %v", i, got[i], want[i])
			}
			// Ranks agree except where two scores are within float error.
			if got[i].ID != want[i].ID && math.Abs(got[i].Score-want[i].Score) > 1e-6 {
				t.Fatalf("rank %d: re-scored %v, exact %v", i, got[i], want[i])
			}
		}
	}
}

// TestCodeIndexConcurrent recalls through the in-process copy from several
// goroutines while another writes and deletes (run with -race).
func TestCodeIndexConcurrent(t *testing.T) {
	s := openTest(t, Config{ExactSearchLimit: 50})
	ctx := context.Background()
	fillSynthetic(t, s, 300, 51)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(52, 52))
		for i := 0; i < 40; i++ {
			m, err := s.Remember(ctx, memory.RememberInput{Content: synthText(r)})
			if err != nil {
				errs <- err
				return
			}
			if i%3 == 0 {
				if _, err := s.Forget(ctx, memory.ForgetInput{IDs: []int64{m.ID}}); err != nil {
					errs <- err
					return
				}
			}
		}
		close(stop)
	}()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 53))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Recall(ctx, memory.RecallInput{Query: synthText(r), Layer: memory.Layers[g%3]}); err != nil {
					errs <- fmt.Errorf("recall: %w", err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkAll(t, s, 9, "")
}
