//go:build !unix

package executor

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// workerAttr has nothing to add here: a worker ends when it reads the end
// of its stdin.
func workerAttr() *syscall.SysProcAttr { return nil }

// lowerThreadPriority does nothing here.
func lowerThreadPriority() {}

// pollableFile returns f.
func pollableFile(f *os.File) *os.File { return f }

// growPipe keeps the system's pipe buffer.
func growPipe(*os.File) {}

// demoteProcess does nothing here.
func demoteProcess(int) {}

// rawPipeOf returns f.
func rawPipeOf(f *os.File, _ *atomic.Bool) io.ReadWriter { return f }
