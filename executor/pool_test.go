package executor

import "testing"

// TestIdleChoice checks which idle worker a run gets: the one given back
// last among those whose next VM is ready, else the one idle longest.
func TestIdleChoice(t *testing.T) {
	t.Parallel()
	newWorker := func(ready bool) *worker {
		w := &worker{}
		w.lastRoot.Store(3)
		w.readyAfter.Store(-1)
		if ready {
			w.readyAfter.Store(3)
		}
		return w
	}
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
				w := newWorker(r)
				ws = append(ws, w)
				p.putIdle(w)
			}
			want := 0
			for _, r := range tt.ready {
				if r {
					want++
				}
			}
			if got, idle := p.readyCount(); got != want || idle != len(tt.ready) {
				t.Errorf("readyCount = %d, %d idle; want %d, %d", got, idle, want, len(tt.ready))
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
