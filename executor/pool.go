package executor

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"
)

// pool hands out fresh VMs. It bounds the runs in progress with slots and
// keeps up to cap(ready) VMs prepared ahead of time by its maintainer
// goroutine, which also closes the VMs that runs are done with. A VM serves
// exactly one run.
type pool struct {
	prelude []byte // prelude bytecode
	limits  runtimeLimits
	log     *slog.Logger
	// layout is what the maintainer installs in the VMs it prepares: the
	// layout of the latest run.
	layout atomic.Pointer[Layout]

	slots  chan struct{}
	ready  chan *instance
	retire chan *instance
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

// runtimeLimits are the limits the prelude enforces itself.
type runtimeLimits struct {
	logBytes, resultBytes int
}

func newPool(size int, prelude []byte, limits runtimeLimits, log *slog.Logger) *pool {
	p := &pool{
		prelude: prelude,
		limits:  limits,
		log:     log,
		slots:   make(chan struct{}, size),
		ready:   make(chan *instance, size),
		retire:  make(chan *instance, 2*size),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.layout.Store(emptyLayout)
	go p.maintain()
	return p
}

// maintain keeps the ready queue full and closes retired VMs until quit.
// Preparing comes first: a run waits for a ready VM, while a retired one
// can wait for an idle moment to be closed.
func (p *pool) maintain() {
	defer close(p.done)
	backoff := time.Duration(0)
	for {
		for backoff == 0 && len(p.ready) < cap(p.ready) {
			select {
			case <-p.quit:
				return
			default:
			}
			in, err := p.newInstance(p.layout.Load())
			if err != nil {
				// Runs still get VMs, made on demand; try again later.
				p.log.Error("prepare vm", "err", err)
				backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
				break
			}
			p.ready <- in // only maintain sends, and there is room
		}
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case in := <-p.retire:
			in.close()
		case <-p.wake:
		case <-retry:
			backoff = 0
		case <-p.quit:
			return
		}
	}
}

// take returns a prepared VM with layout installed, or makes one when none
// is ready. VMs prepared with another layout (the catalogue changed) are
// closed, and the maintainer prepares the next ones with layout.
func (p *pool) take(layout *Layout) (*instance, error) {
	if p.layout.Load() != layout {
		p.layout.Store(layout)
	}
	for {
		select {
		case in := <-p.ready:
			p.poke()
			if in.layout == layout {
				return in, nil
			}
			p.discard(in)
			continue
		default:
		}
		break
	}
	p.poke()
	return p.newInstance(layout)
}

// discard hands a used VM to the maintainer to close.
func (p *pool) discard(in *instance) {
	select {
	case p.retire <- in:
		p.poke()
	default:
		in.close()
	}
}

func (p *pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// close stops the maintainer and closes every VM it holds. Runs in
// progress must have ended.
func (p *pool) close() {
	close(p.quit)
	<-p.done
	for {
		select {
		case in := <-p.ready:
			in.close()
		case in := <-p.retire:
			in.close()
		default:
			return
		}
	}
}

// instance is a VM with the runtime and a layout's namespaces installed,
// waiting for its one run.
type instance struct {
	vm      *quickjs.VM
	layout  *Layout
	setArgs quickjs.Value
	settle  quickjs.Value
	// run is the run in progress; host functions reach it through here.
	run *run
}

func (p *pool) newInstance(layout *Layout) (in *instance, err error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("new vm: %w", err)
	}
	in = &instance{vm: vm, layout: layout}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	for name, f := range map[string]any{
		"__cc_call":     in.hostCall,
		"__cc_log":      in.hostLog,
		"__cc_done":     in.hostDone,
		"__cc_progress": in.hostProgress,
	} {
		if err := vm.RegisterFunc(name, f, false); err != nil {
			return in, fmt.Errorf("register %s: %w", name, err)
		}
	}
	api, err := vm.EvalBytecodeValue(p.prelude)
	if err != nil {
		return in, fmt.Errorf("load prelude: %w", err)
	}
	defer api.Free()
	install, err := property(vm, api, "install")
	if err != nil {
		return in, err
	}
	defer install.Free()
	if _, err := install.Call(quickjs.UndefinedValue, layout.json, p.limits.logBytes, p.limits.resultBytes); err != nil {
		return in, fmt.Errorf("install namespaces: %w", err)
	}
	if in.setArgs, err = property(vm, api, "setArgs"); err != nil {
		return in, err
	}
	if in.settle, err = property(vm, api, "settle"); err != nil {
		return in, err
	}
	return in, nil
}

func property(vm *quickjs.VM, v quickjs.Value, name string) (quickjs.Value, error) {
	atom, err := vm.NewAtom(name)
	if err != nil {
		return quickjs.Value{}, fmt.Errorf("atom %s: %w", name, err)
	}
	p, err := v.GetPropertyValue(atom)
	if err != nil {
		return quickjs.Value{}, fmt.Errorf("prelude %s: %w", name, err)
	}
	if p.IsUndefined() {
		return quickjs.Value{}, errors.New("prelude has no " + name)
	}
	return p, nil
}

// close releases the VM. A VM whose engine was abandoned by a panic is
// closed too; quickjs then leaks its memory rather than touching it.
func (in *instance) close() {
	defer func() {
		// Close must never take the server down.
		_ = recover()
	}()
	if in.setArgs.VM() != nil {
		in.setArgs.Free()
	}
	if in.settle.VM() != nil {
		in.settle.Free()
	}
	in.vm.Close()
}
