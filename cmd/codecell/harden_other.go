//go:build !linux

package main

import (
	"errors"
	"os"
)

// hardening is what hardenProcess did, for the log.
type hardening struct {
	nonDumpable bool
	blanked     int
	err         error
}

// hardenProcess does nothing here: non-dumpable processes and the
// environment block are Linux's.
func hardenProcess() hardening {
	return hardening{err: errors.New("process hardening is implemented for Linux only")}
}

// selfExe is the path of this binary, as the system names it.
func selfExe() (string, error) { return os.Executable() }

// hardenWorker does nothing here.
func hardenWorker() {}

// landlockABI reports that there is no Landlock here.
func landlockABI() (int, string) {
	return 0, "confining them needs Linux with Landlock"
}

// confineAndExec cannot confine here.
func confineAndExec(confineSpec, string, []string) error {
	return errors.New("confining a server needs Linux with Landlock")
}

// workerConfinedArg is the argument of a confined sandbox worker.
const workerConfinedArg = "confined"

// workerConfines is false: sandbox workers run as they start here.
const workerConfines = false

// confineWorkerAndExec cannot confine here.
func confineWorkerAndExec(string) error {
	return errors.New("confining a sandbox worker needs Linux")
}
