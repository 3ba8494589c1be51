package security

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSandboxWorkersUnconfined (issue 19, third round M1): the sandbox
// workers, where programs' VMs run (modernc.org/libquickjs, QuickJS's C
// translated to Go, with its pointer arithmetic on raw memory), run
// confined: no_new_privs and (where the kernel has Landlock) a domain that
// grants them no file of the user, so that a program that escaped the VM
// reads neither codecell's data directory (filter.key, the store) nor the
// user's files. The domain is invisible from outside; no_new_privs, which
// the worker sets with it, shows in /proc/<pid>/status.
func TestSandboxWorkersUnconfined(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	a := s.open(t, aliceToken)
	a.normal()
	var workers []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(s.cmd.Process.Pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmdline), "sandbox-worker") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		var nnp, seccomp string
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "NoNewPrivs:"); ok {
				nnp = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				seccomp = strings.TrimSpace(v)
			}
		}
		workers = append(workers, strconv.Itoa(pid))
		if nnp != "1" && seccomp == "0" {
			t.Errorf("sandbox worker %d runs unconfined (NoNewPrivs %s, Seccomp %s): a VM escape reads the data directory and the user's files", pid, nnp, seccomp)
		}
	}
	if len(workers) == 0 {
		t.Fatal("no sandbox worker found among the server's children")
	}
}
