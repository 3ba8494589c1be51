package vfs_test

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/vfs"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const catalogDir = "../testdata/catalog"

// newCatalog returns a registry holding the testdata catalogue.
func newCatalog(tb testing.TB) *tools.Registry {
	tb.Helper()
	r := tools.NewRegistry()
	if err := catalog.LoadInto(r, catalogDir); err != nil {
		tb.Fatal(err)
	}
	return r
}

func newFS(tb testing.TB, r *tools.Registry) *vfs.FS {
	tb.Helper()
	f := vfs.New(r)
	return f
}

// TestGolden compares every file of the tree, all four levels, with
// testdata/golden. Run "go test ./vfs -update" to rewrite them.
func TestGolden(t *testing.T) {
	f := newFS(t, newCatalog(t))
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	err := fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		got, err := f.ReadFile(p)
		if err != nil {
			return err
		}
		gp := filepath.Join(golden, filepath.FromSlash(p))
		seen[gp] = true
		if *update {
			if err := os.MkdirAll(filepath.Dir(gp), 0o755); err != nil {
				return err
			}
			return os.WriteFile(gp, got, 0o644)
		}
		want, err := os.ReadFile(gp)
		if err != nil {
			t.Errorf("%s: no golden file (run go test ./vfs -update): %v", p, err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run go test ./vfs -update and review the diff)\n got: %.300s", p, gp, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newCatalog(t)
	// The manifest, the indexes, two files a tool, and the runtime's
	// index with the files of its four built-in pages (plan, progress,
	// tasks, tools).
	if want := 1 + len(r.Categories()) + 2*len(r.List()) + 1 + 2*4; len(seen) != want {
		t.Errorf("walked %d files, want %d: the whole tree", len(seen), want)
	}
	_ = filepath.WalkDir(golden, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !seen[p] {
			t.Errorf("stale golden file %s: the tree has no such file", p)
		}
		return nil
	})
}

func TestFSTest(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	if err := fstest.TestFS(f, "manifest.json", "github/index.json", "github/search_issues.d.ts",
		"github/search_issues.md", "weather/index.json", "payments/refund_charge.d.ts"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejectsInvalidPaths(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	tests := []struct {
		path string
		want error
	}{
		{"", fs.ErrInvalid},
		{"/manifest.json", fs.ErrInvalid},
		{"../manifest.json", fs.ErrInvalid},
		{"github/../manifest.json", fs.ErrInvalid},
		{"github/", fs.ErrInvalid},
		{"./github", fs.ErrInvalid},
		{"github//index.json", fs.ErrInvalid},
		{"github/index.json\x00", fs.ErrNotExist}, // a valid io/fs name that names nothing
		{"nosuch", fs.ErrNotExist},
		{"github/nosuch.d.ts", fs.ErrNotExist},
		{"github/search_issues", fs.ErrNotExist},
		{"github/index.json/x", fs.ErrNotExist},
		{"manifest.json/x", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := f.Open(tt.path)
			var pe *fs.PathError
			if !errors.As(err, &pe) || !errors.Is(err, tt.want) {
				t.Errorf("Open(%q) = %v, want *fs.PathError wrapping %v", tt.path, err, tt.want)
			}
			if _, err := f.ReadFile(tt.path); !errors.Is(err, tt.want) {
				t.Errorf("ReadFile(%q) = %v, want %v", tt.path, err, tt.want)
			}
			if _, err := f.Stat(tt.path); !errors.Is(err, tt.want) {
				t.Errorf("Stat(%q) = %v, want %v", tt.path, err, tt.want)
			}
		})
	}
	if _, err := f.ReadFile("github"); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
	if _, err := f.ReadDir("manifest.json"); err == nil {
		t.Error("ReadDir of a file succeeded")
	}
}

func TestReadAgentPaths(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	manifest, err := f.ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path     string
		wantPath string
		wantDir  bool
	}{
		{"", ".", true},
		{"/", ".", true},
		{".", ".", true},
		{"/manifest.json", "manifest.json", false},
		{"manifest.json", "manifest.json", false},
		{"/github/index.json", "github/index.json", false},
		{"github/", "github", true},
		{"/github/", "github", true},
		{"./github//search_issues.d.ts", "github/search_issues.d.ts", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, err := f.Read(tt.path)
			if err != nil {
				t.Fatalf("Read(%q): %v", tt.path, err)
			}
			if n.Path != tt.wantPath || n.Dir != tt.wantDir {
				t.Errorf("Read(%q) = path %q dir %v, want %q %v", tt.path, n.Path, n.Dir, tt.wantPath, tt.wantDir)
			}
			if tt.wantDir {
				if len(n.Entries) == 0 {
					t.Fatal("directory listing is empty")
				}
				for _, e := range n.Entries {
					if !e.Dir && (e.Bytes == 0 || e.Tokens == 0) {
						t.Errorf("entry %s has no size", e.Path)
					}
					if e.Dir && e.About == "" {
						t.Errorf("category %s has no description", e.Path)
					}
				}
			}
			if tt.wantPath == "manifest.json" && !bytes.Equal(n.Content, manifest) {
				t.Error("Read and ReadFile disagree")
			}
		})
	}
}

