package filter

import (
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// addresses is n distinct e-mail addresses, space-separated.
func addresses(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("u" + strconv.Itoa(i) + "@example.com ")
	}
	return b.String()
}

// TestFindingsHeldBeforeActedOn: the filter asks Options.Findings to hold
// its findings before it acts on them, and stops once it refuses — with
// nothing of the input shown (attack18 K7).
func TestFindingsHeldBeforeActedOn(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	text := addresses(5000)
	raw, _ := json.Marshal(map[string]any{"a": text, "b": []string{"x@example.org", "y@example.org"}})
	refused := errors.New("no more")
	for _, limit := range []int{0, 1000, 4999} {
		var asked []int64
		hold := func(n int64) error {
			asked = append(asked, n)
			if n > int64(limit)*FindingBytes {
				return refused
			}
			return nil
		}
		v := newTestVault(t, VaultOptions{})
		_, err := f.Apply(Input{Result: raw, Logs: []string{text}}, Options{Vault: v, Findings: hold})
		var fe *FindingsError
		if !errors.As(err, &fe) || !errors.Is(err, refused) {
			t.Fatalf("limit %d: Apply: %v, want a *FindingsError", limit, err)
		}
		if v.Len() > limit {
			t.Errorf("limit %d: the vault took %d tokens", limit, v.Len())
		}
		if len(asked) == 0 || len(asked) > 3+limit*FindingBytes/findingsStep {
			t.Errorf("limit %d: the hold was asked %v", limit, asked)
		}
		out, err := f.ApplyTextHeld(text, Options{Vault: v, Findings: hold, Budget: -1})
		if !errors.As(err, &fe) || out.Text != "" {
			t.Fatalf("limit %d: ApplyTextHeld: %q, %v", limit, out.Text, err)
		}
		// ApplyText scans the head it shows: refused only below its
		// findings, and showing nothing of the text then.
		if shown := f.ApplyText(text, Options{Vault: v, Findings: hold}); strings.Contains(shown.Text, "@example.com") || limit == 0 && !strings.Contains(shown.Text, "not shown") {
			t.Errorf("limit %d: ApplyText shows %.80q", limit, shown.Text)
		}
	}
	// Enough held: the same output as without a hold.
	var asked []int64
	hold := func(n int64) error { asked = append(asked, n); return nil }
	v := newTestVault(t, VaultOptions{})
	held, err := f.Apply(Input{Result: raw}, Options{Vault: v, Findings: hold})
	if err != nil {
		t.Fatal(err)
	}
	free, _ := f.Apply(Input{Result: raw}, Options{Vault: v})
	if string(held.Full) != string(free.Full) {
		t.Error("a held filtering's output differs")
	}
	if last := asked[len(asked)-1]; last < 5002*FindingBytes || last > 5002*FindingBytes+findingsStep {
		t.Errorf("held %v for 5,002 findings", asked)
	}
	// Repeats of one value cost RepeatBytes each.
	asked = nil
	if _, err := f.Apply(Input{Result: json.RawMessage(`"` + strings.Repeat("bob@example.com ", 5000) + `"`)}, Options{Vault: v, Findings: hold}); err != nil {
		t.Fatal(err)
	}
	if last := asked[len(asked)-1]; last < 5000*RepeatBytes || last > 5000*RepeatBytes+FindingBytes+findingsStep {
		t.Errorf("held %v for 5,000 occurrences of one address", asked)
	}
	// Nothing found: never asked.
	asked = nil
	if _, err := f.Apply(Input{Result: json.RawMessage(`{"a":"nothing here"}`)}, Options{Findings: hold}); err != nil || len(asked) > 0 {
		t.Errorf("no finding: %v, asked %v", err, asked)
	}
}

// BenchmarkFindingsMemory measures the heap filtering takes a finding
// (FindingBytes): n distinct e-mail addresses in one string, filtered as
// a result and as a text, with a vault and a flow. go test -run '^$'
// -bench FindingsMemory -benchtime 1x ./filter/
func BenchmarkFindingsMemory(b *testing.B) {
	f, _ := New(Config{})
	for _, n := range []int{10_000, 100_000} {
		text := addresses(n)
		raw, _ := json.Marshal(text)
		for _, as := range []string{"result", "text"} {
			b.Run(as+"/"+strconv.Itoa(n), func(b *testing.B) {
				var worst float64
				for range b.N {
					v := newTestVault(b, VaultOptions{})
					fl, _ := f.NewFlow(FlowOptions{})
					peak := heapPeak(func() {
						if as == "text" {
							_, _ = f.ApplyTextHeld(text, Options{Vault: v, Flow: fl, Budget: -1})
						} else {
							_, _ = f.Apply(Input{Result: raw}, Options{Vault: v, Flow: fl})
						}
					})
					worst = max(worst, float64(peak)/float64(n))
				}
				b.ReportMetric(worst, "heap-B/finding")
			})
		}
	}
}

// heapPeak is the most heap in use above what was in use before, while
// fn runs, sampled every millisecond.
func heapPeak(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
					peak.Store(m.HeapInuse - base)
				}
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak.Load()
}

