//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
