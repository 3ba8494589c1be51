//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestConfineShim runs the upstream-exec shim of the built binary: what
// it protects is denied to the command it executes, the rest of the file
// system is not, and the paths a server is configured with stay its own.
func TestConfineShim(t *testing.T) {
	t.Parallel()
	if abi, why := landlockABI(); abi < 1 {
		t.Skip(why)
	}
	root := t.TempDir()
	secret := filepath.Join(root, "data")
	inside := filepath.Join(secret, "given")
	other := filepath.Join(root, "other")
	for _, d := range []string{secret, inside, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(secret, "key"), filepath.Join(inside, "file"), filepath.Join(other, "file"), filepath.Join(root, "beside")} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	shim := func(spec confineSpec, script string) (string, error) {
		b, _ := json.Marshal(spec)
		out, err := exec.Command(binary, confineCommandName, string(b), "--", "/bin/sh", "-c", script).CombinedOutput()
		return string(out), err
	}
	spec := confineSpec{Protect: []string{secret}}
	for _, tt := range []struct {
		name, script string
		ok           bool
	}{
		{"a protected file", "cat " + secret + "/key", false},
		{"a new file in a protected directory", "echo > " + secret + "/new", false},
		{"a file beside", "cat " + other + "/file", true},
		{"a new file beside", "echo > " + other + "/new", true},
		{"a file on the way to the protected path", "cat " + root + "/beside", true},
		{"listing the protected directory", "ls " + secret, true},
		{"a new file on the way to the protected path", "echo > " + root + "/new", false},
		{"no_new_privs", "grep -q 'NoNewPrivs:[[:space:]]*1' /proc/self/status", true},
	} {
		if out, err := shim(spec, tt.script); (err == nil) != tt.ok {
			t.Errorf("%s: %q: err %v, want ok %v: %s", tt.name, tt.script, err, tt.ok, out)
		}
	}
	spec.Allow = []string{inside}
	if out, err := shim(spec, "cat "+inside+"/file && echo > "+inside+"/new"); err != nil {
		t.Errorf("a configured path inside a protected one: %v: %s", err, out)
	}
	if out, err := shim(confineSpec{Protect: []string{"relative"}}, "true"); err == nil || !strings.Contains(out, "cannot protect") {
		t.Errorf("a relative protected path: %v: %s", err, out)
	}
}

// TestConfineShimPorts: a server confined while codecell listens cannot
// connect to codecell's listener, which would serve it as codecell's
// caller (attack27 T1: without tokens, as the user), and connects to any
// other port; nor can it bind the port of a loopback service codecell
// sends requests to (T8), and binds any other.
func TestConfineShimPorts(t *testing.T) {
	t.Parallel()
	abi, why := landlockABI()
	if abi < 1 {
		t.Skip(why)
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash, which connects with /dev/tcp")
	}
	listen := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().(*net.TCPAddr).Port
	}
	codecell, other := listen(), listen()
	spec, _ := json.Marshal(confineSpec{Protect: []string{t.TempDir()}, DenyConnect: []int{codecell}})
	connect := func(port int) (string, error) {
		out, err := exec.Command(binary, confineCommandName, string(spec), "--", "/bin/bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)).CombinedOutput()
		return string(out), err
	}
	out, err := connect(codecell)
	switch {
	case abi >= landlockNetABI && err == nil:
		t.Errorf("the confined server connected to codecell's listener (port %d)", codecell)
	case abi >= landlockNetABI && !strings.Contains(out, "Permission denied"):
		t.Errorf("connecting to codecell's listener: %v: %s", err, out)
	case abi < landlockNetABI && err != nil:
		t.Errorf("Landlock ABI %d cannot deny a port, yet: %v: %s", abi, err, out)
	}
	if out, err := connect(other); err != nil {
		t.Errorf("connecting to another port: %v: %s", err, out)
	}
	// Landlock's TCP rules do not cover Multipath TCP sockets, which
	// connect to a TCP listener all the same: the shim fails creating them.
	if python, err := exec.LookPath("python3"); err == nil && abi >= landlockNetABI {
		out, err := exec.Command(binary, confineCommandName, string(spec), "--", python, "-c",
			fmt.Sprintf("import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, %d).connect(('127.0.0.1', %d))", unix.IPPROTO_MPTCP, codecell)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Protocol not supported") {
			t.Errorf("connecting to codecell's listener with a Multipath TCP socket: %v: %s", err, out)
		}
	}
	// Binding: the port of a loopback service of codecell's, while it is
	// down, is not the server's (attack27 T8); another is.
	if python, err := exec.LookPath("python3"); err == nil {
		free := func() int {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			return ln.Addr().(*net.TCPAddr).Port
		}
		down, other := free(), free()
		spec, _ := json.Marshal(confineSpec{Protect: []string{t.TempDir()}, DenyBind: []int{down}})
		bind := func(port int) (string, error) {
			out, err := exec.Command(binary, confineCommandName, string(spec), "--", python, "-c",
				fmt.Sprintf("import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', %d)); s.listen()", port)).CombinedOutput()
			return string(out), err
		}
		out, err := bind(down)
		switch {
		case abi >= landlockNetABI && err == nil:
			t.Errorf("the confined server bound the port of codecell's loopback service (%d)", down)
		case abi >= landlockNetABI && !strings.Contains(out, "PermissionError"):
			t.Errorf("binding the port of codecell's loopback service: %v: %s", err, out)
		}
		if out, err := bind(other); err != nil {
			t.Errorf("binding another port: %v: %s", err, out)
		}
	}
	bad, _ := json.Marshal(confineSpec{Protect: []string{t.TempDir()}, DenyConnect: []int{70000}})
	if out, err := exec.Command(binary, confineCommandName, string(bad), "--", "/bin/true").CombinedOutput(); err == nil || !strings.Contains(string(out), "cannot deny port") {
		t.Errorf("port 70000: %v: %s", err, out)
	}
}

