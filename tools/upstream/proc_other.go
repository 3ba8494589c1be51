//go:build !unix

package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the child where there is no SIGTERM to send first.
func signalGroup(p *os.Process, kill bool) {
	if kill {
		_ = p.Kill()
	}
}

// exitDescription says how a child ended from what Wait returned.
func exitDescription(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err == nil {
		return "exited with status 0"
	}
	return "ended: " + err.Error()
}
