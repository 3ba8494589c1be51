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
// ancestor, followed through a dangling link to where it would be made;
// and every link on the way is protected as it is (attack27 T4).
func TestProtectable(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o700)
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "real"), link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "elsewhere", "codecell"), dangling)
	rel := filepath.Join(dir, "real", "rel")
	os.Symlink("relative-target", rel)
	up := filepath.Join(dir, "real", "sub", "up")
	os.Symlink("../../link/sub", up)
	for _, tt := range []struct {
		name, path string
		want       []string
	}{
		{"an existing directory", filepath.Join(dir, "real", "sub"), []string{filepath.Join(dir, "real", "sub")}},
		{"through a link", filepath.Join(link, "sub"), []string{link, filepath.Join(dir, "real", "sub")}},
		{"a missing file", filepath.Join(dir, "real", "config.toml"), []string{filepath.Join(dir, "real", "config.toml")}},
		{"missing directories", filepath.Join(dir, "real", "a", "b", "config.toml"), []string{filepath.Join(dir, "real", "a")}},
		{"missing below a link", filepath.Join(link, "a", "config.toml"), []string{link, filepath.Join(dir, "real", "a")}},
		{"through a dangling link", filepath.Join(dangling, "config.toml"), []string{dangling, filepath.Join(dir, "elsewhere")}},
		{"through a dangling relative link", filepath.Join(rel, "x"), []string{rel, filepath.Join(dir, "real", "relative-target")}},
		{"links through links", up, []string{up, link, filepath.Join(dir, "real", "sub")}},
	} {
		got, err := protectable(tt.path)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: protectable(%s) = %q, %v; want %q", tt.name, tt.path, got, err, tt.want)
		}
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)
	if got, err := protectable(filepath.Join(loop, "x")); err == nil {
		t.Errorf("a link to itself: protectable = %q, want an error", got)
	}
}

// TestLoopbackPorts: the ports of the loopback URLs codecell sends
// requests to, which a confined server may not bind (attack27 T8); a
// remote host's port is not one.
func TestLoopbackPorts(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.LLM.ProviderURL = "http://127.0.0.1:11434/v1"
	cfg.Memory.EmbedderURL = "http://localhost:8081/v1"
	cfg.Auth.OAuth.IntrospectionURL = "https://[::1]/introspect"
	cfg.OpenAPI = map[string]openapi.Config{
		"local":  {Spec: "http://127.0.0.2:9000/openapi.json", BaseURL: "http://api.localhost:9001"},
		"remote": {Spec: "https://example.com:8443/openapi.json", BaseURL: "https://api.example.com"},
		"file":   {Spec: "apis/petstore.yaml"},
	}
	servers := map[string]upstream.Server{
		"http":  {URL: "http://0.0.0.0:7000/mcp"},
		"far":   {URL: "http://10.0.0.1:7001/mcp"},
		"stdio": {Command: "server", Args: []string{"http://127.0.0.1:7002"}},
	}
	got := loopbackPorts(cfg, servers)
	want := []int{443, 7000, 8081, 9000, 9001, 11434}
	if !slices.Equal(got, want) {
		t.Errorf("loopbackPorts = %v, want %v", got, want)
	}
}

// TestBoundPortsHoldTheListener (issue 19, attack29 T6): a confined
// server may not listen on codecell's own port either — its setsid
// orphan outlived codecell, took the port and got the bearer tokens of
// the clients that reconnected.
func TestBoundPortsHoldTheListener(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.LLM.ProviderURL = "http://127.0.0.1:11434/v1"
	cfg.listening = []int{7410, 11434}
	if got, want := boundPorts(cfg, nil), []int{7410, 11434}; !slices.Equal(got, want) {
		t.Errorf("boundPorts = %v, want %v", got, want)
	}
}

// TestProtectedPathsDefaultDataDirs: the default data directories
// ($XDG_DATA_HOME/codecell and ~/.local/share/codecell), where a start
// from another environment keeps its store and filter key, are denied
// whatever this start's data directory (attack29 T1: a confined server
// read another start's filter key and store, and could plant a key).
func TestProtectedPathsDefaultDataDirs(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, ".local", "share", "codecell"), 0o700)
	xdg := filepath.Join(dir, "xdg")
	os.Mkdir(xdg, 0o700)
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", xdg)
	cfg := defaultConfig()
	cfg.Server.DataDir = filepath.Join(dir, "own")
	got := protectedPaths(cfg)
	for _, p := range []string{filepath.Join(home, ".local", "share", "codecell"), filepath.Join(xdg, "codecell"), filepath.Join(dir, "own")} {
		if !slices.Contains(got, p) {
			t.Errorf("protectedPaths = %q, lacks %s", got, p)
		}
	}
	// Neither made yet: the entries that would lead to them.
	os.RemoveAll(filepath.Join(home, ".local"))
	got = protectedPaths(cfg)
	if !slices.Contains(got, filepath.Join(home, ".local")) {
		t.Errorf("protectedPaths = %q, lacks %s", got, filepath.Join(home, ".local"))
	}
}

// TestLoopbackPortsDSN: memory.dsn's loopback ports, of every host and
// fallback, in URL and keyword form, are ones a confined server may not
// bind (attack29 T3: a server bound the database's port while it
// restarted and the pool sent it the password); a remote host's and a
// Unix socket's are not; the sqlite backend's has none.
func TestLoopbackPortsDSN(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, dsn string
		want      []int
	}{
		{"url", "postgres://u:pw@127.0.0.1:5433/db", []int{5433}},
		{"url, default port", "postgres://u:pw@localhost/db", []int{5432}},
		{"multi-host url", "postgres://u:pw@db.example.com:5432,[::1]:6000,127.0.0.1/db", []int{5432, 6000}},
		{"keywords", "host=127.0.0.1 port=5499 user=u password=pw dbname=db", []int{5499}},
		{"keywords, hosts and ports", "host=localhost,10.0.0.9,/var/run/postgresql port=7001,7002,7003 user=u dbname=db", []int{7001}},
		{"remote", "postgres://u:pw@db.example.com:5432/db", nil},
	} {
		cfg := defaultConfig()
		cfg.Memory.Backend = backendPostgres
		cfg.Memory.Path = ""
		cfg.Memory.DSN = tt.dsn
		if got := loopbackPorts(cfg, nil); !slices.Equal(got, tt.want) {
			t.Errorf("%s: loopbackPorts = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLoopbackPortsProxy: a loopback HTTP proxy codecell's HTTP clients
// send requests through (HTTP_PROXY, HTTPS_PROXY, with or without a
// scheme) is a port a confined server may not bind (issue 19, attack29
// T3's class: a plain-http request goes to the proxy whole, with its
// Authorization header).
func TestLoopbackPortsProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "127.0.0.1:3128")
	t.Setenv("https_proxy", "socks5://localhost")
	t.Setenv("HTTPS_PROXY", "http://proxy.example.com:8080")
	t.Setenv("http_proxy", "")
	if got, want := loopbackPorts(defaultConfig(), nil), []int{1080, 3128}; !slices.Equal(got, want) {
		t.Errorf("loopbackPorts = %v, want %v", got, want)
	}
}
