//go:build !linux

package executor

// limitTransform does nothing here: the stack limit and the deadline
// bound a transform process.
func limitTransform(uint64) {}
