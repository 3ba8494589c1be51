package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// A transform pool keeps a few transform processes warm, so that a
// TypeScript run does not pay a process start (8–12 ms) for its parse.
// A process serves one parse at a time, for the run or call that took it
// exclusively; between parses it holds nothing of the programs it parsed
// (esbuild's Transform keeps no state across calls) but the memory its
// heap grew to, which bounds how often it is reused (transformReuse,
// transformHeld). A parse that passes its deadline kills its process, as
// does a crash; a replacement is started in the background. A parse that
// finds no process idle starts one for itself rather than wait behind
// another principal's parse.

// The protocol of a transform process, in the sandbox workers' frames:
// the process opens with frameHello (transformMagic), then answers each
// frameParse with a frameParsed of the same job.
const (
	frameParse  byte = 11 // executor → transform process: u8 language ('j', 't') | program
	frameParsed byte = 12 // transform process → executor: u64 bytes held | transformed JSON
	// transformMagic opens a transform process's output.
	transformMagic = "codecell-transform/1"
)

// transformReuse is how many parses a transform process serves before
// it is replaced: a bound on what it may accumulate across principals,
// and a process start every transformReuse parses at most.
const transformReuse = 256

// transformHeld is the memory a transform process may hold from the
// system after a parse (its heap and stacks, what it took for the
// largest parse so far included) and be reused: a process past it is
// replaced, so that the next parse starts with the room a fresh process
// has under transformMemory. A fresh process holds about 4 MiB, one that
// parsed a 100 KiB TypeScript program 12 MiB, one that parsed 20,000
// nested brackets 73 MiB; a hostile program can leave most of
// transformMemory.
const transformHeld = 64 << 20

// errTransformGone is a parse that could not be sent: the process had
// died before it (a process reads a whole program before it parses).
var errTransformGone = errors.New("the transform process was gone")

// errTransformOutput is a parse whose output passed maxTransformOutput.
var errTransformOutput = errors.New("the transform process's output is too large")

// transformPool holds the warm transform processes.
type transformPool struct {
	argv []string
	log  *slog.Logger
	size int // processes kept warm
	// reuse and held are transformReuse and transformHeld.
	reuse int
	held  uint64

	wg     sync.WaitGroup // spawners and reapers
	quit   chan struct{}
	mu     sync.Mutex
	idle   []*transformProc // the last given back at the end
	warm   int              // the pool's processes: idle, lent or starting
	procs  map[*transformProc]struct{}
	closed bool
}

// transformProc is one transform process.
type transformProc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	w      *frameWriter
	r      *frameReader
	stderr *capped // read once exited is closed
	member bool    // one of the pool's warm processes
	hello  bool    // its hello was read
	parses int     // parses served
	job    uint32  // the latest parse's
	exited chan struct{}
}

// newTransformPool starts size transform processes in the background.
func newTransformPool(size int, argv []string, log *slog.Logger) *transformPool {
	p := &transformPool{argv: argv, log: log, size: size, reuse: transformReuse, held: transformHeld, quit: make(chan struct{}), procs: map[*transformProc]struct{}{}}
	p.mu.Lock()
	p.refill()
	p.mu.Unlock()
	return p
}

// refill starts processes in the background until the pool has its
// size. p.mu is held.
func (p *transformPool) refill() {
	for ; p.warm < p.size && !p.closed; p.warm++ {
		p.wg.Add(1)
		go p.spawn()
	}
}

// spawn starts a warm process, trying again with a growing pause, and
// makes it idle once it has said hello.
func (p *transformPool) spawn() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		t, err := p.start()
		if err == nil {
			timer := time.AfterFunc(helloTimeout, t.kill)
			err = t.readHello()
			if !timer.Stop() {
				err = fmt.Errorf("no word from it within %s", helloTimeout)
			}
			if err == nil {
				t.member = true
				p.mu.Lock()
				closed := p.closed
				if !closed {
					p.idle = append(p.idle, t)
				}
				p.mu.Unlock()
				if closed {
					t.kill()
				}
				return
			}
			t.kill()
		}
		select {
		case <-p.quit:
			return
		default:
		}
		p.log.Error("start transform process", "err", err)
		backoff = min(max(2*backoff, 20*time.Millisecond), 2*time.Second)
		select {
		case <-time.After(backoff):
		case <-p.quit:
			return
		}
	}
}

