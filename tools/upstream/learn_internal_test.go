package upstream

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestObserveQueues checks what a result of a call finds: queued when
// its tool is still learned about and nothing of it waits; left alone
// when a result of the tool waits already, when its shape is known, when
// it is too large, or when the queue is full, in results or in bytes.
func TestObserveQueues(t *testing.T) {
	t.Parallel()
	result := json.RawMessage(`{"a":1}`)
	tests := []struct {
		name   string
		setup  func(s *Source, st *learning)
		value  json.RawMessage
		queued bool
	}{
		{"learning", func(*Source, *learning) {}, result, true},
		{"a result waits", func(_ *Source, st *learning) { st.pending = true }, result, false},
		{"known", func(_ *Source, st *learning) { st.done = true }, result, false},
		{"too large", func(*Source, *learning) {}, make(json.RawMessage, tools.InferMaxBytes+1), false},
		{"queue full of bytes", func(s *Source, _ *learning) { s.queued.Store(learnQueueBytes - 3) }, result, false},
		{"queue full of results", func(s *Source, _ *learning) {
			for range learnQueue {
				s.samples <- sample{}
			}
		}, result, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &Source{samples: make(chan sample, learnQueue), log: slog.New(slog.DiscardHandler)}
			st := &learning{inf: &tools.Inferrer{}}
			u := &upstream{src: s, learned: map[string]*learning{"t": st}}
			tt.setup(s, st)
			before, pending := s.queued.Load(), st.pending
			u.observe("alice", "t", tt.value)
			var got *sample
			for len(s.samples) > 0 {
				if smp := <-s.samples; smp.st == st {
					got = &smp
				}
			}
			if (got != nil) != tt.queued {
				t.Fatalf("queued: %v, want %v", got != nil, tt.queued)
			}
			switch {
			case tt.queued && (!st.pending || s.queued.Load() != before+int64(len(tt.value)) || string(got.value) != string(tt.value)):
				t.Errorf("queued: pending %v, %d bytes queued (before %d), value %s", st.pending, s.queued.Load(), before, got.value)
			case !tt.queued && (st.pending != pending || s.queued.Load() != before):
				t.Errorf("left alone: pending %v (was %v), %d bytes queued (was %d)", st.pending, pending, s.queued.Load(), before)
			}
		})
	}
}
