package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A confined stdio upstream is denied codecell's paths that exist when it
// starts. On a first start the filter key (and, with the store elsewhere,
// the data directory that holds it) was made after the upstreams started,
// in a directory their domain granted whole: the upstream read the key
// (issue 19, fourth round, A7). They are made first now.

// TestUpstreamReadsFirstStartKey: filter.key_file in a directory of its
// own, which nothing else of codecell's creates.
func TestUpstreamReadsFirstStartKey(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "secrets")
	os.Mkdir(keys, 0o700)
	key := filepath.Join(keys, "codecell-filter.key")
	self, _ := os.Executable()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[filter]\nkey_file = %q\n\n[upstream.reader]\ncommand = %q\nenv = { EVIL_UPSTREAM = \"1\" }\n", key, self)), 0o600)
	firstStartReads(t, key, cfg, "--config", cfg)
}

// TestUpstreamReadsFirstStartDataDir: the default key location, with the
// store elsewhere (memory.path; PostgreSQL's memory.dsn takes the same
// path), so that nothing else created the data directory first.
func TestUpstreamReadsFirstStartDataDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data") // does not exist yet
	self, _ := os.Executable()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[memory]\npath = %q\n\n[upstream.reader]\ncommand = %q\nenv = { EVIL_UPSTREAM = \"1\" }\n", filepath.Join(dir, "store.db"), self)), 0o600)
	firstStartReads(t, filepath.Join(data, "filter.key"), filepath.Join(dir, "store.db"), "--config", cfg, "CODECELL_SERVER_DATA_DIR="+data)
}

// firstStartReads starts codecell with args on a first start and has its
// upstream reader read key, which must be refused as control (a file of
// codecell's that existed before the start) is.
func firstStartReads(t *testing.T, key, control string, args ...string) {
	t.Helper()
	s := start(t, args...)
	if !strings.Contains(s.stderr.String(), "stdio upstream servers run confined") {
		t.Skipf("stdio upstreams do not run confined here:\n%s", s.stderr.String())
	}
	h := s.connect(t, aliceToken, &user{}, "reader")
	if _, err := os.Stat(key); err != nil {
		t.Fatalf("codecell did not create its key at %s: %v", key, err)
	}
	read := func(p string) record {
		return h.run(fmt.Sprintf(`const r = await reader.read({path: %q}); return r.err ? "refused: " + r.err : r.bytes`, p), "timeout_ms", 20000)
	}
	if ctl := read(control); !strings.Contains(ctl.raw, "refused") {
		t.Fatalf("control: the upstream read %s: %.300s", control, ctl.raw)
	}
	if rec := read(key); !strings.Contains(rec.raw, "refused") {
		t.Errorf("a confined stdio upstream read codecell's filter key (%s), created on a first start: %.300s", key, rec.raw)
	}
}
