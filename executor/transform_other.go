//go:build !linux

package executor

// limitTransform does nothing here: the stack limit and the deadline
// bound a transform process.
func limitTransform(uint64) {}

// limitWorker does nothing here: a worker's VMs are bounded by their
// heap limits, and the executor's holds bound what waits in it.
func limitWorker(int, uint64) error { return nil }
