package upstream

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/codecell/codecell/tools"
)

// BenchmarkObserve measures what learning adds to a call on its path:
// for a tool still learned about, the result copied and queued (taken off
// the queue here, to be observed elsewhere); for one whose shape is known,
// a look-up.
func BenchmarkObserve(b *testing.B) {
	result := json.RawMessage(`{"total":2,"items":[{"name":"a.txt","size":10,"modified":"2024-05-01T10:00:00Z"},{"name":"b.txt","size":20,"modified":"2024-05-02T10:00:00Z"}]}`)
	for _, tt := range []struct {
		name string
		done bool
	}{{"learning", false}, {"known", true}} {
		b.Run(tt.name, func(b *testing.B) {
			s := &Source{samples: make(chan sample, learnQueue), log: slog.New(slog.DiscardHandler)}
			st := &learning{inf: &tools.Inferrer{}, done: tt.done}
			u := &upstream{src: s, learned: map[string]*learning{"t": st}}
			queued := 0
			for b.Loop() {
				u.observe("alice", "t", result)
				select {
				case smp := <-s.samples:
					s.queued.Add(-int64(len(smp.value)))
					queued++
					st.pending = false
				default:
				}
			}
			if want := map[bool]int{false: b.N, true: 0}[tt.done]; queued != want {
				b.Fatalf("%d results queued, want %d", queued, want)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