func TestReadInvalid(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	for _, p := range []string{"..", "/..", "github/../../etc/passwd", "../x", "a\x00b", `github\index.json`, strings.Repeat("a/", 300)} {
		n, err := f.Read(p)
		if n != nil || !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Read(%q) = %v, %v; want fs.ErrInvalid", p, n, err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			t.Errorf("Read(%q) error %T is not *fs.PathError", p, err)
		}
	}
}

func TestReadNotFound(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	tests := []struct {
		path           string
		wantParent     string
		wantSuggestion string
	}{
		{"github/serch_issues.d.ts", "github", "github/search_issues.d.ts"},
		{"github/search_issues", "github", "github/search_issues.d.ts"},
		{"github/search_issues.md.txt", "github", "github/search_issues.md"},
		{"/github.search_issues", ".", "github/search_issues.d.ts"},
		{"github.get_issue.md", ".", "github/get_issue.md"},
		{"slack/search_issues.md", "slack", "github/search_issues.md"},
		{"githb/index.json", ".", "github/index.json"},
		{"githb", ".", "github"},
		{"manifest.jsn", ".", "manifest.json"},
		{"github/index.json/more", "github", "github/index.json"},
		{"zzzzzzzz/qqqqqqqqq/wwwwwwww", ".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, err := f.Read(tt.path)
			var nf *vfs.NotFoundError
			if n != nil || !errors.As(err, &nf) || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Read(%q) = %v, %v; want *NotFoundError", tt.path, n, err)
			}
			if nf.Parent != tt.wantParent {
				t.Errorf("parent = %q, want %q", nf.Parent, tt.wantParent)
			}
			if nf.Suggestion != tt.wantSuggestion {
				t.Errorf("suggestion = %q, want %q", nf.Suggestion, tt.wantSuggestion)
			}
			if len(nf.Entries) == 0 {
				t.Error("no listing of the parent")
			}
			if tt.wantSuggestion != "" && !strings.Contains(err.Error(), "did you mean "+tt.wantSuggestion) {
				t.Errorf("message %q does not suggest %s", err, tt.wantSuggestion)
			}
			if got := f.Nearest(tt.path); got == nil || got.Parent != nf.Parent {
				t.Errorf("Nearest disagrees with Read: %v", got)
			}
		})
	}
	if f.Nearest("github/index.json") != nil {
		t.Error("Nearest of an existing path is not nil")
	}
}

// TestBudgets checks the size limits of levels 0 and 1 on the testdata
// catalogue and logs what each level measures.
func TestBudgets(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	st := f.Stats()
	if st.Manifest.Bytes > 1024 {
		t.Errorf("manifest.json is %d bytes, budget 1024", st.Manifest.Bytes)
	}
	if st.Tools < 100 || st.Categories < 10 {
		t.Errorf("catalogue too small to test the manifest budget: %d tools, %d categories", st.Tools, st.Categories)
	}
	for _, ix := range st.Indexes {
		if ix.Bytes > 5*1024 {
			t.Errorf("%s/index.json is %d bytes for %d tools, budget 5120", ix.Category, ix.Bytes, ix.Tools)
		}
	}
	if st.Signature.Median > 2048 {
		t.Errorf("median .d.ts is %d bytes, want about 2 KB or less", st.Signature.Median)
	}
	m, _ := f.ReadFile("manifest.json")
	if bytes.Contains(m, []byte("…")) {
		t.Errorf("the testdata manifest needed trimming: %s", m)
	}
	var b strings.Builder
	if err := st.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
}

