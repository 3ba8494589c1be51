package executor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// helloTimeout bounds a worker's start: the time from starting the
// process to its first frame.
const helloTimeout = 20 * time.Second

// procPool keeps one sandbox worker process per pool slot, and one more
// per run that waits outside the pool (see Park). A worker runs
// one root run at a time, with the nested runs of that root beside it.
// When a run has to be given up, its worker is killed, and a spawner
// starts a replacement in the background.
//
// A run gets the idle worker that was given back last among those whose
// next VM is ready (frameReady), else the one idle longest, which has
// had the most time to prepare: the worker that just finished a run is
// still making its next VM, and one that is ready and recently used has
// its memory warm.
type procPool struct {
	argv []string
	log  *slog.Logger
	// maxFrame bounds what a worker may send: a result or a tool call as
	// large as a heap, lifted to encode a result (hostHeap).
	maxFrame uint32
	// data is each worker's RLIMIT_DATA (workerData).
	data uint64
	// idle holds a token per idle worker; idleMu guards the workers, in
	// the order they were given back. A token is sent after its worker
	// is added and received before one is taken.
	idle     chan struct{}
	idleMu   sync.Mutex
	idleList []*worker
	quit     chan struct{}
	// layout is the layout of the latest run: new workers prepare their
	// first VM with it.
	layout atomic.Pointer[Layout]

	wg      sync.WaitGroup // spawners and the goroutines of giveBack
	mu      sync.Mutex
	workers map[*worker]struct{}
	lastErr error         // why the latest start failed
	failed  chan struct{} // closed, and replaced, when a start fails
	closed  bool
	// surplus is the number of workers to retire: grown for runs that
	// waited outside the pool and have come back to it. The next workers
	// given back are killed instead of kept.
	surplus int
	// owed is the number of workers the pool may grow by and has not
	// started: runs waiting outside the pool keep their own, and another
	// is started only when a run finds none idle.
	owed int
}

// newProcPool starts size workers; grow may add up to room more.
func newProcPool(size, room int, argv []string, memory int64, log *slog.Logger) *procPool {
	p := &procPool{
		argv:     argv,
		log:      log,
		maxFrame: uint32(min(3*memory+1<<20, maxFrame)),
		data:     workerData(memory),
		idle:     make(chan struct{}, size+room),
		quit:     make(chan struct{}),
		workers:  map[*worker]struct{}{},
		failed:   make(chan struct{}),
	}
	p.layout.Store(emptyLayout)
	for range size {
		p.wg.Add(1)
		go p.spawn()
	}
	return p
}

// workerData is the data a sandbox worker may have (RLIMIT_DATA, on
// Linux), for VMs of memory bytes of heap: twelve heaps and 256 MiB, 1
// GiB by default. A worker holds a run's VM (its heap lifted to three
// for the result, hostHeap), its nested runs' (about one more), the VM
// prepared for the next run and the one being closed, the regions kept
// for the next VMs (under 100 MiB), and in Go the results waiting for
// the VM (queueBound) and the calls it sends, twice over for the
// collector. Past it an allocation fails: the engine's makes the run
// fail memory_limit, the Go runtime's ends the worker, with its run,
// alone, where it would otherwise take the host's memory from every
// other process (issue 19, attack14 I8).
func workerData(memory int64) uint64 { return uint64(12*memory + 256<<20) }

// spawn starts a worker, trying again with a growing pause, and makes it
// idle.
func (p *procPool) spawn() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		w, err := p.startWorker()
		if err == nil {
			p.putIdle(w)
			return
		}
		select {
		case <-p.quit:
			return
		default:
		}
		p.log.Error("start sandbox worker", "err", err)
		p.mu.Lock()
		p.lastErr = err
		close(p.failed)
		p.failed = make(chan struct{})
		p.mu.Unlock()
		backoff = min(max(2*backoff, 20*time.Millisecond), 2*time.Second)
		select {
		case <-time.After(backoff):
		case <-p.quit:
			return
		}
	}
}