// TestConfineShimMissingPath: a protected path that does not exist yet,
// as protectedPaths gives it (the entry that would lead to it), cannot
// be created by the confined server, at any depth (attack27 T2: a server
// made ~/.config/codecell/config.toml, which codecell ran at its next
// start).
func TestConfineShimMissingPath(t *testing.T) {
	t.Parallel()
	if abi, why := landlockABI(); abi < 1 {
		t.Skip(why)
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	config := filepath.Join(root, ".config")
	os.Mkdir(config, 0o700)
	os.Mkdir(filepath.Join(config, "other"), 0o700)
	missing := filepath.Join(config, "codecell", "config.toml")
	p, err := protectable(missing)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(confineSpec{Protect: p})
	for _, tt := range []struct {
		name, script string
		ok           bool
	}{
		{"the missing directory", "mkdir -p " + filepath.Dir(missing), false},
		{"another entry beside it", "mkdir " + filepath.Join(config, "new"), false},
		{"an existing directory beside it", "echo > " + filepath.Join(config, "other", "file"), true},
	} {
		out, err := exec.Command(binary, confineCommandName, string(spec), "--", "/bin/sh", "-c", tt.script).CombinedOutput()
		if (err == nil) != tt.ok {
			t.Errorf("%s: %q: err %v, want ok %v: %s", tt.name, tt.script, err, tt.ok, out)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("the confined server created %s", missing)
	}
}

// TestConfineShimLink: a protected path reached through a symbolic link
// keeps the link, as protectable gives it: the server can neither move
// the link aside nor put a directory of its own in its place (attack27
// T4), and still reads and writes beside it.
func TestConfineShimLink(t *testing.T) {
	t.Parallel()
	if abi, why := landlockABI(); abi < 1 {
		t.Skip(why)
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	config, dotfiles := filepath.Join(root, ".config"), filepath.Join(root, "dotfiles", "codecell")
	os.MkdirAll(config, 0o700)
	os.MkdirAll(dotfiles, 0o700)
	os.WriteFile(filepath.Join(dotfiles, "config.toml"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(root, "dotfiles", "notes"), []byte("x"), 0o600)
	link := filepath.Join(config, "codecell")
	os.Symlink(dotfiles, link)
	p, err := protectable(filepath.Join(link, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(confineSpec{Protect: p})
	for _, tt := range []struct {
		name, script string
		ok           bool
	}{
		{"the configuration", "cat " + filepath.Join(link, "config.toml"), false},
		{"moving the link aside", "mv " + link + " " + link + ".old", false},
		{"removing the link", "rm " + link, false},
		{"a new entry beside the link", "mkdir " + filepath.Join(config, "new"), false},
		{"a file beside the target", "echo >> " + filepath.Join(root, "dotfiles", "notes"), true},
	} {
		out, err := exec.Command(binary, confineCommandName, string(spec), "--", "/bin/sh", "-c", tt.script).CombinedOutput()
		if (err == nil) != tt.ok {
			t.Errorf("%s: %q: err %v, want ok %v: %s", tt.name, tt.script, err, tt.ok, out)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v", err)
	}
}

// startWithoutLandlock starts cmd as on a kernel without Landlock: from a
// thread whose seccomp filter answers landlock_create_ruleset with ENOSYS,
// which the child inherits (with no_new_privs, which the filter needs).
func startWithoutLandlock(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		filter := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the syscall number
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_LANDLOCK_CREATE_RULESET, Jt: 0, Jf: 1},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		}
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- err
			return
		}
		if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
			done <- err
			return
		}
		done <- cmd.Start()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWithoutLandlock: on a kernel without Landlock, codecell says in its
// log that its stdio upstream servers run unconfined and its sandbox
// workers without Landlock, and serves both.
func TestWithoutLandlock(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{serverScript(dir, "server-everything"), "stdio"}}}})
	mcpConfig := filepath.Join(work, "mcp.json")
	os.WriteFile(mcpConfig, cfg, 0o600)
	for _, landlock := range []bool{false, true} {
		cmd := exec.Command(binary, "exec", "--mcp-config", mcpConfig, "-")
		cmd.Env = append(os.Environ(), dataDir(t)...)
		cmd.Stdin = strings.NewReader(`await everything.echo({message: "served"})`)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if landlock {
			if abi, _ := landlockABI(); abi < 1 {
				continue
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		} else {
			startWithoutLandlock(t, cmd)
		}
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "Echo: served") {
			t.Errorf("landlock %v: %v\n%s\n%s", landlock, err, out.String(), errb.String())
		}
		unconfined := strings.Contains(errb.String(), "stdio upstream servers run unconfined: this kernel has no Landlock")
		if unconfined == landlock {
			t.Errorf("landlock %v: the log says unconfined %v:\n%s", landlock, unconfined, errb.String())
		}
		workersUnconfined := strings.Contains(errb.String(), "sandbox workers run without Landlock: this kernel has no Landlock")
		if workersUnconfined == landlock {
			t.Errorf("landlock %v: the log says sandbox workers without Landlock %v:\n%s", landlock, workersUnconfined, errb.String())
		}
	}
}

