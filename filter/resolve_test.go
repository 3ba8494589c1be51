package filter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// resolveQuadratic is resolve as it was before attack14 I1: each match
// compared with every kept one. The differential tests hold resolve to
// its answers.
func resolveQuadratic(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	slices.SortStableFunc(ms, betterMatch)
	kept := ms[:0]
	for _, m := range ms {
		if !overlapsAny(kept, m) {
			kept = append(kept, m)
		}
	}
	slices.SortFunc(kept, func(a, b Match) int { return a.Start - b.Start })
	return kept
}

// randomMatches are n non-empty matches over a string of size bytes, with
// few confidences and lengths so that ties are common.
func randomMatches(r *rand.Rand, n, size int) []Match {
	ms := make([]Match, n)
	for i := range ms {
		start := r.IntN(size)
		ms[i] = Match{
			Detector:   fmt.Sprint(i), // tells equal spans apart
			Confidence: float64(r.IntN(4)) / 4,
			Start:      start,
			End:        start + 1 + r.IntN(min(size, 12)),
		}
	}
	return ms
}

func compareResolve(t *testing.T, ms []Match) {
	t.Helper()
	want := resolveQuadratic(slices.Clone(ms))
	got := resolve(slices.Clone(ms))
	if !slices.Equal(got, want) {
		t.Fatalf("resolve(%v)\n= %v\nwant %v", ms, got, want)
	}
}

func TestResolveSameAsBefore(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 14))
	for range 3000 {
		n := 1 + r.IntN(4*resolveLinear)
		compareResolve(t, randomMatches(r, n, 1+r.IntN(3*n)))
	}
	// Every string the detectors find much in.
	for _, s := range []string{
		strings.Repeat("bob@example.com ", 200),
		strings.Repeat("call +1 415 555 2671 or 415-555-2671, card 4111 1111 1111 1111; ", 40),
		strings.Repeat("api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dc password: hunter22 10.0.0.1 ", 30),
	} {
		var sc scanner
		fd := detected{upto: math.MaxInt}
		sc.find(s, &fd)
		raw := fd.ms
		if len(raw) <= resolveLinear {
			t.Fatalf("%d matches in %.40q: too few to test the tree", len(raw), s)
		}
		compareResolve(t, raw)
	}
}

// FuzzResolveMatches holds resolve to the quadratic answers on matches made of
// the fuzzer's bytes, three a match: start, length and confidence.
func FuzzResolveMatches(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 4, 1, 2, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ms []Match
		for i := 0; i+3 <= len(data) && len(ms) < 400; i += 3 {
			ms = append(ms, Match{
				Detector:   fmt.Sprint(len(ms)),
				Confidence: float64(data[i+2]%4) / 4,
				Start:      int(data[i]),
				End:        int(data[i]) + 1 + int(data[i+1]%16),
			})
		}
		compareResolve(t, ms)
	})
}

// TestFilterLinearInFindings (attack14 I1): resolve compared each match
// of a string with every match kept before it, and dropInsideTokens each
// match with every token of the string, so a result with a finding every
// 16 bytes cost k²: 2 MB of e-mail addresses took 15 s of the server's
// CPU. The same held for values of one prefix, which the sweep and the
// flow's index compared one by one at every place the prefix occurs.
// Four times the findings must cost about four times the CPU, not
// sixteen. Not parallel: it reads the process's CPU time.
func TestFilterLinearInFindings(t *testing.T) {
	if processCPU() == 0 {
		t.Skip("no CPU time on this platform")
	}
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	own := v.Tokenize(ClassEmail, "bob@example.com", nil)
	repeat := func(unit string) func(int) json.RawMessage {
		return func(n int) json.RawMessage { return argsOf(t, strings.Repeat(unit, n)) }
	}
	// n passwords of one prefix under their field's name, and then all
	// of them in a text without it.
	passwords := func(n int) json.RawMessage {
		rows := make([]any, n)
		var b strings.Builder
		for i := range rows {
			p := fmt.Sprintf("aaaaaaaa%06dq", i)
			rows[i] = map[string]any{"password": p}
			b.WriteString(p + " ")
		}
		return argsOf(t, map[string]any{"rows": rows, "text": b.String()})
	}
	for _, tc := range []struct {
		name   string
		result func(n int) json.RawMessage
		flow   bool
	}{
		{"e-mail addresses", repeat("bob@example.com "), true},
		{"our tokens and addresses", repeat(own + " bob@example.com "), true},
		{"forged tokens and addresses", repeat("⟦email:652468a6⟧ bob@example.com "), true},
		{"values of one prefix, swept", passwords, false},
		{"values of one prefix, known to the flow", passwords, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost := func(n int) time.Duration {
				res := tc.result(n)
				best := time.Duration(math.MaxInt64)
				for range 3 {
					opts := Options{Vault: v}
					if tc.flow {
						opts.Flow = newTestFlow(t, f, FlowOptions{})
						opts.Flow.Observe("crm.get", res, Provenance{})
					}
					c0 := processCPU()
					if _, err := f.Apply(Input{Result: res}, opts); err != nil {
						t.Fatal(err)
					}
					best = min(best, processCPU()-c0)
				}
				return best
			}
			const n = 8 << 10
			small, large := cost(n), cost(4*n)
			t.Logf("%d findings: %v of CPU; %d: %v", n, small, 4*n, large)
			if large > 8*small+100*time.Millisecond {
				t.Errorf("%d findings cost %v of CPU, %d cost %v: more than linear", n, small, 4*n, large)
			}
		})
	}
}

// TestKnownValuesOneMatchAStart (attack14 I1's class): the flow's index
// reports every value found at a position, and the known-value stage kept
// them all before taking the longest: values of every length from 6 to
// 255 bytes of one letter (passwords a tool returned) matched 250 times
// at each byte of a text of that letter, 2 GB allocated for 16 KB. It
// keeps the one match a start can be replaced by. Not parallel: it reads
// the process's allocation count.
func TestKnownValuesOneMatchAStart(t *testing.T) {
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	var rows []any
	for l := 6; l < 256; l++ {
		rows = append(rows, map[string]any{"password": strings.Repeat("a", l)})
	}
	fl := newTestFlow(t, f, FlowOptions{})
	fl.Observe("crm.get", argsOf(t, rows), Provenance{})
	const n = 16 << 10
	res := argsOf(t, strings.Repeat("a", n))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := f.Apply(Input{Result: res}, Options{Vault: v, Flow: fl})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out.Full), "aaaaaa") {
		t.Errorf("the passwords showed: %.80s", out.Full)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("filtering %d bytes of one letter allocated %d MiB", n, got>>20)
	}
}