// get waits for an idle worker. Every slot has one, idle or starting, so
// the wait is the time a worker takes to start, bounded by helloTimeout:
// it fails at once when a start fails.
func (p *procPool) get(ctx interface{ Done() <-chan struct{} }) (*worker, *Error) {
	p.mu.Lock()
	failed := p.failed
	p.mu.Unlock()
	if len(p.idle) == 0 {
		p.startOwed()
	}
	timer := time.NewTimer(helloTimeout)
	defer timer.Stop()
	for {
		select {
		case <-p.idle:
			w := p.takeIdle()
			w.mu.Lock()
			dead := w.dead
			w.mu.Unlock()
			if dead { // it died while idle
				p.replace(w)
				continue
			}
			return w, nil
		case <-ctx.Done():
			return nil, &Error{Kind: KindCanceled, Message: "the run was cancelled while it waited for a sandbox"}
		case <-p.quit:
			return nil, errClosed
		case <-failed:
		case <-timer.C:
		}
		p.mu.Lock()
		err := p.lastErr
		p.mu.Unlock()
		if err == nil {
			err = errors.New("no worker process became ready")
		}
		return nil, &Error{Kind: KindInternal, Message: "could not start a sandbox worker process: " + err.Error()}
	}
}

// giveBack takes back the worker of a root run that has ended: it is
// idle again, or killed and replaced when it is dead, holds a VM that
// could not be stopped, or still runs nested jobs after a grace period.
func (p *procPool) giveBack(w *worker) {
	w.disarm()
	w.mu.Lock()
	dead, tainted, busy := w.dead, w.tainted, len(w.jobs) > 0
	w.mu.Unlock()
	switch {
	case dead:
		p.replace(w)
	case tainted:
		w.kill()
		p.replace(w)
	case busy:
		// Nested jobs of the run that ended are winding down.
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			deadline := time.Now().Add(2 * killGrace)
			for time.Now().Before(deadline) {
				w.mu.Lock()
				busy = len(w.jobs) > 0
				w.mu.Unlock()
				if !busy {
					p.putIdle(w)
					return
				}
				time.Sleep(time.Millisecond)
			}
			w.kill()
			p.replace(w)
		}()
	case p.retire():
		w.kill()
		p.mu.Lock()
		delete(p.workers, w)
		p.mu.Unlock()
	default:
		p.putIdle(w)
	}
}

// putIdle makes w idle; there are never more workers than room.
func (p *procPool) putIdle(w *worker) {
	p.idleMu.Lock()
	p.idleList = append(p.idleList, w)
	p.idleMu.Unlock()
	p.idle <- struct{}{}
}

// takeIdle takes the idle worker a run should get; the caller has
// received a token.
func (p *procPool) takeIdle() *worker {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	pick := 0 // idle longest
	for i := len(p.idleList) - 1; i >= 0; i-- {
		if p.idleList[i].ready() {
			pick = i
			break
		}
	}
	w := p.idleList[pick]
	p.idleList = append(p.idleList[:pick], p.idleList[pick+1:]...)
	return w
}

// idleCount returns the idle workers. Each takes a run at once: with
// the VM it prepared, or, while it is still preparing one, with a VM the
// run makes itself (Stats.Ready; a server is ready with one idle worker).
func (p *procPool) idleCount() int {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	return len(p.idleList)
}

// grow lets the pool have one more worker, for the slot a run gave back
// while it waits outside the pool keeping its own (see Park). The worker
// is started when a run finds none idle, so that a wait while nobody else
// needs a sandbox costs no process.
func (p *procPool) grow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.surplus > 0 {
		p.surplus-- // a worker that was to be retired stays
		return
	}
	p.owed++
}

// startOwed starts a worker the pool has grown by, if any is owed.
func (p *procPool) startOwed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owed == 0 || p.closed {
		return
	}
	p.owed--
	p.wg.Add(1)
	go p.spawn()
}

