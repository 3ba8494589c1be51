package executor

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// workerAttr puts a worker in a process group of its own, so that a
// terminal's ^C reaches only the server, which stops its workers itself,
// and has the kernel kill it when the server dies.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// choresNice is the scheduling priority of a worker's chores thread,
// which prepares and closes VMs: below its runs' and the server's, so
// that the work no run waits for takes the CPU only when they leave it.
const choresNice = 10

// lowerThreadPriority locks the calling goroutine to its thread and gives
// the thread choresNice. The thread ends with the goroutine, and the Go
// runtime starts new threads from a template thread, never from a locked
// one, so no other goroutine inherits the priority. Failing that, the
// thread keeps the process's priority.
func lowerThreadPriority() {
	runtime.LockOSThread()
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), choresNice)
}

// pollableFile returns a file for f's descriptor that waits through the Go
// runtime's poller, when f is a pipe (a worker's stdin and stdout): a
// goroutine that waits on it then holds no thread, and wakes where the
// frame is handled. Otherwise it returns f.
func pollableFile(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	var fd uintptr
	ok := false
	rc.Control(func(d uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(d), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO && syscall.SetNonblock(int(d), true) == nil {
			fd, ok = d, true
		}
	})
	if !ok {
		return f
	}
	return os.NewFile(fd, f.Name())
}

// pipeSize is the buffer the executor asks for on a worker's pipes: a
// tool result of several hundred kilobytes then crosses in a few writes
// and wake-ups instead of one per 64 KiB. Linux lets an unprivileged
// process have up to /proc/sys/fs/pipe-max-size, 1 MiB by default.
const pipeSize = 1 << 20

// growPipe asks for pipeSize bytes of buffer on the pipe f, and keeps the
// default when the system refuses.
func growPipe(f *os.File) {
	const fSetPipeSize = 1031 // F_SETPIPE_SZ
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, pipeSize)
	})
}

// demoteNice is the priority of a worker whose run did not stop when
// interrupted: it is stuck inside a built-in and about to be killed, and
// must not delay the server, whose timers kill it.
const demoteNice = 19

// demoteProcess gives every thread of process pid demoteNice. Linux keeps
// a priority per thread, so each is set; threads started meanwhile
// inherit it from the thread that started them.
func demoteProcess(pid int) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		syscall.Setpriority(syscall.PRIO_PROCESS, pid, demoteNice)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			syscall.Setpriority(syscall.PRIO_PROCESS, tid, demoteNice)
		}
	}
}

// monotonicAt returns when t is on the system's monotonic clock
// (CLOCK_MONOTONIC, in nanoseconds), which a worker's death timer runs on
// and which every process reads alike, or 0 when the clock cannot be
// read. Go's own monotonic readings come from that clock but are not
// exposed, so t is placed by the time left until it; that is read first,
// so the result is never earlier than t.
func monotonicAt(t time.Time) int64 {
	left := time.Until(t)
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		return 0
	}
	return now.Nano() + int64(left)
}

// sigevent is the kernel's struct sigevent, as timer_create reads it:
// the value, the signal, how to notify, and padding to 64 bytes.
type sigevent struct {
	value  uintptr
	signo  int32
	notify int32
	_      [64 - 8 - unsafe.Sizeof(uintptr(0))]byte
}

const sigevSignal = 0 // SIGEV_SIGNAL: send the process signo

// deathTimer is a kernel timer that sends this process SIGKILL when it
// expires. A worker sets it, for each root job, to the time the executor
// gives up the job's VM (its deadline plus killGrace): a VM stuck inside
// a built-in's own loop never sees its interrupt, and the executor's
// timers may run late on a loaded machine, but the kernel kills the
// process on time whatever runs or waits in it.
type deathTimer struct{ id int32 }

// newDeathTimer creates the timer, disarmed, or fails when the kernel
// refuses it; the executor then kills the worker itself.
func newDeathTimer() (*deathTimer, error) {
	ev := sigevent{signo: int32(unix.SIGKILL), notify: sigevSignal}
	var id int32
	if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return nil, e
	}
	return &deathTimer{id: id}, nil
}

// set makes the timer expire at at, a time on the monotonic clock (at
// once if it has passed), or disarms it when at is 0.
func (t *deathTimer) set(at int64) {
	var v unix.ItimerSpec
	if at > 0 {
		v.Value = unix.NsecToTimespec(at)
	}
	unix.Syscall6(unix.SYS_TIMER_SETTIME, uintptr(t.id), unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
}

// alarm is a kernel timer (a timerfd) that the executor waits on through
// the Go runtime's poller: it wakes the goroutine that gives up a
// worker's root run. The runtime's own timers wait in the heap of the P
// that set them, and run late when that P's thread is off the CPU, which
// a loaded machine does for hundreds of milliseconds; the poller is
// checked by any P and by the runtime's monitor thread, which needs none.
type alarm struct {
	f  *os.File
	rc syscall.RawConn
}

// newAlarm creates an alarm, disarmed.
func newAlarm() (*alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "alarm")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &alarm{f: f, rc: rc}, nil
}

// set makes the alarm go off at at, a time on the monotonic clock (at
// once if it has passed), or disarms it when at is 0. An alarm that went
// off and was not waited for is forgotten.
func (a *alarm) set(at int64) {
	var v unix.ItimerSpec
	if at > 0 {
		v.Value = unix.NsecToTimespec(at)
	}
	a.rc.Control(func(fd uintptr) {
		unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &v, nil)
	})
}

// wait returns when the alarm goes off, or with an error once it is
// closed.
func (a *alarm) wait() error {
	var n [8]byte // the number of expirations
	_, err := a.f.Read(n[:])
	return err
}

// close ends the alarm, and any wait.
func (a *alarm) close() { a.f.Close() }

// rawPipe reads and writes a non-blocking pipe with raw system calls,
// waiting for it through the Go runtime's poller when it has nothing to
// give or no room, as os.File does. A system call made through package
// syscall tells the scheduler it may block, and the first one after every
// P of the process was idle wakes the runtime's monitor thread (sysmon),
// which then polls every 20 µs until it sees the process idle again: on
// the executor's side of a worker's pipes, a frame each way per tool call
// while the server waits for the worker between them, that was a fifth of
// the server's CPU on 100 sequential calls. A call on a non-blocking
// descriptor returns at once, so the scheduler need not know of it.
type rawPipe struct {
	f  *os.File
	rc syscall.RawConn
	// only, when set, makes the calls raw only while it holds, and
	// os.File's otherwise.
	only *atomic.Bool
}

// rawPipeOf returns f as a rawPipe when its descriptor is non-blocking
// and waits through the poller (a pipe os.Pipe made, or pollableFile's),
// and f otherwise: a raw read of a blocking descriptor would hold its
// thread without the scheduler knowing. When only is not nil, the calls
// are raw only while it holds.
func rawPipeOf(f *os.File, only *atomic.Bool) io.ReadWriter {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	nonblock := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	})
	if !nonblock {
		return f
	}
	return &rawPipe{f: f, rc: rc, only: only}
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if p.only != nil && !p.only.Load() {
		return p.f.Read(b)
	}
	if len(b) == 0 {
		return 0, nil
	}
	n, errno := 0, syscall.Errno(0)
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (p *rawPipe) Write(b []byte) (int, error) {
	if p.only != nil && !p.only.Load() {
		return p.f.Write(b)
	}
	n, errno := 0, syscall.Errno(0)
	err := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return n, nil
}