// get takes an idle process, or starts one when none is idle.
func (p *transformPool) get() (*transformProc, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		t := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-t.exited: // it died while idle
			p.lost(t)
			continue
		default:
		}
		p.mu.Unlock()
		return t, nil
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errors.New("the executor closed")
	}
	return p.start()
}

// giveBack takes back a process whose parse succeeded and that held
// held bytes after it: it is idle again, or, when it has served enough
// parses, holds too much, or is one too many, it is ended (and one of
// the pool's replaced).
func (p *transformPool) giveBack(t *transformProc, held uint64) {
	t.parses++
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
	case t.parses >= p.reuse || held > p.held:
		p.log.Debug("transform process replaced", "parses", t.parses, "held", held)
	case t.member:
		p.idle = append(p.idle, t)
		return
	case p.warm < p.size:
		t.member = true
		p.warm++
		p.idle = append(p.idle, t)
		return
	}
	t.kill()
	p.lost(t)
}

// discard ends a process whose parse failed or was given up.
func (p *transformPool) discard(t *transformProc) {
	t.kill()
	p.mu.Lock()
	p.lost(t)
	p.mu.Unlock()
}

// lost accounts for t, which is dying, and replaces it when it was one
// of the pool's. p.mu is held.
func (p *transformPool) lost(t *transformProc) {
	if t.member {
		t.member = false
		p.warm--
		p.refill()
	}
}

// idleCount returns the warm processes that are idle.
func (p *transformPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// close kills every process and waits for them to be reaped.
func (p *transformPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.quit)
	ts := make([]*transformProc, 0, len(p.procs))
	for t := range p.procs {
		ts = append(ts, t)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, t := range ts {
		t.kill()
	}
	p.wg.Wait()
}

// start starts a transform process; its hello is read with its first
// parse (or by spawn).
func (p *transformPool) start() (*transformProc, error) {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = []string{} // nothing of the server's: no secrets, no configuration
	cmd.SysProcAttr = workerAttr()
	cmd.WaitDelay = time.Second
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
	t := &transformProc{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &capped{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, t.stderr
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		childIn.Close()
		childOut.Close()
		stdin.Close()
		stdout.Close()
		return nil, errors.New("the executor closed")
	}
	err = cmd.Start()
	if err == nil {
		p.procs[t] = struct{}{}
		p.wg.Add(1)
	}
	p.mu.Unlock()
	childIn.Close() // the process's ends are the process's
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	t.w = newFrameWriter(stdin)
	t.r = newFrameReader(stdout)
	go func() {
		defer p.wg.Done()
		cmd.Wait()
		stdin.Close()
		stdout.Close()
		p.mu.Lock()
		delete(p.procs, t)
		p.mu.Unlock()
		close(t.exited)
	}()
	return t, nil
}

// kill kills the process; its reaper closes exited.
func (t *transformProc) kill() { t.cmd.Process.Kill() }

// readHello reads the process's first frame.
func (t *transformProc) readHello() error {
	t.r.max = uint32(len(transformMagic)) + frameHeader
	f, err := t.r.read()
	if err == nil && (f.typ != frameHello || string(f.body) != transformMagic) {
		err = errors.New("it did not open with the transform protocol; is the transform command right?")
	}
	t.hello = err == nil
	return err
}

// parse sends one program and reads what came of it, up to max bytes,
// and the memory the process held after the parse. The caller kills the
// process when the parse's deadline passes, which ends the read.
func (t *transformProc) parse(lang byte, code string, max int64) ([]byte, uint64, error) {
	t.job++
	if err := t.w.write(frameParse, t.job, []byte{lang}, []byte(code)); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errTransformGone, err)
	}
	if !t.hello {
		if err := t.readHello(); err != nil {
			return nil, 0, err
		}
	}
	t.r.max = uint32(min(max+frameHeader+8, maxFrame))
	f, err := t.r.read()
	if errors.Is(err, errFrame) {
		return nil, 0, errTransformOutput
	}
	if err != nil {
		return nil, 0, err
	}
	if f.typ != frameParsed || f.job != t.job || len(f.body) < 8 {
		return nil, 0, fmt.Errorf("%w: type %d for parse %d", errFrame, f.typ, f.job)
	}
	d := dec{b: f.body}
	held := d.u64()
	return d.rest(), held, nil
}

// waitExit waits, up to two seconds, for a killed process to be reaped and
// returns what it wrote on stderr.
func (t *transformProc) waitExit(ctx context.Context) string {
	select {
	case <-t.exited:
		return t.stderr.b.String()
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	return ""
}
