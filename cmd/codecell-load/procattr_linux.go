package main

import "syscall"

// serverAttr makes a server the driver started end when the driver does,
// however it ends: a driver killed by a timeout left its servers running.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
