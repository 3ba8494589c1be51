package filter

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// crowdedResult is a tool result of n values of about size bytes that all
// begin with head (8 bytes) when it is set, and with 8 random bytes when
// it is not, their tails random and of 40 lengths (attack21 A2's shape).
func crowdedResult(r *rand.Rand, head string, n, size int) json.RawMessage {
	const abc = "abcdefghijklmnopqrstuvwxyz0123456789"
	items := make([]string, n)
	for i := range items {
		var b strings.Builder
		if head != "" {
			b.WriteString(head)
		} else {
			for range 8 {
				b.WriteByte(abc[r.IntN(len(abc))])
			}
		}
		b.WriteByte('-')
		for range size - 40 + i%40 {
			b.WriteByte(abc[r.IntN(len(abc))])
		}
		items[i] = b.String()
	}
	doc, _ := json.Marshal(map[string]any{"items": items})
	return doc
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestCrowdedValuesCounted (attack21 A2): the automata of the values of
// crowded heads count in what a flow keeps, so that values of one head
// keep no more than values of distinct heads do — MaxBytes and little
// more — and those past it are lost, a rule's calls refused: 44,000
// values of 240 bytes of one head had kept 230 MB of automata, the
// flow's 16 MiB counting the values alone.
func TestCrowdedValuesCounted(t *testing.T) {
	f := newTestFilter(t, Config{})
	rules := []Rule{{From: "util.*", To: "http.*"}}
	for _, tc := range []struct {
		name, head string
		size       int
	}{
		{"distinct heads", "", 240},
		{"one head", "zzzzzzzz", 240},
		{"one head, short values", "zzzzzzzz", 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(21, 2))
			const maxBytes = 8 << 20
			results := make([]json.RawMessage, 11)
			for i := range results {
				results[i] = crowdedResult(r, tc.head, 4000, tc.size)
			}
			before := liveHeap() // the results are the program's
			fl := newTestFlow(t, f, FlowOptions{Rules: rules, MaxBytes: maxBytes})
			for _, res := range results {
				fl.Observe("util.echo", res, Provenance{})
			}
			st := fl.Stats()
			grew := liveHeap() - before
			runtime.KeepAlive(fl)
			runtime.KeepAlive(results)
			t.Logf("%+v, heap +%d KiB", st, grew>>10)
			if st.Bytes > maxBytes || grew > maxBytes*5/4 {
				t.Errorf("a flow of MaxBytes %d KiB counted %d KiB and kept %d KiB of heap", maxBytes>>10, st.Bytes>>10, grew>>10)
			}
			var fe *FlowError
			if err := fl.Check("http.post", json.RawMessage(`{"v":"hello there"}`)); st.Dropped == 0 || !errors.As(err, &fe) || !fe.Untracked {
				t.Errorf("values past the bound: Dropped %d, Check = %v", st.Dropped, err)
			}
		})
	}
}

// acFixedBytes is what an automaton allocates whatever its values: a
// flow's index has a few levels, each with one.
const acFixedBytes = 2048

// TestCrowdedBuildCounted: what building the automata of crowded values
// allocates, levels merged and their automata rebuilt (an upper bound of
// the build's peak), is within what acCost counts for the values.
func TestCrowdedBuildCounted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	const abc = "abcdefghijklmnopqrstuvwxyz0123456789"
	for _, size := range []int{12, 16, 40, 256} {
		tab := &testTable{}
		var ix valueIndex
		n, count, worst := 0, 0, 0.0
		for batch := range 40 {
			for range 1 + batch*batch {
				b := []byte("zzzzzzzz")
				for range r.IntN(size - 7) {
					b = append(b, abc[r.IntN(len(abc))])
				}
				id := int32(len(tab.pats))
				tab.pats = append(tab.pats, string(b))
				if cn, _ := ix.crowdedBytes(b); cn == 0 && ix.crowd[load8s(string(b))] {
					t.Fatalf("crowdedBytes(%q) = 0 for a crowded head", b)
				}
				ix.add(tab.pats[id], id, tab, 1)
				n += len(b)
				count++
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			ix.flush()
			runtime.ReadMemStats(&m1)
			if count > 2*crowdLimit {
				// The automaton's fixed part (its root's table, 1 KiB) aside.
				worst = max(worst, float64(m1.TotalAlloc-m0.TotalAlloc-acFixedBytes)/float64(acCost(n, count)))
			}
		}
		t.Logf("values of up to %d bytes: a build allocates at most %.2f of what acCost counts", size, worst)
		if worst > 1 {
			t.Errorf("values of up to %d bytes: a build allocated %.2f× what acCost counts", size, worst)
		}
	}
}

