//go:build unix

package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the child as the leader of a process group of
// its own, so that signals reach everything it starts.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to the child's
// process group. A group that is gone already is not an error.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}

// exitDescription says how a child ended from what Wait returned.
func exitDescription(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err == nil {
			return "exited with status 0"
		}
		return "ended: " + err.Error()
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}
