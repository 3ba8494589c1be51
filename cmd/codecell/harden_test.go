package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools/openapi"
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
	cfg.Server.Catalog = filepath.Join(dir, "catalogues", "tools.json")
	cfg.OpenAPI = map[string]openapi.Config{
		"local":  {Spec: filepath.Join(dir, "apis", "petstore.yaml")},
		"remote": {Spec: "https://example.com/openapi.json"},
	}
	cfg.file = cfgFile
	got := protectedPaths(cfg)
	// The key is inside the data directory; what does not exist yet is
	// denied as the entry that would lead to it, so that a server cannot
	// create it for codecell to read at its next start (attack27 T2).
	for _, p := range []string{data, cfgFile, cfg.Server.MCPConfig, filepath.Join(dir, "catalogues"), filepath.Join(dir, "apis")} {
		if !slices.Contains(got, p) {
			t.Errorf("protectedPaths = %q, lacks %s", got, p)
		}
	}
	for _, p := range got {
		if p == filepath.Join(data, "filter.key") || strings.Contains(p, "example.com") {
			t.Errorf("protectedPaths = %q, has %s", got, p)
		}
	}
}

// TestProtectable: a path that exists is itself, its links resolved; one
// that does not is the first entry missing below its nearest existing
// ancestor, followed through a dangling link to where it would be made.
func TestProtectable(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o700)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(dir, "elsewhere", "codecell"), filepath.Join(dir, "dangling"))
	os.Symlink("relative-target", filepath.Join(dir, "real", "rel"))
	for _, tt := range []struct{ name, path, want string }{
		{"an existing directory", filepath.Join(dir, "real", "sub"), filepath.Join(dir, "real", "sub")},
		{"through a link", filepath.Join(dir, "link", "sub"), filepath.Join(dir, "real", "sub")},
		{"a missing file", filepath.Join(dir, "real", "config.toml"), filepath.Join(dir, "real", "config.toml")},
		{"missing directories", filepath.Join(dir, "real", "a", "b", "config.toml"), filepath.Join(dir, "real", "a")},
		{"missing below a link", filepath.Join(dir, "link", "a", "config.toml"), filepath.Join(dir, "real", "a")},
		{"through a dangling link", filepath.Join(dir, "dangling", "config.toml"), filepath.Join(dir, "elsewhere")},
		{"through a dangling relative link", filepath.Join(dir, "real", "rel", "x"), filepath.Join(dir, "real", "relative-target")},
	} {
		got, err := protectable(tt.path)
		if err != nil || got != tt.want {
			t.Errorf("%s: protectable(%s) = %q, %v; want %q", tt.name, tt.path, got, err, tt.want)
		}
	}
	os.Symlink(filepath.Join(dir, "loop"), filepath.Join(dir, "loop"))
	if got, err := protectable(filepath.Join(dir, "loop", "x")); err == nil {
		t.Errorf("a link to itself: protectable = %q, want an error", got)
	}
}
