//go:build unix

package upstream_test

import "syscall"

// processExists reports whether a process with pid exists.
func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
