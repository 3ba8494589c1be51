package executor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/codecell/codecell/executor/internal/engine"
)

// ServeWorker runs a sandbox worker: the process that holds the VMs of
// one pool slot under process isolation. It reads the executor's frames
// from in (the worker's stdin) and writes its own to out (its stdout),
// and returns when in ends, which is how the executor stops it; the
// process should then exit, taking any VM still running with it. Nothing
// else may write to out. Config.WorkerCommand starts a program that calls
// it, such as codecell's hidden "sandbox-worker" command.
//
// Jobs run at the process's priority. A root job's VM is reset for the
// next root job (instance.reset) right after its outcome goes out, at the
// job's priority, as the next job may be waiting for it; building VMs
// and closing used ones, which no run waits for, happen on a thread of
// their own at a lower priority (on Linux), so that they take the CPU
// only when runs and the server leave it. When in and out are pipes, the
// worker waits on them through the Go runtime's poller rather than in a
// blocking read: a frame wakes the goroutine that waits for it without a
// hand-off between threads. On Linux, while a root job runs, a kernel
// timer is set to kill the process at the instant the executor gives up
// the job's VM (its deadline plus the grace the executor allows), so
// that a VM stuck inside a built-in dies on time however late the
// executor is scheduled.
func ServeWorker(in io.Reader, out io.Writer) error {
	prelude, err := compilePrelude()
	if err != nil {
		return err
	}
	// While the VM waits for one call alone, the worker's pipes are read
	// and written with raw system calls (rawPipe): nothing else runs in
	// the worker then, and the monitor thread a system call through
	// package syscall wakes would only poll. At other times its duties
	// (the poller while every P is busy, preemption) are the worker's
	// runs': a worker whose pipes were always raw did less work per
	// trivial run but fewer of them under load (docs/decisions.md).
	sole := new(atomic.Bool)
	if f, ok := in.(*os.File); ok {
		in = rawPipeOf(pollableFile(f), sole)
	}
	if f, ok := out.(*os.File); ok {
		out = rawPipeOf(pollableFile(f), sole)
	}
	death, err := newDeathTimer()
	if err != nil {
		// The executor's own timers still kill the worker.
		fmt.Fprintf(os.Stderr, "sandbox worker: no timer to die by at a run's deadline: %v\n", err)
	}
	s := &workerServer{
		sole:    sole,
		death:   death,
		w:       newFrameWriter(out),
		prelude: prelude,
		jobs:    map[uint32]*vmJob{},
		layouts: map[uint32]*Layout{},
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		runners: newRunners(),
	}
	defer close(s.quit)
	defer s.runners.close()
	if err := s.w.write(frameHello, 0, []byte(workerMagic), nil); err != nil {
		return fmt.Errorf("sandbox worker: %w", err)
	}
	go s.chores()
	fr := newFrameReader(in)
	for {
		f, err := fr.read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox worker: %w", err)
		}
		if err := s.handle(f); err != nil {
			return fmt.Errorf("sandbox worker: %w", err)
		}
	}
}

// maxLayouts bounds the layouts a worker keeps; the executor sends a
// layout again to a worker that no longer has it.
const maxLayouts = 8

// workerServer is the state of a worker process.
type workerServer struct {
	// sole holds while a VM waits for one call alone (workerHost.flush).
	sole *atomic.Bool
	// death kills the process at the time its root job's VM is given up
	// (jobSpec.KillAt), if the job has not ended by then; nil where the
	// system has no such timer. armed is the root job it is set for, 0
	// while it is disarmed; guarded by mu.
	death   *deathTimer
	armed   uint32
	w       *frameWriter
	prelude *engine.Bytecode
	wake    chan struct{} // there are chores
	quit    chan struct{}
	runners *runners // the jobs' goroutines

	mu      sync.Mutex
	jobs    map[uint32]*vmJob
	layouts map[uint32]*Layout
	latest  *Layout // the VM prepared next gets it
	// lastRoot is the latest root job received. next is the VM prepared
	// for the next root job, which root jobs take on the reader goroutine
	// in the order they arrive, so that a ready frame never announces a
	// VM a job has taken. preparing is set while the chores thread makes
	// one; a root job that finds none ready makes its own at its own
	// priority rather than wait for a thread of lower priority.
	lastRoot  uint32
	next      *instance
	preparing bool
	// wantNext asks the chores thread for the next VM; a retired VM waits
	// there to be closed.
	wantNext bool
	retired  []*instance
	// resetting is closed once the VM of the last root job is reset for
	// the next (instance.reset), which a root job that finds no VM ready
	// waits for: a reset costs a tenth of building one. waiting counts
	// the root jobs that wait.
	resetting chan struct{}
	waiting   int

	// heap is the heap limit of the latest root job, whose nested jobs
	// have smaller ones; queued is the bytes of results in every job's
	// inbox or being taken, which queueBound(heap) bounds (see deliver).
	// Both are touched on the frames' goroutine and queued on the jobs'
	// too.
	heap   atomic.Int64
	queued atomic.Int64
}

