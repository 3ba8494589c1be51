//go:build !unix

package executor

import "syscall"

// workerAttr has nothing to add here: a worker ends when it reads the end
// of its stdin.
func workerAttr() *syscall.SysProcAttr { return nil }

// lowerPriority does nothing here.
func lowerPriority(int) {}
