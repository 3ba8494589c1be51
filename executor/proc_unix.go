//go:build unix && !linux

package executor

import "syscall"

// workerAttr puts a worker in a process group of its own, so that a
// terminal's ^C reaches only the server, which stops its workers itself.
// A worker outlives a server killed outright only until it reads the end
// of its stdin.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
