package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/codecell/codecell/tools/upstream"
)

func TestConfiguredPaths(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "script.js"), nil, 0o644)
	l := upstream.Launch{
		Args:      []string{filepath.Join(dir, "script.js"), "--root=" + filepath.Join(dir, "docs"), "-y", "@scope/package", "./docs", "/no/such/dir/x"},
		Dir:       dir,
		Env:       []string{"HOME=/", "MEMORY_FILE_PATH=" + filepath.Join(dir, "new.jsonl")},
		ConfigEnv: []string{"MEMORY_FILE_PATH=" + filepath.Join(dir, "new.jsonl"), "DEBUG=1"},
	}
	got := configuredPaths(l)
	want := []string{dir, filepath.Join(dir, "docs"), filepath.Join(dir, "script.js")}
	if !slices.Equal(got, want) {
		t.Errorf("configuredPaths = %q, want %q (HOME, which every child inherits, is not configured)", got, want)
	}
}

func TestProtectedPaths(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o700)
	os.WriteFile(filepath.Join(data, "filter.key"), nil, 0o600)
	cfgFile := filepath.Join(dir, "codecell.toml")
	os.WriteFile(cfgFile, nil, 0o600)
	cfg := defaultConfig()
	cfg.Server.DataDir = data
	cfg.Server.MCPConfig = filepath.Join(dir, "absent.json")
	cfg.file = cfgFile
	got := protectedPaths(cfg)
	// The key is inside the data directory; what does not exist has
	// nothing to protect yet.
	for _, p := range []string{data, cfgFile} {
		if !slices.Contains(got, p) {
			t.Errorf("protectedPaths = %q, lacks %s", got, p)
		}
	}
	for _, p := range got {
		if p == filepath.Join(data, "filter.key") || p == cfg.Server.MCPConfig {
			t.Errorf("protectedPaths = %q, has %s", got, p)
		}
	}
}
