//go:build unix && !linux

package executor

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// workerAttr puts a worker in a process group of its own, so that a
// terminal's ^C reaches only the server, which stops its workers itself.
// A worker outlives a server killed outright only until it reads the end
// of its stdin.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// lowerThreadPriority does nothing here: priorities are per process.
func lowerThreadPriority() {}

// pollableFile returns f: kqueue does not report the end of a pipe whose
// writer is gone on every system, and a worker must see its stdin end.
func pollableFile(f *os.File) *os.File { return f }

// growPipe keeps the system's pipe buffer.
func growPipe(*os.File) {}

// demoteNice is the priority of a worker whose run did not stop when
// interrupted: it is stuck inside a built-in and about to be killed, and
// must not delay the server, whose timers kill it.
const demoteNice = 19

// demoteProcess gives process pid demoteNice.
func demoteProcess(pid int) {
	syscall.Setpriority(syscall.PRIO_PROCESS, pid, demoteNice)
}

// rawPipeOf returns f.
func rawPipeOf(f *os.File, _ *atomic.Bool) io.ReadWriter { return f }
