package executor

import (
	"bytes"
	"strings"
	"testing"
)

// TestWorkerQueueOfTheWorker: the results a worker's VMs have not taken
// are bounded together, a root job's and its nested jobs', at four of
// the root's heaps; a result past the bound is a rejection naming it,
// acknowledged at once, and a result taken makes room again. (Each job
// had a bound of its own, of at least 128 MiB: the worker's data limit,
// twelve heaps and 256 MiB, did not allow for that at a small heap.)
func TestWorkerQueueOfTheWorker(t *testing.T) {
	const heap = 4 << 20
	var out bytes.Buffer
	s := &workerServer{w: newFrameWriter(&out), jobs: map[uint32]*vmJob{}}
	s.heap.Store(heap)
	root := newVMJob(&jobSpec{Memory: heap}, &workerHost{s: s, job: 1})
	nested := newVMJob(&jobSpec{Memory: 1 << 20, Nested: true}, &workerHost{s: s, job: 2})
	big := []byte(`"` + strings.Repeat("y", 1<<20) + `"`)
	bound := queueBound(heap)
	fit := int(bound / int64(len(big))) // 15
	for i := range 10 {
		s.deliver(1, root, callResult{id: uint32(i), ok: true, payload: big})
	}
	for i := range 30 {
		s.deliver(2, nested, callResult{id: uint32(i), ok: true, payload: big})
	}
	// Each result refused is acknowledged at once: its hold ends.
	acks := 0
	for fr := newFrameReader(bytes.NewReader(out.Bytes())); ; {
		f, err := fr.read()
		if err != nil {
			break
		}
		if f.typ == frameAck {
			acks++
		}
	}
	kept, refused := 0, 0
	var taken []callResult
	for _, j := range []*vmJob{root, nested} {
		for _, c := range j.inbox.drain(nil) {
			switch {
			case c.ok && len(c.payload) == len(big):
				kept++
				taken = append(taken, c)
			case !c.ok && strings.Contains(string(c.payload), "four times the run's heap limit"):
				refused++
				c.consumed()
			default:
				t.Fatalf("an unexpected result: ok %v, %.200s", c.ok, c.payload)
			}
		}
	}
	if kept != fit || refused != 40-fit {
		t.Errorf("40 results of 1 MiB for a root of a 4 MiB heap and its nested job: %d kept, %d refused; want %d kept (the %d MiB bound)", kept, refused, fit, bound>>20)
	}
	if acks != refused {
		t.Errorf("%d results refused, %d acknowledged at once", refused, acks)
	}
	// The results taken give their bytes back: as many fit again.
	for _, c := range taken {
		c.consumed()
	}
	if n := s.queued.Load(); n != 0 {
		t.Errorf("%d bytes still counted once every result was taken", n)
	}
	s.deliver(2, nested, callResult{id: 30, ok: true, payload: big})
	if got := nested.inbox.drain(nil); len(got) != 1 || !got[0].ok {
		t.Errorf("a result after the queue emptied: %d results, ok %v", len(got), len(got) == 1 && got[0].ok)
	}
}
