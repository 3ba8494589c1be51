package vfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// TestForCaller checks that a caller's tree holds its own tools and that
// another caller's tools exist at no level of anyone else's tree.
func TestForCaller(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	if err := r.DescribeCategory("skills", "Saved programs."); err != nil {
		t.Fatal(err)
	}
	// alice's skill is related to a global tool, and a global tool of
	// hers shadows the catalogue's own.
	err := r.RegisterScoped("alice",
		tools.Tool{Name: "skills.quarterly_report", Summary: "Alice's quarterly report.", Related: []string{"github.search_issues"}, Handler: nopHandler},
		tools.Tool{Name: "github.get_issue", Summary: "Alice's own get_issue.", Handler: nopHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	r.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal != "reader" {
			return tools.Toolset{}
		}
		return tools.Toolset{Key: "ro", Allow: func(t *tools.Tool) bool { return t.Annotations.ReadOnly }}
	})
	root := newFS(t, r)
	alice, bob, reader := root.For(tools.Caller{Principal: "alice"}), root.For(tools.Caller{Principal: "bob"}), root.For(tools.Caller{Principal: "reader"})

	if m, _ := alice.ReadFile("manifest.json"); !bytes.Contains(m, []byte(`"skills":"1 tool: Saved programs."`)) {
		t.Errorf("alice's manifest lacks her skills: %s", m)
	}
	if md, err := alice.ReadFile("skills/quarterly_report.md"); err != nil || !bytes.Contains(md, []byte("- github.search_issues: ")) {
		t.Errorf("alice's skill page: %v\n%s", err, md)
	}
	if d, _ := alice.ReadFile("github/get_issue.d.ts"); !bytes.Contains(d, []byte("Alice's own get_issue.")) {
		t.Errorf("alice's get_issue does not shadow the global one:\n%s", d)
	}
	if d, _ := bob.ReadFile("github/get_issue.d.ts"); bytes.Contains(d, []byte("Alice")) {
		t.Errorf("bob reads alice's get_issue:\n%s", d)
	}

	for name, f := range map[string]*vfs.FS{"bob": bob, "root": root, "reader": reader} {
		t.Run(name, func(t *testing.T) {
			if m, _ := f.ReadFile("manifest.json"); bytes.Contains(m, []byte("skills")) {
				t.Errorf("manifest names skills: %s", m)
			}
			for _, p := range []string{"skills", "skills/index.json", "skills/quarterly_report.d.ts", "skills/quarterly_report.md"} {
				if _, err := f.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Stat(%s): %v, want not exist", p, err)
				}
			}
			_, err := f.Read("skills/quarterly_reprot.md")
			var nf *vfs.NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("Read of a misspelled hidden tool: %v", err)
			}
			if strings.Contains(nf.Suggestion, "quarterly") {
				t.Errorf("suggestion %q names a hidden tool", nf.Suggestion)
			}
			for _, e := range nf.Entries {
				if strings.Contains(e.Path, "skills") {
					t.Errorf("the listing of the nearest parent holds %s", e.Path)
				}
			}
			if _, ok := f.Info("skills.quarterly_report"); ok {
				t.Error("Info of a hidden tool")
			}
			err = fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := f.ReadFile(p)
				if bytes.Contains(b, []byte("quarterly_report")) || bytes.Contains(b, []byte("Alice")) {
					t.Errorf("%s mentions alice's tools", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}

	// The read-only caller sees no tool that is not read-only, in any
	// listing or related list.
	entries, err := fs.ReadDir(reader, "github")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "merge_pull_request.d.ts" {
			t.Errorf("the read-only tree lists %s", e.Name())
		}
	}
	if idx, _ := reader.ReadFile("github/index.json"); bytes.Contains(idx, []byte("merge_pull_request")) {
		t.Errorf("the read-only index names merge_pull_request:\n%s", idx)
	}

	// Callers without tools of their own see exactly the global tree.
	for _, p := range []string{"manifest.json", "github/index.json", "github/search_issues.md"} {
		a, _ := root.ReadFile(p)
		b, _ := bob.ReadFile(p)
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the root tree and bob's", p)
		}
	}
}

// TestForFollowsScopeChanges checks that a caller's tree follows changes
// of its own scope.
func TestForFollowsScopeChanges(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	alice := newFS(t, r).For(tools.Caller{Principal: "alice"})
	v0 := alice.Version()
	if err := r.RegisterScoped("alice", tools.Tool{Name: "skills.x", Summary: "X.", Handler: nopHandler}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Stat("skills/x.d.ts"); err != nil || alice.Version() == v0 {
		t.Errorf("alice's tree did not follow her new tool: %v (version %d → %d)", err, v0, alice.Version())
	}
	r.UnregisterScoped("alice", "skills.x")
	if _, err := alice.Stat("skills"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alice's tree kept a removed tool: %v", err)
	}
}

// BenchmarkReadFor measures a read of a cached file through a caller's
// tree: the view lookup and the cached file. "global" is a caller
// without tools of its own, "scoped" one with a tool of its own.
//
//	go test ./vfs -run '^$' -bench ReadFor
func BenchmarkReadFor(b *testing.B) {
	r := newCatalog(b)
	if err := r.RegisterScoped("alice", tools.Tool{Name: "skills.x", Summary: "X.", Handler: nopHandler}); err != nil {
		b.Fatal(err)
	}
	root := vfs.New(r)
	for _, bc := range []struct {
		name   string
		caller tools.Caller
	}{{"global", tools.Caller{Principal: "bob"}}, {"scoped", tools.Caller{Principal: "alice"}}} {
		b.Run(bc.name, func(b *testing.B) {
			f := root.For(bc.caller)
			if _, err := f.ReadFile("github/search_issues.d.ts"); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, ok := f.Content("github.search_issues", vfs.LevelSignature); !ok {
					b.Fatal("no content")
				}
			}
		})
	}
}
