package executor

import "syscall"

// limitTransform bounds the data (private writable memory, the heap and goroutine
// stacks) of this transform process. Not RLIMIT_AS: the Go runtime
// reserves far more address space than it uses.
func limitTransform(bytes uint64) {
	syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: bytes, Max: bytes})
}