// shrink undoes a grow once the run that waited is back in the pool, or
// ended: a worker owed is no longer, or the next worker given back is
// retired.
func (p *procPool) shrink() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owed > 0 {
		p.owed--
		return
	}
	p.surplus++
}

// retire reports whether a worker given back is one too many, and counts
// it retired.
func (p *procPool) retire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.surplus == 0 {
		return false
	}
	p.surplus--
	return true
}

// replace starts a worker in place of w, which is dead or dying, unless
// the pool has one too many.
func (p *procPool) replace(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.workers, w)
	if p.closed {
		return
	}
	if p.surplus > 0 {
		p.surplus--
		return
	}
	p.wg.Add(1)
	go p.spawn()
}

// close kills every worker and waits for them to be reaped.
func (p *procPool) close() {
	p.mu.Lock()
	p.closed = true
	close(p.quit)
	ws := make([]*worker, 0, len(p.workers))
	for w := range p.workers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
	}
	p.wg.Wait()
	// Spawners that were starting a worker as close began have killed it.
	p.mu.Lock()
	for w := range p.workers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
		<-w.gone
	}
}

// startWorker starts a worker process and waits for its hello.
func (p *procPool) startWorker() (*worker, error) {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = []string{} // nothing of the server's: no secrets, no configuration
	cmd.SysProcAttr = workerAttr()
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, err
	}
	growPipe(stdin)
	growPipe(stdout)
	cmd.Stdin, cmd.Stdout = childIn, childOut
	stderr, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	childIn.Close() // the worker's ends are the worker's
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	if raceBuild {
		// The race detector's shadow memory is data: no limit holds.
	} else if err := limitWorker(cmd.Process.Pid, p.data); err != nil {
		p.log.Warn("no data limit for sandbox worker: a runaway worker may take the host's memory", "pid", cmd.Process.Pid, "err", err)
	}
	w := &worker{
		p:     p,
		cmd:   cmd,
		pid:   cmd.Process.Pid,
		w:     newFrameWriter(rawPipeOf(stdin, nil)),
		stdin: stdin,
		jobs:  map[uint32]*Run{},
		sent:  map[uint32]bool{},
		gone:  make(chan struct{}),

		readEnded: make(chan struct{}),
	}
	w.readyAfter.Store(-1)
	var alarmErr error
	if w.alarm, alarmErr = newAlarm(); alarmErr != nil {
		p.log.Warn("no alarm for sandbox worker: its runs are given up by the Go runtime's timers, late on a loaded machine", "pid", w.pid, "err", alarmErr)
	}
	var logging sync.WaitGroup
	logging.Add(1)
	go func() {
		defer logging.Done()
		w.logStderr(stderr)
	}()
	fr := newFrameReader(rawPipeOf(stdout, nil))
	fr.max = p.maxFrame
	hello := make(chan error, 1)
	go func() {
		f, err := fr.read()
		if err == nil && (f.typ != frameHello || string(f.body) != workerMagic) {
			err = errors.New("it did not open with the sandbox protocol; is the worker command right?")
		}
		hello <- err
	}()
	timer := time.NewTimer(helloTimeout)
	defer timer.Stop()
	select {
	case err = <-hello:
	case <-timer.C:
		err = fmt.Errorf("no word from it within %s", helloTimeout)
	case <-p.quit:
		err = errors.New("the executor closed")
	}
	if err == nil {
		p.mu.Lock()
		if p.closed {
			err = errors.New("the executor closed")
		} else {
			p.workers[w] = struct{}{}
		}
		p.mu.Unlock()
	}
	if err != nil {
		w.dead = true
		cmd.Process.Kill()
		if w.alarm != nil {
			w.alarm.close()
		}
		go func() {
			<-hello
			logging.Wait()
			cmd.Wait()
			stdin.Close()
			stdout.Close()
			close(w.gone)
		}()
		return nil, fmt.Errorf("sandbox worker %d: %w", w.pid, err)
	}
	// The first VM it prepares has the layout runs use now.
	w.mu.Lock()
	w.sendLayout(p.layout.Load())
	w.mu.Unlock()
	w.fr = fr
	watching := make(chan struct{})
	if w.alarm != nil {
		go func() {
			defer close(watching)
			w.watch()
		}()
	} else {
		close(watching)
	}
	go func() {
		w.read()
		<-w.readEnded
		logging.Wait()
		err := cmd.Wait()
		if w.alarm != nil {
			w.alarm.close()
		}
		<-watching
		stdin.Close()
		stdout.Close()
		if !w.killed.Load() {
			p.log.Error("sandbox worker exited", "pid", w.pid, "err", err)
		}
		close(w.gone)
	}()
	return w, nil
}

