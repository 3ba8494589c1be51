package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamReadsDefaultDataDir (issue 19, attack29 T1): a codecell
// started without XDG_DATA_HOME and server.data_dir (a desktop host's)
// keeps its store and filter key in ~/.local/share/codecell. A codecell
// started with a data directory of its own denied its servers that one
// only: a confined server read the other start's filter key and store,
// and could plant a key there. Both default data directories are denied
// whatever this start's.
func TestUpstreamReadsDefaultDataDir(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	first := start(t, "HOME="+home, "XDG_DATA_HOME=", "CODECELL_SERVER_DATA_DIR=")
	if rec := first.open(t, aliceToken).run(`await memory.remember({content: "alice's plan: the launch code is 271828"}); 1`); rec.Status != "ok" {
		t.Fatalf("remember: %s", rec.raw)
	}
	first.cmd.Process.Kill()
	first.cmd.Wait()
	def := filepath.Join(home, ".local", "share", "codecell")
	if _, err := os.Stat(filepath.Join(def, "filter.key")); err != nil {
		t.Fatalf("the first start made no filter key in %s: %v\n%s", def, err, first.stderr.String())
	}

	// The second start has a data directory of its own.
	e := startEvil(t, "", nil, "HOME="+home)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	if !strings.Contains(e.stderr.String(), "stdio upstream servers run confined") {
		t.Skipf("stdio upstreams do not run confined here:\n%s", e.stderr.String())
	}
	if e.data == def {
		t.Fatalf("the second start uses the default data directory %s", def)
	}
	cmd := fmt.Sprintf("cat %[1]s/filter.key && echo READ; grep -a -c 271828 %[1]s/*; echo x > %[1]s/planted && echo PLANTED", def)
	rec := alice.run(`(await evil.shell({cmd: `+jsString(cmd)+`}))`, "timeout_ms", 20000)
	out := string(rec.Result)
	if strings.Contains(out, "READ") || strings.Contains(out, "PLANTED") || !strings.Contains(out, "Permission denied") {
		t.Errorf("a confined server read or wrote the default data directory of another start: %.600s", rec.raw)
	}
	// And $XDG_DATA_HOME/codecell, another start's default, cannot be made.
	xdg := filepath.Join(home, "xdg-data")
	os.Mkdir(xdg, 0o700)
	e2 := startEvil(t, "", nil, "HOME="+home, "XDG_DATA_HOME="+xdg)
	alice2 := e2.open(t, aliceToken)
	e2.ready(t, alice2)
	cmd = fmt.Sprintf("mkdir -p %[1]s/codecell && echo x > %[1]s/codecell/filter.key && echo PLANTED", xdg)
	rec = alice2.run(`(await evil.shell({cmd: `+jsString(cmd)+`}))`, "timeout_ms", 20000)
	if strings.Contains(string(rec.Result), "PLANTED") || !strings.Contains(string(rec.Result), "Permission denied") {
		t.Errorf("a confined server planted a filter key in $XDG_DATA_HOME/codecell: %.600s", rec.raw)
	}
}
