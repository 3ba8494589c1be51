package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebugProfiles: the debug variables write a CPU profile and an
// execution trace where they say, and a file that cannot be made is an
// error naming the variable.
func TestDebugProfiles(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{envCPUProfile: filepath.Join(dir, "cpu.prof"), envTrace: filepath.Join(dir, "trace.out")}
	stop, err := startProfiles(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, path := range env {
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, %v", path, st, err)
		}
	}
	off, err := startProfiles(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	off()
	bad := filepath.Join(dir, "missing", "cpu.prof")
	if _, err := startProfiles(func(k string) string {
		if k == envCPUProfile {
			return bad
		}
		return ""
	}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), envCPUProfile) {
		t.Errorf("a profile in a missing directory: %v", err)
	}
}