// worker is a sandbox worker process, seen from the executor.
type worker struct {
	p     *procPool
	cmd   *exec.Cmd
	pid   int
	w     *frameWriter
	stdin io.Closer

	mu      sync.Mutex
	jobs    map[uint32]*Run
	next    uint32
	sent    map[uint32]bool // layouts the worker has
	dead    bool            // killed, or exited: takes no more jobs
	tainted bool            // holds a VM that did not stop; killed when its root ends
	killed  atomic.Bool
	gone    chan struct{} // closed once the process is reaped
	// alarm goes off when the root run armed is to be given up, if it
	// has not ended (see watch); nil where the system has none.
	alarm *alarm
	armed atomic.Pointer[Run]
	// lastRoot is the latest root job sent; readyAfter the latest root
	// job the worker had when it said its next VM was ready, -1 before it
	// said so. The VM is ready for the next run while the two are equal.
	lastRoot   atomic.Int64
	readyAfter atomic.Int64

	// fr reads the worker's frames, on one goroutine at a time: the one
	// that runs read. A call flagged callSole is run on that goroutine
	// (inline names it, and is 0 otherwise); anything that may make the
	// worker send a frame while it runs (a nested job started, an
	// interrupt) first hands the reading to a new goroutine (handOff).
	// Guarded by mu.
	fr        *frameReader
	inline    uint64
	turns     uint64
	readEnded chan struct{} // closed when the frames end
}

// ready reports whether the worker has the VM of its next run prepared.
func (w *worker) ready() bool { return w.readyAfter.Load() == w.lastRoot.Load() }

// sendLayout sends l unless the worker has it. w.mu is held.
func (w *worker) sendLayout(l *Layout) error {
	if w.sent[l.id] {
		return nil
	}
	w.sent[l.id] = true
	return w.w.write(frameLayout, 0, enc(nil).u32(l.id), []byte(l.json))
}

func (w *worker) start(r *Run, spec *jobSpec) error {
	w.p.layout.Store(spec.Layout)
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return errors.New("the sandbox worker is gone")
	}
	w.handOff() // the job's frames are read while the call that starts it runs
	w.next++
	id := w.next
	r.job = id
	if !spec.Nested {
		w.lastRoot.Store(int64(id))
		if w.alarm != nil && spec.KillAt != 0 {
			w.armed.Store(r)
			w.alarm.set(spec.KillAt)
		}
	}
	w.jobs[id] = r
	err := w.sendLayout(spec.Layout)
	if err == nil {
		err = w.w.write(frameRun, id, encodeSpec(spec, spec.Layout.id), spec.Args)
	}
	if err != nil {
		delete(w.jobs, id)
		w.mu.Unlock()
		w.kill()
		return fmt.Errorf("send the program to sandbox worker %d: %w", w.pid, err)
	}
	w.mu.Unlock()
	if r.isStopped() {
		w.interrupt(r)
	}
	return nil
}