// TestCrowdedValuesUnderKeep: what an observation asks FlowOptions.Keep
// to hold counts values without their automata; a crowded value that
// does not fit what Keep holds but fits MaxBytes makes the observation
// ask Keep again, so that none is lost below MaxBytes — and what Keep
// holds covers what the flow counts.
func TestCrowdedValuesUnderKeep(t *testing.T) {
	f := newTestFilter(t, Config{})
	var held int64
	fl := newTestFlow(t, f, FlowOptions{Rules: []Rule{{From: "util.*", To: "http.*"}}, Keep: func(n int64) error {
		held = max(held, n)
		return nil
	}})
	r := rand.New(rand.NewPCG(4, 4))
	for range 4 {
		fl.Observe("util.echo", crowdedResult(r, "zzzzzzzz", 300, 60), Provenance{})
	}
	st := fl.Stats()
	if st.Dropped != 0 || st.Values < 1200 || int64(st.Bytes) > held {
		t.Errorf("%+v, Keep asked for %d bytes at most: crowded values lost below MaxBytes, or kept past what Keep holds", st, held)
	}
	if err := fl.Check("http.post", json.RawMessage(`{"v":"hello there"}`)); err != nil {
		t.Errorf("Check with every value kept = %v", err)
	}
}

// TestCrowdedSensitiveValuesCounted: addresses of one local part's head,
// tracked on a flow without a rule (the sensitive values, in both of its
// indexes), keep no more than MaxBytes and little more either (attack21
// A2 with ATTACK21_EMAILS: +398 MiB on a server with no rule).
func TestCrowdedSensitiveValuesCounted(t *testing.T) {
	f := newTestFilter(t, Config{})
	r := rand.New(rand.NewPCG(8, 9))
	const abc = "abcdefghijklmnopqrstuvwxyz0123456789"
	rnd := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = abc[r.IntN(len(abc))]
		}
		return string(b)
	}
	results := make([]json.RawMessage, 11)
	for i := range results {
		items := make([]string, 4000)
		for j := range items {
			items[j] = "zzzzzzzz" + rnd(20+j%30) + "@" + rnd(60) + "." + rnd(60) + ".com"
		}
		results[i], _ = json.Marshal(map[string]any{"items": items})
	}
	const maxBytes = 8 << 20
	before := liveHeap()
	fl := newTestFlow(t, f, FlowOptions{MaxBytes: maxBytes})
	for _, res := range results {
		fl.Observe("util.echo", res, Provenance{})
	}
	st := fl.Stats()
	grew := liveHeap() - before
	runtime.KeepAlive(fl)
	runtime.KeepAlive(results)
	t.Logf("%+v, heap +%d KiB", st, grew>>10)
	if st.Bytes > maxBytes || grew > maxBytes*5/4 || st.Dropped == 0 {
		t.Errorf("a flow of MaxBytes %d KiB counted %d KiB and kept %d KiB of heap, %d values dropped", maxBytes>>10, st.Bytes>>10, grew>>10, st.Dropped)
	}
}

// TestFilteringAutomataHeld: the automata an output's filtering builds
// over the values it acted on (the sweep's; with a flow, the known-value
// stage's) are held with its findings: 10,000 distinct addresses of one
// head had allocated 87 MB to filter, against 15 MB held (16 MB for the
// same addresses of distinct heads).
func TestFilteringAutomataHeld(t *testing.T) {
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	r := rand.New(rand.NewPCG(1, 2))
	const abc = "abcdefghijklmnopqrstuvwxyz0123456789"
	rnd := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = abc[r.IntN(len(abc))]
		}
		return string(b)
	}
	for _, flow := range []bool{false, true} {
		var over [2]int64 // allocated past held: distinct heads, one head
		for k, head := range []string{"", "zzzzzzzz"} {
			items := make([]string, 10000)
			for i := range items {
				h := head
				if h == "" {
					h = rnd(8)
				}
				items[i] = h + rnd(20+i%30) + "@" + rnd(60) + "." + rnd(60) + ".com"
			}
			doc, _ := json.Marshal(items)
			opts := Options{Vault: v}
			if flow {
				opts.Flow = newTestFlow(t, f, FlowOptions{})
			}
			var held int64
			opts.Findings = func(n int64) error { held = n; return nil }
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			if _, err := f.Apply(Input{Result: doc}, opts); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
			over[k] = alloc - held
			t.Logf("flow %v, head %q: held %d KiB, allocated %d KiB", flow, head, held>>10, alloc>>10)
		}
		if over[1] > over[0]+4<<20 {
			t.Errorf("flow %v: filtering addresses of one head allocated %d KiB past what it held, of distinct heads %d KiB", flow, over[1]>>10, over[0]>>10)
		}
	}
}
