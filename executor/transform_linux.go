package executor

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// limitTransform bounds the data (private writable memory, the heap and goroutine
// stacks) of this transform process. Not RLIMIT_AS: the Go runtime
// reserves far more address space than it uses.
func limitTransform(bytes uint64) {
	syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: bytes, Max: bytes})
}

// limitWorker bounds the data of the sandbox worker process pid
// (RLIMIT_DATA): its VMs' heaps, their large blocks, and its Go heap.
func limitWorker(pid int, bytes uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: bytes, Max: bytes}, nil)
}
