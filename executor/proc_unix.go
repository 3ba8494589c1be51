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

// workerNice is the scheduling priority of workers: below the server's,
// so that its deadlines and kills are on time while workers burn CPU.
const workerNice = 10

// lowerPriority gives the worker pid workerNice; failing that, the worker
// runs at the server's priority.
func lowerPriority(pid int) {
	syscall.Setpriority(syscall.PRIO_PROCESS, pid, workerNice)
}