// TestDetectionHeldAsItGoes: the detectors' matches of one string are
// held as they are found, so a filtering refused by its hold has spent
// about what it held — not every match of the string first (attack20
// N2: 3 direct calls of 400,000 addresses each, refused, grew the
// server by 618–729 MiB). So for a result, a text and an observation.
func TestDetectionHeldAsItGoes(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	text := addresses(200_000) // 4 MB, 200,000 matches
	clean := strings.ReplaceAll(text, "@", "_")
	refused := errors.New("no more")
	const limit = 2 * findingsStep
	cases := []struct {
		name string
		run  func(in string, hold FindingsHold) error
	}{
		{"result", func(in string, hold FindingsHold) error {
			raw, _ := json.Marshal(in)
			_, err := f.Apply(Input{Result: raw}, Options{Findings: hold})
			return err
		}},
		{"text", func(in string, hold FindingsHold) error {
			_, err := f.ApplyTextHeld(in, Options{Findings: hold, Budget: -1})
			return err
		}},
		{"observed", func(in string, hold FindingsHold) error {
			// Too large to wait in the flow: observed now.
			fl, err := f.NewFlow(FlowOptions{MaxBytes: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			return fl.ObserveHeld("people.get", in, Provenance{}, hold, nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked int64
			hold := func(n int64) error {
				asked = max(asked, n)
				if n > limit {
					return refused
				}
				return nil
			}
			allocated := func(in string) (int64, error) {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				err := tc.run(in, hold)
				runtime.ReadMemStats(&after)
				return int64(after.TotalAlloc - before.TotalAlloc), err
			}
			// What the same bytes without a finding take: the input's
			// copies, its tree.
			base, err := allocated(clean)
			if err != nil || asked > 0 {
				t.Fatalf("no finding: %v, asked %d", err, asked)
			}
			spent, err := allocated(text)
			var fe *FindingsError
			if !errors.As(err, &fe) || !errors.Is(err, refused) {
				t.Fatalf("%v, want a *FindingsError", err)
			}
			// Beyond that, about what was held, never every match first.
			if spent-base > 2*limit {
				t.Errorf("refused past %d bytes held (%d asked), the filtering allocated %d bytes more than without a finding", limit, asked, spent-base)
			}
			t.Logf("held up to %d bytes, allocated %d bytes more than without a finding (%d)", asked, spent-base, base)
		})
	}
}

// TestObservationKeptHeld: what a flow keeps is asked of
// FlowOptions.Keep before it is kept; a refusal fails the observation
// (ObserveHeld) rather than dropping values silently — a result waiting
// to be indexed, or indexed at once — and ObserveText, which cannot
// fail, leaves the source untracked, so that a rule that covers it
// still refuses.
func TestObservationKeptHeld(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	rules := []Rule{{From: "people.*", To: "http.*"}}
	result := strconv.Quote(addresses(20_000)) // 390 KB
	for _, tc := range []struct {
		name     string
		maxBytes int
	}{
		{"waiting", 0},        // kept as a tree of 1.5 MB
		{"indexed", 1500_000}, // no room to wait: its values, 6 MB or MaxBytes
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kept int64
			keep := func(n int64) error {
				if n > 1<<20 {
					return errors.New("no more")
				}
				kept = n
				return nil
			}
			fl, err := f.NewFlow(FlowOptions{Rules: rules, Keep: keep, MaxBytes: tc.maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			if err := fl.ObserveHeld("people.get", `"a@example.org"`, Provenance{}, nil, nil); err != nil || kept != keepStep {
				t.Fatalf("a small result: %v, kept %d", err, kept)
			}
			var fe *FindingsError
			if err := fl.ObserveHeld("people.list", result, Provenance{}, nil, nil); !errors.As(err, &fe) {
				t.Fatalf("ObserveHeld past Keep: %v, want a *FindingsError", err)
			}
			if st := fl.Stats(); st.Bytes > int(kept) {
				t.Errorf("the flow keeps %d bytes, more than the %d held", st.Bytes, kept)
			}
			// Observed with no error to give, the source is untracked:
			// a rule that covers it refuses whatever the arguments.
			fl.ObserveText("people.list", result, Provenance{})
			var flowErr *FlowError
			if err := fl.Check("http.post", json.RawMessage(`{"body":"nothing of it"}`)); !errors.As(err, &flowErr) || !flowErr.Untracked {
				t.Errorf("Check after a refused keep: %v, want an untracked *FlowError", err)
			}
			if st := fl.Stats(); st.Bytes > int(kept) || st.Dropped == 0 {
				t.Errorf("the flow keeps %d bytes of %d held, dropped %d", st.Bytes, kept, st.Dropped)
			}
		})
	}
}

// TestWaitingResultIndexedHeld: a large result waits in the flow to be
// indexed as far as an output needs; indexing it for an output holds
// what its findings cost on the output's hold. Refused, the output fails
// and the result still waits, to be indexed for the next text.
func TestWaitingResultIndexedHeld(t *testing.T) {
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	fl, err := f.NewFlow(FlowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := addresses(20_000) // 390 KB: it waits
	fl.ObserveText("people.list", strconv.Quote(text), Provenance{})
	if fl.npending.Load() != 1 {
		t.Fatal("the result does not wait")
	}
	refused := errors.New("no more")
	hold := func(n int64) error {
		if n > findingsStep {
			return refused
		}
		return nil
	}
	// No finding of its own, but the result's windows: it is indexed.
	output, _ := json.Marshal(strings.ReplaceAll(text, "@example.com", ""))
	if _, err := f.Apply(Input{Result: output}, Options{Flow: fl, Findings: hold}); !errors.Is(err, refused) {
		t.Fatalf("Apply: %v, want the hold's refusal", err)
	}
	if _, err := f.ApplyTextHeld(string(output), Options{Flow: fl, Findings: hold, Budget: -1}); !errors.Is(err, refused) {
		t.Fatalf("ApplyTextHeld: %v, want the hold's refusal", err)
	}
	if fl.npending.Load() != 1 {
		t.Fatal("a refused indexing dropped the result")
	}
	if st := fl.Stats(); st.Values < 20_000 {
		t.Errorf("indexed at last: %+v", st)
	}
}
