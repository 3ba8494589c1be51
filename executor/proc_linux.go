package executor

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
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

// pollableFile returns f's descriptor as a pipe that waits through the Go
// runtime's poller, when f is a pipe (a worker's stdin and stdout): a
// goroutine that waits on it then holds no thread, and wakes where the
// frame is handled. Otherwise it returns f.
func pollableFile(f *os.File) io.ReadWriter {
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
	nf := os.NewFile(fd, f.Name())
	if rc, err = nf.SyscallConn(); err != nil {
		return nf
	}
	return rawPipe{f: nf, rc: rc}
}

// rawPipe reads and writes a non-blocking pipe with raw system calls, and
// waits for it through the poller. A system call made through package
// syscall (as os.File's are) wakes the runtime's sysmon thread from its
// sleep, which then wakes every 20 µs for a millisecond or more: a fifth
// of a sandbox worker's CPU samples under make load. A raw read or write
// of a non-blocking descriptor cannot block, so it needs no such watch.
type rawPipe struct {
	f  *os.File // keeps the descriptor open
	rc syscall.RawConn
}

func (p rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until it is readable
			case 0:
				n = int(r)
			}
			errno = e
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

func (p rawPipe) Write(b []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := p.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until it is writable
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
