package executor

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// ServeWorker runs a sandbox worker: the process that holds the VMs of
// one pool slot under process isolation. It reads the executor's frames
// from in (the worker's stdin) and writes its own to out (its stdout),
// and returns when in ends, which is how the executor stops it; the
// process should then exit, taking any VM still running with it. Nothing
// else may write to out. Config.WorkerCommand starts a program that calls
// it, such as codecell's hidden "sandbox-worker" command.
func ServeWorker(in io.Reader, out io.Writer) error {
	prelude, err := compilePrelude()
	if err != nil {
		return err
	}
	s := &workerServer{
		w:       newFrameWriter(out),
		prelude: prelude,
		jobs:    map[uint32]*vmJob{},
		layouts: map[uint32]*Layout{},
		vms:     make(chan *instance, 1),
	}
	if err := s.w.write(frameHello, 0, []byte(workerMagic), nil); err != nil {
		return fmt.Errorf("sandbox worker: %w", err)
	}
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
	w       *frameWriter
	prelude []byte

	mu      sync.Mutex
	jobs    map[uint32]*vmJob
	layouts map[uint32]*Layout
	latest  *Layout // the VM prepared next gets it
	// vms holds the VM prepared for the next root job; preparing is set
	// while one is on its way.
	vms       chan *instance
	preparing bool
}

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
		s.mu.Unlock()
		s.prepare()
	case frameRun:
		spec, layout, err := decodeSpec(f.body)
		if err != nil {
			return err
		}
		s.mu.Lock()
		spec.Layout = s.layouts[layout]
		j := newVMJob(spec, workerHost{s: s, job: f.job})
		s.jobs[f.job] = j
		s.mu.Unlock()
		go s.run(f.job, j)
	case frameResult:
		d := dec{b: f.body}
		c := callResult{id: d.u32(), ok: d.bool()}
		c.payload = d.rest()
		if d.err != nil {
			return errFrame
		}
		s.mu.Lock()
		j := s.jobs[f.job]
		s.mu.Unlock()
		if j != nil {
			j.inbox.push(c)
		}
	case frameInterrupt:
		s.mu.Lock()
		j := s.jobs[f.job]
		s.mu.Unlock()
		if j != nil {
			j.stop()
		}
	default:
		return fmt.Errorf("%w: unknown type %d", errFrame, f.typ)
	}
	return nil
}

// run runs one job and reports its outcome. A root job takes the VM
// prepared for it, and prepares the next once it is done.
func (s *workerServer) run(id uint32, j *vmJob) {
	var out outcome
	in, err := s.take(j.spec)
	if err != nil {
		out = outcome{status: outInternal, message: err.Error()}
	} else {
		out = j.run(in)
	}
	s.w.write(frameDone, id, encodeOutcome(&out), out.payload)
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	if !j.spec.Nested {
		s.prepare()
	}
	if in != nil {
		in.close()
	}
}

// take returns a fresh VM for spec: the prepared one, for a root job
// whose layout it has.
func (s *workerServer) take(spec *jobSpec) (*instance, error) {
	if spec.Layout == nil {
		return nil, errors.New("the program's layout never reached the sandbox worker")
	}
	if !spec.Nested {
		s.mu.Lock()
		waiting := s.preparing || len(s.vms) > 0
		s.mu.Unlock()
		if waiting {
			in := <-s.vms
			if in != nil && in.layout == spec.Layout {
				return in, nil
			}
			if in != nil {
				in.close()
			}
		}
	}
	return newInstance(s.prelude, spec.Layout)
}

// prepare makes the next root job's VM in the background, unless one is
// ready or on its way.
func (s *workerServer) prepare() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preparing || len(s.vms) > 0 || s.latest == nil {
		return
	}
	s.preparing = true
	layout := s.latest
	go func() {
		in, err := newInstance(s.prelude, layout)
		if err != nil {
			in = nil // the job makes its own
		}
		// Together, so that take never waits for a VM another job took:
		// there is room, as one VM is prepared at a time.
		s.mu.Lock()
		s.vms <- in
		s.preparing = false
		s.mu.Unlock()
	}()
}

// workerHost sends what a job reports to the executor.
type workerHost struct {
	s   *workerServer
	job uint32
}

func (h workerHost) call(id uint32, name, args string) {
	h.s.w.write(frameCall, h.job, enc(nil).u32(id).str(name), unsafe.Slice(unsafe.StringData(args), len(args)))
}

func (h workerHost) log(level int, text string) {
	h.s.w.write(frameLog, h.job, enc(nil).u8(uint8(level)), unsafe.Slice(unsafe.StringData(text), len(text)))
}

func (h workerHost) progress(message string, fraction float64) {
	h.s.w.write(frameProgress, h.job, enc(nil).u64(f64bits(fraction)), []byte(message))
}