// complete sends r's VM a finished call. The result's hold (c.done)
// lasts until the worker says its VM has taken the result (frameAck), or
// r's job ends: in the worker's queue, a result is as much in flight as
// in this process (issue 19, attack14 I9).
func (w *worker) complete(r *Run, c callResult) {
	if c.done != nil {
		r.awaitAck(c.id, c.done)
	}
	if w.w.write(frameResult, r.job, enc(nil).u32(c.id).u8(c.flags()), c.payload) != nil && c.done != nil {
		r.acked(c.id) // it never reached the worker
	}
}

// interrupt asks r's VM to stop, and gives its worker the lowest
// priority at once: a VM inside a built-in's own loop never stops, and
// until it is killed it must not delay the server, whose timers kill it.
// (Waiting a few milliseconds to see whether the VM stops left the kill
// late on a loaded machine.)
func (w *worker) interrupt(r *Run) {
	w.mu.Lock()
	id, dead := r.job, w.dead
	if !dead {
		w.handOff() // the outcome is read while a call runs on
	}
	w.mu.Unlock()
	if id == 0 || dead {
		return
	}
	w.w.write(frameInterrupt, id, nil, nil)
	w.demote()
}

// demote gives the worker the lowest priority (workers otherwise run at
// the server's). It cannot be raised again: the worker is killed when
// its root run ends.
func (w *worker) demote() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead || w.tainted {
		return
	}
	w.tainted = true
	demoteProcess(w.pid)
}

// watch gives up the root run armed when the alarm goes off, until the
// alarm is closed. The worker has killed itself by then, at the same
// time (jobSpec.KillAt), unless it could not arm its own timer; the
// run's end is decided here or when the worker's frames end, whichever
// comes first.
func (w *worker) watch() {
	for w.alarm.wait() == nil {
		// An alarm set for an earlier run may be seen late: only a run
		// past its time is given up.
		if r := w.armed.Load(); r != nil && r.pastKill() {
			r.expire()
		}
	}
}

// disarm stops the alarm: the root run armed has ended.
func (w *worker) disarm() {
	if w.alarm != nil {
		w.armed.Store(nil)
		w.alarm.set(0)
	}
}

func (w *worker) abandon(r *Run) {
	if r.parent == nil {
		w.kill()
		return
	}
	// A nested run's VM is in its root's worker: the root goes on, and the
	// worker is killed when it ends.
	w.mu.Lock()
	w.tainted = true
	w.mu.Unlock()
	r.deliver(outcome{status: outLost})
}

// kill kills the process and ends every run in it.
func (w *worker) kill() {
	w.killed.Store(true)
	w.end(outcome{status: outLost, kind: KindCanceled})
}

// end marks the worker dead, kills the process if it still runs, and ends
// every run in it with o.
func (w *worker) end(o outcome) {
	w.mu.Lock()
	w.dead = true
	w.handOff() // the frames' end is read while a call runs on
	jobs := w.jobs
	w.jobs = map[uint32]*Run{}
	w.mu.Unlock()
	w.cmd.Process.Kill()
	for _, r := range jobs {
		r.deliver(o)
		r.ended()
	}
}

