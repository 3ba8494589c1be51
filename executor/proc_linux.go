package executor

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
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
