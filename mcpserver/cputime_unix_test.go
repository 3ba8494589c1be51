//go:build unix

package mcpserver_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// all goroutines — server, client, audit writer, garbage collector —
// included. On a shared machine it measures cost better than the wall
// clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