// maxRetired bounds the used VMs waiting to be closed, whose heaps are
// still allocated: past it, a job closes its VM itself.
const maxRetired = 1

func (s *workerServer) handle(f frame) error {
	switch f.typ {
	case frameLayout:
		d := dec{b: f.body}
		id := d.u32()
		l := &Layout{id: id, json: string(d.rest())}
		if d.err != nil {
			return errFrame
		}
		s.mu.Lock()
		if len(s.layouts) >= maxLayouts {
			for k := range s.layouts {
				delete(s.layouts, k)
				break
			}
		}
		s.layouts[id] = l
		s.latest = l
		var stale *instance
		if s.next != nil && s.next.layout != l {
			stale, s.next = s.next, nil
		}
		s.mu.Unlock()
		s.retire(stale)
		s.prepare()
	case frameRun:
		spec, layout, err := decodeSpec(f.body)
		if err != nil {
			return err
		}
		s.mu.Lock()
		spec.Layout = s.layouts[layout]
		j := newVMJob(spec, &workerHost{s: s, job: f.job})
		s.jobs[f.job] = j
		var in *instance
		var wait chan struct{}
		if !spec.Nested {
			s.lastRoot = f.job
			s.heap.Store(spec.Memory)
			if s.death != nil && spec.KillAt != 0 {
				s.death.set(spec.KillAt)
				s.armed = f.job
			}
			in, s.next = s.next, nil
			if in == nil && s.resetting != nil {
				wait = s.resetting
				s.waiting++
			}
		}
		s.mu.Unlock()
		s.runners.start(func() { s.run(f.job, j, in, wait) })
	case frameResult:
		d := dec{b: f.body}
		c := callResult{id: d.u32()}
		flags := d.u8()
		c.ok, c.prepared, c.confirmed = flags&resultOK != 0, flags&resultPrepared != 0, flags&resultConfirmed != 0
		c.payload = d.rest()
		if d.err != nil {
			return errFrame
		}
		s.mu.Lock()
		j := s.jobs[f.job]
		s.mu.Unlock()
		if j != nil {
			s.deliver(f.job, j, c)
		}
	case frameInterrupt:
		s.mu.Lock()
		j := s.jobs[f.job]
		s.mu.Unlock()
		if j != nil {
			j.stop()
			if j.inbox.reclaim() {
				j.turn <- struct{}{} // the job's goroutine ends it
			}
		}
	default:
		return fmt.Errorf("%w: unknown type %d", errFrame, f.typ)
	}
	return nil
}

// queueBound is the most of its results' bytes a worker holds that its
// VMs have not taken, for root jobs of memory bytes of heap: four heaps,
// in all, its root job's and their nested jobs'. The executor holds a
// result's bytes in flight until the VM has taken it (frameAck), which
// bounds them first; this bound is the belt to that brace, for results
// nothing holds. It is of the worker, not of each job, and has no floor:
// its data limit (workerData) allows for four heaps of them, twice over
// for the collector, and no more — a bound of at least 128 MiB for each
// job, a nested one's too, ended a worker of a small heap, or of a root
// with nested runs, out of memory, its run with it (issue 19, sec28).
// No VM takes a result larger than its heap, so a result alone never
// passes the bound in vain.
func queueBound(memory int64) int64 { return 4 * memory }

// deliver queues a tool call's result for job j, whose VM acknowledges
// it once taken (workerHost.acked). A result that would take the
// worker's queue past queueBound is not kept: the call is rejected
// instead, and its hold given back at once.
func (s *workerServer) deliver(id uint32, j *vmJob, c callResult) {
	h, ok := j.host.(*workerHost)
	if !ok {
		if j.inbox.push(c) {
			j.resume()
		}
		return
	}
	n := int64(len(c.payload))
	if bound := queueBound(s.heap.Load()); s.queued.Add(n) > bound {
		queued := s.queued.Add(-n)
		if !c.prepared {
			// A result handed early is acknowledged with its confirmation.
			s.w.write(frameAck, id, enc(nil).u32(c.id), nil)
		}
		c.ok = false
		c.payload = rejectionJSON(fmt.Sprintf(
			"the tool's result (%s) was dropped: with the results this run's sandbox has not read yet (%s) it would pass %s, four times the run's heap limit. Await fewer calls at once, read each result before the next arrives, or ask the tool for less",
			formatBytes(n), formatBytes(queued), formatBytes(bound)))
		n = int64(len(c.payload))
		s.queued.Add(n)
	}
	call, prepared := c.id, c.prepared
	c.done = func() {
		s.queued.Add(-n)
		if !prepared {
			h.acked(call, int(n))
		}
	}
	if j.inbox.push(c) {
		// The VM waits for this call alone: it runs on here, on the
		// frames' goroutine (vmJob.resume).
		j.resume()
	}
}