// TestDisclosureTable prints the bytes per level for the testdata
// catalogue: go test ./vfs -run TestDisclosureTable -v
func TestDisclosureTable(t *testing.T) {
	f := newFS(t, newCatalog(t))
	var b strings.Builder
	if err := f.Stats().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 2 <category>/<tool>.d.ts | 128 |") {
		t.Errorf("table does not count the catalogue's signatures:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
}

// TestIndexBudgetForty measures a 40-tool category made of the testdata
// catalogue's real summaries and related lists, and checks it stays in
// the 5 KB budget, and how much the budget had to trim.
func TestIndexBudgetForty(t *testing.T) {
	t.Parallel()
	src := newCatalog(t)
	r := tools.NewRegistry()
	var ts []tools.Tool
	for i, tl := range src.List() {
		if i == 40 {
			break
		}
		c := *tl
		c.Name = "big." + tl.Category() + "_" + tl.ShortName()
		c.Related = nil
		for _, rel := range tl.Related {
			c.Related = append(c.Related, "big."+strings.Replace(rel, ".", "_", 1))
		}
		ts = append(ts, c)
	}
	if err := r.Register(ts...); err != nil {
		t.Fatal(err)
	}
	f := newFS(t, r)
	idx, err := f.ReadFile("big/index.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) > 5*1024 {
		t.Errorf("40-tool index.json is %d bytes, budget 5120", len(idx))
	}
	trimmed := bytes.Contains(idx, []byte(`"trimmed"`))
	t.Logf("40-tool index.json: %d bytes, trimmed: %v", len(idx), trimmed)
	for _, tl := range ts {
		if !bytes.Contains(idx, []byte(`"`+tl.ShortName()+`"`)) {
			t.Errorf("index lost tool %s", tl.ShortName())
		}
	}
}

func TestManifestBudgetManyCategories(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	for _, c := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango") {
		if err := r.DescribeCategory(c, "A long description of what this category of tools does for you, in words"); err != nil {
			t.Fatal(err)
		}
		if err := r.Register(tools.Tool{Name: c + ".do_it", Summary: "Do it.", Handler: nopHandler}); err != nil {
			t.Fatal(err)
		}
	}
	f := newFS(t, r)
	m, _ := f.ReadFile("manifest.json")
	if len(m) > vfs.ManifestBudget {
		t.Errorf("manifest is %d bytes, budget %d", len(m), vfs.ManifestBudget)
	}
	if !bytes.Contains(m, []byte(`"tango":"1 tool`)) {
		t.Errorf("manifest lost the tool counts: %s", m)
	}
}

// TestInvalidation checks that content follows registry changes, and that
// concurrent reads during changes are safe (run with -race).
func TestInvalidation(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	f := newFS(t, r)
	before, _ := f.ReadFile("manifest.json")
	if _, err := f.Stat("zzz/index.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("zzz exists before registration: %v", err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = f.ReadFile("manifest.json")
				_, _ = f.Read("github/")
				_, _ = f.Info("github.get_issue")
			}
		})
	}
	if err := r.Register(tools.Tool{Name: "zzz.ping", Summary: "Ping.", Handler: nopHandler}); err != nil {
		t.Fatal(err)
	}
	after, _ := f.ReadFile("manifest.json")
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`"zzz":"1 tool"`)) {
		t.Errorf("manifest did not follow the registration: %s", after)
	}
	if _, err := f.ReadFile("zzz/ping.d.ts"); err != nil {
		t.Errorf("new tool not readable: %v", err)
	}
	if err := r.DescribeCategory("zzz", "Ping things"); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.ReadFile("manifest.json"); !bytes.Contains(m, []byte(`"zzz":"1 tool: Ping things"`)) {
		t.Errorf("manifest did not follow the category description: %s", m)
	}
	r.Unregister("zzz.ping")
	if _, err := f.Stat("zzz"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("zzz still exists after unregistering: %v", err)
	}
	close(stop)
	wg.Wait()
	if m, _ := f.ReadFile("manifest.json"); !bytes.Equal(m, before) {
		t.Errorf("manifest did not return to its first form")
	}
}