// read delivers the worker's frames to its runs until the process ends
// or breaks the protocol, and then ends the runs left; or until a call
// it ran itself was handed the reading to another goroutine.
//
// A tool call goes to a goroutine of its own (callers), so that the
// frames after it are read while it runs; but one that its VM waits for
// alone, in a worker that runs nothing else (callSole), and with no frame
// behind it, runs here: until it completes nothing can come from the
// worker but what the call itself starts there — a nested job, or an
// interrupt's outcome — and those hand the reading off first. A program
// that awaits its calls one by one so pays no hand-off between
// goroutines per call on this side.
func (w *worker) read() {
	for {
		f, err := w.fr.read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !w.killed.Load() {
				w.p.log.Error("sandbox worker", "pid", w.pid, "err", err)
			}
			w.stopReading()
			return
		}
		if f.typ == frameReady {
			w.readyAfter.Store(int64(f.job))
			continue
		}
		w.mu.Lock()
		r := w.jobs[f.job]
		alone := len(w.jobs) == 1
		if f.typ == frameDone {
			delete(w.jobs, f.job)
		}
		w.mu.Unlock()
		if r == nil {
			if f.typ != frameDone && f.typ != frameCall && f.typ != frameLog && f.typ != frameProgress && f.typ != frameAck {
				w.p.log.Error("sandbox worker sent an unknown frame", "pid", w.pid, "type", f.typ)
				w.stopReading()
				return
			}
			continue
		}
		d := dec{b: f.body}
		switch f.typ {
		case frameCall:
			id := d.u32()
			flags := d.u8()
			name := d.str()
			args := d.rest()
			if d.err != nil || !r.record(id, name, args) {
				break
			}
			r.e.calls.Add(1)
			if flags&callSole == 0 || !alone || w.fr.r.Buffered() > 0 {
				r.e.callers.start(callTask{r, id, name, args})
				break
			}
			if !w.runInline(r, id, name, args) {
				return // another goroutine reads now
			}
		case frameAck:
			for len(d.b) > 0 && d.err == nil {
				r.acked(d.u32())
			}
		case frameLog:
			level := d.u8()
			if d.err == nil {
				r.onLog(int(level), string(d.rest()))
			}
		case frameProgress:
			fraction := f64frombits(d.u64())
			if d.err == nil {
				r.onProgress(string(d.rest()), fraction)
			}
		case frameDone:
			o, err := decodeOutcome(f.body)
			if err != nil {
				o = outcome{status: outInternal, message: "malformed outcome from the sandbox worker"}
			}
			r.deliver(o)
			r.ended()
		default:
			w.p.log.Error("sandbox worker sent an unknown frame", "pid", w.pid, "type", f.typ)
			w.stopReading()
			return
		}
		if d.err != nil {
			w.p.log.Error("sandbox worker sent a malformed frame", "pid", w.pid, "type", f.typ)
			w.stopReading()
			return
		}
	}
}

// runInline runs a call on the reading goroutine, and reports whether
// it still reads.
func (w *worker) runInline(r *Run, id uint32, name string, args []byte) bool {
	w.mu.Lock()
	w.turns++
	turn := w.turns
	w.inline = turn
	w.mu.Unlock()
	r.dispatch(id, name, args)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inline != turn {
		return false
	}
	w.inline = 0
	return true
}

// handOff makes a new goroutine read the worker's frames when the one
// that reads them runs a call. w.mu is held.
func (w *worker) handOff() {
	if w.inline == 0 {
		return
	}
	w.inline = 0
	go w.read()
}

// stopReading ends the runs left once the frames end. A worker whose
// root run is past the time its VM is given up has been killed by its
// death timer (jobSpec.KillAt): that is the run's timeout, decided now,
// however late this process's own timers are, and no news for the log.
func (w *worker) stopReading() {
	o := outcome{status: outLost}
	w.mu.Lock()
	root := w.jobs[uint32(w.lastRoot.Load())]
	w.mu.Unlock()
	if root != nil && root.pastKill() {
		w.killed.Store(true)
		o = outcome{status: outLimit, kind: KindTimeout}
	}
	w.end(o)
	close(w.readEnded)
}

// logStderr passes what the worker writes on stderr (the Go runtime's
// reports of a crash, normally nothing) to the log, a bounded number of
// lines of bounded length, and drains the rest.
func (w *worker) logStderr(r io.Reader) {
	const maxLines, maxLine = 200, 1 << 10
	br := bufio.NewReader(r)
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if len(line) > 0 && n < maxLines {
			line = bytes.TrimRight(line, "\n")
			if len(line) > maxLine {
				line = line[:maxLine]
			}
			w.p.log.Warn("sandbox worker stderr", "pid", w.pid, "line", string(line))
		}
		if err != nil {
			return
		}
	}
}
