package executor

import "testing"

// idleWorker returns a worker given back after its third root job, with
// its next VM ready or not.
func idleWorker(ready bool) *worker {
	w := &worker{}
	w.lastRoot.Store(3)
	w.readyAfter.Store(-1)
	if ready {
		w.readyAfter.Store(3)
	}
	return w
}

// TestIdleChoice checks which idle worker a run gets: the one given back
// last among those whose next VM is ready, else the one idle longest.
func TestIdleChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ready []bool // in the order given back
		want  int
	}{
		{"one", []bool{false}, 0},
		{"none ready: idle longest", []bool{false, false, false}, 0},
		{"the one ready", []bool{false, true, false}, 1},
		{"the last ready", []bool{true, false, true, false}, 2},
		{"all ready: last", []bool{true, true}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &procPool{idle: make(chan struct{}, len(tt.ready))}
			var ws []*worker
			for _, r := range tt.ready {
				w := idleWorker(r)
				ws = append(ws, w)
				p.putIdle(w)
			}
			want := 0
			for _, r := range tt.ready {
				if r {
					want++
				}
			}
			got := 0
			for _, w := range p.idleList {
				if w.ready() {
					got++
				}
			}
			if got != want {
				t.Errorf("%d idle workers ready, want %d", got, want)
			}
			<-p.idle
			if got := p.takeIdle(); got != ws[tt.want] {
				t.Errorf("took worker %d, want %d", indexOf(ws, got), tt.want)
			}
			if len(p.idleList) != len(tt.ready)-1 {
				t.Errorf("%d idle left, want %d", len(p.idleList), len(tt.ready)-1)
			}
		})
	}
}

// TestReadyAfterStart checks that a worker's ready frame counts only for
// the root job it names: once another root job starts, the worker is
// not ready until it says so again.
func TestReadyAfterStart(t *testing.T) {
	t.Parallel()
	w := &worker{}
	w.readyAfter.Store(-1)
	if w.ready() {
		t.Fatal("a worker that said nothing is ready")
	}
	w.readyAfter.Store(0)
	if !w.ready() {
		t.Fatal("a fresh worker that said ready is not")
	}
	w.lastRoot.Store(1) // a root job took the VM
	if w.ready() {
		t.Fatal("ready after its VM was taken")
	}
	w.readyAfter.Store(1)
	if !w.ready() {
		t.Fatal("not ready after it said so for job 1")
	}
}

func indexOf(ws []*worker, w *worker) int {
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}

// TestReadyCountsIdleWorkers: with process isolation, Stats.Ready counts
// the idle workers, ready or still preparing their next VM: each takes a
// run at once, and a server whose pool has one says it is ready
// (/readyz answered 503 while a worker given back made its next VM).
func TestReadyCountsIdleWorkers(t *testing.T) {
	t.Parallel()
	p := &procPool{idle: make(chan struct{}, 2)}
	preparing, ready := idleWorker(false), idleWorker(true)
	p.putIdle(preparing)
	if got := p.idleCount(); got != 1 {
		t.Errorf("a worker preparing its VM: idleCount = %d, want 1", got)
	}
	p.putIdle(ready)
	if got := p.idleCount(); got != 2 {
		t.Errorf("idleCount = %d, want 2", got)
	}
	<-p.idle
	p.takeIdle()
	if got := p.idleCount(); got != 1 {
		t.Errorf("after a run took one: idleCount = %d, want 1", got)
	}
}