func TestFullPageHasSource(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	if err := r.Register(tools.Tool{
		Name:    "skills.weekly_report",
		Summary: "Build the weekly report.",
		Source:  "export default async function (args) {\n  return await db.query({sql: 'select 1'});\n}",
		Handler: nopHandler,
	}); err != nil {
		t.Fatal(err)
	}
	f := newFS(t, r)
	md, err := f.ReadFile("skills/weekly_report.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Source", "return await db.query", "Not documented: the result is `unknown`."} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
}

// FuzzPaths feeds arbitrary paths to Open, Read and Nearest: none may
// panic, an invalid path never yields content, and what Read returns for a
// file is exactly what ReadFile returns for its clean path.
func FuzzPaths(f *testing.F) {
	for _, s := range []string{"", "/", "manifest.json", "/github/index.json", "github/", "../x", "github/../github", "a\x00b", "githb/serch", "github.get_issue"} {
		f.Add(s)
	}
	fsys := vfs.New(newCatalog(f))
	f.Fuzz(func(t *testing.T, p string) {
		file, err := fsys.Open(p)
		if !fs.ValidPath(p) {
			if file != nil || !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("Open(%q) of an invalid path = %v, %v", p, file, err)
			}
		} else if err == nil {
			file.Close()
		}

		n, err := fsys.Read(p)
		hasDotDot := false
		for _, e := range strings.Split(p, "/") {
			hasDotDot = hasDotDot || e == ".."
		}
		if hasDotDot || strings.ContainsAny(p, "\x00\\") {
			if n != nil || !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("Read(%q) = %v, %v; want fs.ErrInvalid", p, n, err)
			}
		}
		if err != nil {
			if n != nil {
				t.Fatalf("Read(%q) returned a node and an error", p)
			}
			if !errors.Is(err, fs.ErrInvalid) && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Read(%q) error %v is neither invalid nor not-exist", p, err)
			}
			return
		}
		if !fs.ValidPath(n.Path) {
			t.Fatalf("Read(%q) returned invalid path %q", p, n.Path)
		}
		if !n.Dir {
			want, err := fsys.ReadFile(n.Path)
			if err != nil || !bytes.Equal(want, n.Content) {
				t.Fatalf("Read(%q) content differs from ReadFile(%q): %v", p, n.Path, err)
			}
		}
		if fsys.Nearest(p) != nil {
			t.Fatalf("Nearest(%q) is not nil for an existing path", p)
		}
	})
}

func TestContentLevels(t *testing.T) {
	t.Parallel()
	f := newFS(t, newCatalog(t))
	for _, tt := range []struct {
		name  string
		level vfs.Level
		path  string
	}{
		{"", vfs.LevelManifest, "manifest.json"},
		{"github", vfs.LevelIndex, "github/index.json"},
		{"github.get_issue", vfs.LevelSignature, "github/get_issue.d.ts"},
		{"github.get_issue", vfs.LevelFull, "github/get_issue.md"},
	} {
		got, ok := f.Content(tt.name, tt.level)
		want, err := f.ReadFile(tt.path)
		if !ok || err != nil || !bytes.Equal(got, want) {
			t.Errorf("Content(%q, %d) differs from ReadFile(%q): %v %v", tt.name, tt.level, tt.path, ok, err)
		}
	}
	if _, ok := f.Content("github.nope", vfs.LevelSignature); ok {
		t.Error("Content of an unknown tool succeeded")
	}
	if _, ok := f.Content("github.get_issue", vfs.Level(7)); ok {
		t.Error("Content at an unknown level succeeded")
	}
}