// run runs one job and reports its outcome. A root job is given the VM
// prepared for it, if one was ready, or waits for the one being reset
// (wait); once it is done, it resets its VM for the next root job, or
// asks the chores thread for one.
func (s *workerServer) run(id uint32, j *vmJob, in *instance, wait chan struct{}) {
	if wait != nil {
		<-wait
		s.mu.Lock()
		s.waiting--
		in, s.next = s.next, nil
		s.mu.Unlock()
	}
	var out outcome
	if j.spec.Layout == nil {
		out = outcome{status: outInternal, message: "the program's layout never reached the sandbox worker"}
		s.retire(in)
		in = nil
	} else {
		if in != nil && in.layout != j.spec.Layout {
			s.retire(in)
			in = nil
		}
		if in == nil {
			var err error
			in, err = newInstance(s.prelude, j.spec.Layout)
			if err != nil {
				out = outcome{status: outInternal, message: err.Error()}
			}
		}
		if in != nil {
			out = j.run(in)
		}
	}
	// Whether the VM is reset for the next root job is settled before the
	// outcome goes out, after which the next job may arrive at once.
	s.mu.Lock()
	if s.armed == id {
		// The job has ended: the executor has no reason to give up its VM.
		s.death.set(0)
		s.armed = 0
	}
	var done chan struct{}
	if !j.spec.Nested && in != nil && in.layout == s.latest && s.next == nil && s.resetting == nil && in.resetsCheaply() {
		done = make(chan struct{})
		s.resetting = done
	}
	s.mu.Unlock()
	s.w.write(frameDone, id, encodeOutcome(&out), out.payload)
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	if done != nil {
		// At the job's priority, after its outcome went out: the next
		// root job may be on its way, and waits for this rather than
		// build a VM of its own.
		ok := in.reset()
		s.mu.Lock()
		s.resetting = nil
		if ok && in.layout == s.latest && s.next == nil {
			s.next, in = in, nil
			if s.waiting == 0 {
				// Under s.mu, so that no root job takes it between the
				// two; a job waiting takes it without the frame.
				s.w.write(frameReady, s.lastRoot, nil, nil)
			}
		}
		close(done)
		s.mu.Unlock()
	}
	s.retire(in)
	if !j.spec.Nested {
		s.prepare()
	}
}

// prepare asks for the next root job's VM, unless one is ready or on its
// way.
func (s *workerServer) prepare() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preparing || s.next != nil || s.latest == nil {
		return
	}
	s.preparing = true
	s.wantNext = true
	s.poke()
}

// retire hands a used VM to the chores thread to close, or closes it
// when enough wait there already.
func (s *workerServer) retire(in *instance) {
	if in == nil {
		return
	}
	s.mu.Lock()
	full := len(s.retired) >= maxRetired
	if !full {
		s.retired = append(s.retired, in)
	}
	s.mu.Unlock()
	if full {
		in.close()
		return
	}
	s.poke()
}

