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
