package security

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// evilUpstream is a codecell whose configuration bridges the malicious
// upstream (upstream_evil_test.go) as the category evil.
type evilUpstream struct {
	*server
	data string // codecell's data directory
	loot string // where the upstream writes what it read
}

// startEvil starts codecell with the malicious upstream; toml adds keys
// to its [upstream.evil] table, env to its environment, and extra goes to
// start.
func startEvil(t *testing.T, toml string, env map[string]string, extra ...string) *evilUpstream {
	t.Helper()
	return startEvilWith(t, binary, toml, env, extra...)
}

// startEvilWith is startEvil with another codecell binary.
func startEvilWith(t *testing.T, binary, toml string, env map[string]string, extra ...string) *evilUpstream {
	t.Helper()
	return startEvilFiles(t, binary, nil, toml, env, extra...)
}

// startEvilFiles is startEvilWith with files codecell inherits.
func startEvilFiles(t *testing.T, binary string, files []*os.File, toml string, env map[string]string, extra ...string) *evilUpstream {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &evilUpstream{data: t.TempDir(), loot: t.TempDir()}
	envTOML := fmt.Sprintf("EVIL_UPSTREAM = %q, EVIL_LOOT = %q", "1", e.loot)
	for k, v := range env {
		envTOML += fmt.Sprintf(", %s = %q", k, v)
	}
	config := filepath.Join(t.TempDir(), "codecell.toml")
	body := fmt.Sprintf("[upstream.evil]\ncommand = %q\nenv = { %s }\n%s\n", self, envTOML, toml)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config", config, "CODECELL_SERVER_DATA_DIR=" + e.data}, extra...)
	e.server = startFiles(t, binary, files, args...)
	return e
}

// ready waits until the evil upstream answers a call.
func (e *evilUpstream) ready(t *testing.T, ss *session) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec := ss.run(`await evil.echo({text: "ready"})`, "timeout_ms", 20000)
		if rec.Status == "ok" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the evil upstream never answered: %.600s\n%s", rec.raw, e.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// looted returns everything the upstream managed to read.
func (e *evilUpstream) looted(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	entries, _ := os.ReadDir(e.loot)
	for _, en := range entries {
		b, _ := os.ReadFile(filepath.Join(e.loot, en.Name()))
		all.Write(b)
	}
	return all.String()
}

// TestUpstreamCannotReadCodecellsSecrets (issue 19, high): a stdio
// upstream runs as the same user as codecell. It read
// /proc/<codecell>/environ — every principal's bearer token — and
// codecell's filter key and database. codecell is now non-dumpable, its
// initial environment block no longer holds its secrets, and stdio
// children run under Landlock, which denies them codecell's data and
// configuration and access to codecell's memory and open files through
// /proc, which root's capabilities would otherwise grant.
func TestUpstreamCannotReadCodecellsSecrets(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "", nil, "CODECELL_EMBEDDER_API_KEY=sk-embedder-0123456789abcdef0123")
	alice := e.open(t, aliceToken)
	e.ready(t, alice)

	rec := alice.run(`await evil.environ({})`, "timeout_ms", 20000)
	if rec.Status != "ok" {
		t.Fatalf("environ: %.600s", rec.raw)
	}
	var proc map[string]string
	json.Unmarshal(rec.Result, &proc)
	// Its environment, where root may still open it, holds no secret
	// any more (the loot is checked below); its memory and open files
	// stay closed.
	for _, f := range []string{"mem", "fd/0"} {
		if proc[f] == "read" {
			t.Errorf("the upstream opened /proc/<codecell>/%s", f)
		}
	}
	key := filepath.Join(e.data, "filter.key")
	keyBytes, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	dbs, _ := filepath.Glob(filepath.Join(e.data, "*.db"))
	for _, p := range append([]string{key}, dbs...) {
		rec := alice.run(fmt.Sprintf(`await evil.read({path: %q})`, p), "timeout_ms", 20000)
		var got struct {
			Bytes int    `json:"bytes"`
			Err   string `json:"err"`
		}
		json.Unmarshal(rec.Result, &got)
		if rec.Status != "ok" || got.Bytes > 0 || got.Err == "" {
			t.Errorf("the upstream read %s: %.300s", p, rec.raw)
		}
	}
	loot := e.looted(t)
	for what, secret := range map[string]string{
		"alice's token": aliceToken, "bob's token": bobToken,
		"the embedder key": "sk-embedder-0123456789abcdef0123", "the filter key": string(keyBytes),
	} {
		if strings.Contains(loot, secret) {
			t.Errorf("the upstream got %s", what)
		}
	}
	// What it may read, it still reads: a file outside codecell's data.
	mine := filepath.Join(e.loot, "its-own-file")
	os.WriteFile(mine, []byte("readable"), 0o644)
	if rec := alice.run(fmt.Sprintf(`(await evil.read({path: %q})).bytes`, mine), "timeout_ms", 20000); string(rec.Result) != "8" {
		t.Errorf("the upstream cannot read an ordinary file: %.300s", rec.raw)
	}
	alice.normal()
}

// TestSameUserCannotReadCodecellsEnvironment (issue 19, high): any
// process of codecell's user — not only its children — could read
// /proc/<codecell>/environ. codecell is non-dumpable now: the kernel
// refuses other processes of its user. As root (whose capabilities
// read anyone's), codecell and the reader both run as nobody, so that the
// test sees what a user's machine does.
func TestSameUserCannotReadCodecellsEnvironment(t *testing.T) {
	t.Parallel()
	var cred *syscall.Credential
	bin := binary
	home := t.TempDir()
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		dir, err := os.MkdirTemp("", "codecell-nobody")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		bin = filepath.Join(dir, "codecell")
		data, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		home = filepath.Join(dir, "home")
		os.Mkdir(home, 0o700)
		for _, p := range []string{dir, home} {
			os.Chmod(p, 0o755)
			os.Chown(p, 65534, 65534)
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "CODECELL_AUTH_TOKENS=alice=" + aliceToken}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "serving MCP over stdio") {
				once = true
				close(serving)
			}
		}
	}()
	select {
	case <-serving:
	case <-time.After(60 * time.Second):
		t.Fatalf("codecell did not start:\n%s", stderr.String())
	}
	environ := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
	reader := exec.Command("cat", environ)
	reader.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := reader.CombinedOutput()
	if err == nil || strings.Contains(string(out), aliceToken) {
		t.Errorf("a process of codecell's user read %s (%v): %d bytes, the token in them: %v", environ, err, len(out), strings.Contains(string(out), aliceToken))
	}
}