func (s *workerServer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// chores prepares VMs and closes used ones, on a thread of lower
// priority, until the worker ends. Preparing comes first: the next run
// waits for its VM, while a used one can wait to be closed.
func (s *workerServer) chores() {
	lowerThreadPriority()
	for {
		s.mu.Lock()
		want, layout := s.wantNext, s.latest
		s.wantNext = false
		var old *instance
		if !want && len(s.retired) > 0 {
			old = s.retired[0]
			s.retired = s.retired[1:]
		}
		s.mu.Unlock()
		switch {
		case want:
			in := s.reuse(layout)
			if in == nil {
				var err error
				in, err = newInstance(s.prelude, layout)
				if err != nil {
					in = nil // the job makes its own
				}
			}
			s.ready(in)
		case old != nil:
			old.close()
		default:
			select {
			case <-s.wake:
			case <-s.quit:
				return
			}
		}
	}
}

// reuse returns a used VM of layout reset for the next job, or nil when
// none is waiting to be closed or it cannot be reset.
func (s *workerServer) reuse(layout *Layout) *instance {
	s.mu.Lock()
	var in *instance
	for i, r := range s.retired {
		if r.layout == layout {
			in = r
			s.retired = append(s.retired[:i], s.retired[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if in == nil {
		return nil
	}
	if !in.reset() {
		in.close()
		return nil
	}
	return in
}

// ready keeps a prepared VM for the next root job and tells the
// executor, unless the layout changed meanwhile.
func (s *workerServer) ready(in *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.preparing = false
	if in == nil {
		return
	}
	if in.layout != s.latest {
		s.retired = append(s.retired, in)
		s.preparing, s.wantNext = true, true
		s.poke()
		return
	}
	if s.next != nil {
		// The last root job's VM, reset meanwhile.
		s.retired = append(s.retired, in)
		s.poke()
		return
	}
	s.next = in
	// Under s.mu, so that no root job takes it between the two.
	s.w.write(frameReady, s.lastRoot, nil, nil)
}

// workerHost sends what a job reports to the executor. It holds the
// tool calls the program makes until the VM has nothing else to do, and
// then sends them in one write: a program that awaits calls together
// costs one write, not one a call. A call the VM then waits for alone,
// in a worker that runs no other job, is flagged callSole. Calls whose
// arguments pass flushAt are sent at once.
//
// It also tells the executor which results the VM has taken (frameAck),
// which holds each result's bytes until then (issue 19, attack14 I9):
// with the calls it sends, as the VM takes the next results, or at once
// past ackAt bytes.
type workerHost struct {
	s    *workerServer
	job  uint32
	held []byte // whole frameCall frames
	n    int    // calls in held
	// first is the offset in held of the first call's flags.
	first int
	// acks are the calls whose results the VM has taken since the last
	// frameAck, and ackBytes the bytes of those results.
	acks     enc
	ackBytes int
	// sole: the last call sent was flagged callSole.
	sole bool
}

var _ flusher = (*workerHost)(nil)

// flushAt is the most of its calls' names and arguments a host holds
// before it sends them on, though the VM has not waited yet.
const flushAt = 4 << 20

// ackAt is the bytes of results taken past which their acknowledgement
// goes at once rather than with the next calls.
const ackAt = 1 << 20

func (h *workerHost) call(id uint32, name, args string) {
	size := len(name) + len(args)
	if len(h.held)+size > flushAt {
		h.send()
		if size > flushAt {
			// The arguments go as they are, not copied into held.
			h.s.w.write(frameCall, h.job, enc(nil).u32(id).u8(0).str(name), unsafe.Slice(unsafe.StringData(args), len(args)))
			return
		}
	}
	if h.n == 0 {
		h.first = len(h.held) + frameHeader + 4
	}
	var err error
	h.held, err = appendFrame(h.held, frameCall, h.job, enc(nil).u32(id).u8(0).str(name), unsafe.Slice(unsafe.StringData(args), len(args)))
	if err == nil {
		h.n++
	}
}

func (h *workerHost) flush(inFlight int) (sole bool) {
	if inFlight < 0 {
		// The job ends: its outcome ends every hold its results have.
		h.acks, h.ackBytes = h.acks[:0], 0
	}
	switch {
	case h.n == 1 && inFlight == 1:
		h.s.mu.Lock()
		sole = len(h.s.jobs) == 1
		h.s.mu.Unlock()
		if sole {
			h.held[h.first] = callSole
		}
	case h.n == 0 && inFlight == 1 && h.sole:
		// The call flagged last is still the one in flight: its result
		// was handed early, and its confirmation is to come.
		h.s.mu.Lock()
		sole = len(h.s.jobs) == 1
		h.s.mu.Unlock()
	}
	h.sole = sole
	h.s.sole.Store(sole)
	h.send()
	return sole
}

func (h *workerHost) acknowledge() {
	if len(h.acks) > 0 {
		h.send()
	}
}

// acked notes that the VM has taken the result of call, n bytes.
func (h *workerHost) acked(call uint32, n int) {
	h.acks = h.acks.u32(call)
	h.ackBytes += n
	if h.ackBytes >= ackAt {
		h.send()
	}
}

// send writes the acknowledgements and the calls held, in one write:
// the acknowledgements first, so that a call after them is the last of
// the frames the executor reads (see worker.read, callSole).
func (h *workerHost) send() {
	if h.n == 0 && len(h.acks) == 0 {
		return
	}
	var ack []byte
	if len(h.acks) > 0 {
		ack, _ = appendFrame(nil, frameAck, h.job, h.acks, nil)
		h.acks, h.ackBytes = h.acks[:0], 0
	}
	h.s.w.writeFrames(ack, h.held)
	h.n = 0
	if cap(h.held) > 64<<10 {
		h.held = nil // a large call's arguments are not kept
	} else {
		h.held = h.held[:0]
	}
}

func (h *workerHost) log(level int, text string) {
	h.s.w.write(frameLog, h.job, enc(nil).u8(uint8(level)), unsafe.Slice(unsafe.StringData(text), len(text)))
}

func (h *workerHost) progress(message string, fraction float64) {
	h.s.w.write(frameProgress, h.job, enc(nil).u64(f64bits(fraction)), []byte(message))
}
