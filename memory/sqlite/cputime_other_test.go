//go:build !linux

package sqlite

import "time"

// threadCPU is unavailable outside Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