// BenchmarkConfinedStart measures what the shim adds to a server's start:
// /bin/true started directly, through codecell upstream-exec with a data
// directory and a configuration file protected (the ruleset is built at
// every start), and so with a listener's port denied (a rule for each of
// the other 65,535 ports, from Landlock ABI 4 on).
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkConfinedStart -benchtime 50x ./cmd/codecell/
func BenchmarkConfinedStart(b *testing.B) {
	if abi, why := landlockABI(); abi < 1 {
		b.Skip(why)
	}
	home, _ := filepath.EvalSymlinks(b.TempDir())
	data := filepath.Join(home, ".local", "share", "codecell")
	os.MkdirAll(data, 0o700)
	os.MkdirAll(filepath.Join(home, ".config", "codecell"), 0o700)
	for i := range 40 { // a home directory's usual entries
		os.Mkdir(filepath.Join(home, fmt.Sprintf(".app%02d", i)), 0o755)
	}
	spec, _ := json.Marshal(confineSpec{Protect: []string{data, filepath.Join(home, ".config", "codecell")}})
	listening, _ := json.Marshal(confineSpec{Protect: []string{data, filepath.Join(home, ".config", "codecell")}, DenyConnect: []int{7410}})
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"direct", []string{"/bin/true"}},
		{"confined", []string{binary, confineCommandName, string(spec), "--", "/bin/true"}},
		{"confined_port_denied", []string{binary, confineCommandName, string(listening), "--", "/bin/true"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(bc.argv[0], bc.argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/start")
		})
	}
}

// TestWorkerConfinement puts one thread of the test in the sandbox
// workers' Landlock domain (restrictWorker) and tries, from it, what a
// program that escaped the VM would: it reads the files the process is
// mapped from and the time zone, and nothing else: not a key file like the data directory's
// filter.key, not a directory listing, no new file; from ABI 4 on, it
// cannot connect to a TCP port either. The thread is never unlocked, so
// it ends with its goroutine and the domain with it.
func TestWorkerConfinement(t *testing.T) {
	abi, why := landlockABI()
	if abi < 1 {
		t.Skip(why)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "filter.key")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(localtime)
	hasLocaltime := err == nil
	type outcome struct {
		name string
		err  error
	}
	results := make(chan []outcome, 1)
	failed := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			failed <- err
			return
		}
		if err := restrictWorker(abi); err != nil {
			failed <- err
			return
		}
		// Raw system calls: they run on this thread, whatever Go's
		// poller would do with a descriptor.
		try := func(name string, fn func() error) outcome { return outcome{name, fn()} }
		open := func(path string, flags int) func() error {
			return func() error {
				fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o600)
				if err == nil {
					unix.Close(fd)
				}
				return err
			}
		}
		out := []outcome{
			try("read the binary", open(exe, unix.O_RDONLY)),
			try("read filter.key", open(key, unix.O_RDONLY)),
			try("list the data directory", open(dir, unix.O_RDONLY|unix.O_DIRECTORY)),
			try("create a file", open(filepath.Join(dir, "new"), unix.O_WRONLY|unix.O_CREAT)),
			try("read /etc/passwd", open("/etc/passwd", unix.O_RDONLY)),
			try("read the time zone", open(localtime, unix.O_RDONLY)),
			try("read /proc/self/status", open("/proc/self/status", unix.O_RDONLY)),
			try("connect to a TCP port", func() error {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				port := ln.Addr().(*net.TCPAddr).Port
				return unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
			}),
		}
		results <- out
	}()
	var out []outcome
	select {
	case err := <-failed:
		t.Fatalf("restrictWorker: %v", err)
	case out = <-results:
	}
	for _, o := range out {
		want := o.name == "read the binary" || (o.name == "connect to a TCP port" && abi < 4) ||
			(o.name == "read the time zone" && hasLocaltime)
		if (o.err == nil) != want {
			t.Errorf("%s from the worker's domain: err %v, want allowed %v", o.name, o.err, want)
		}
	}
}
