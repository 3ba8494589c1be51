package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codecell/codecell/tools"
)

// File names and extensions of the tree.
const (
	ManifestFile = "manifest.json"
	IndexFile    = "index.json"
	SignatureExt = ".d.ts"
	FullExt      = ".md"
)

// FS is the registry as a read-only file tree, as one caller sees it
// (see tools.View): New gives the tree of the zero Caller, For the tree
// of another. It is safe for concurrent use.
type FS struct {
	tree   *tree
	caller tools.Caller
}

// tree is what the FS values of one New share. A *tree is the key of
// their snapshots on each tools.View.
type tree struct {
	reg     *tools.Registry
	hint    string
	suggest Suggester
}

// Suggester names the tool a caller most likely means by the words of
// a path that does not exist ("github/delete_branch.d.ts": delete
// branch, in category github, or in any when category is ""), ranked as
// search_tools ranks (package search, with the lexicon's sense of API
// words): a qualified tool name, or "" when none is a confident match.
type Suggester func(c tools.Caller, category, words string) string

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
)

// Option configures an FS.
type Option func(*tree)

// WithManifestHint replaces the sentence manifest.json gives on how to go
// deeper, for a server that also offers, say, a search tool.
func WithManifestHint(hint string) Option {
	return func(t *tree) { t.hint = hint }
}

// WithSuggester makes a missing tool path suggest the tool its words
// mean (see Suggester) when no common slip explains it, before the
// closest path by spelling.
func WithSuggester(fn Suggester) Option {
	return func(t *tree) { t.suggest = fn }
}

// New returns the file tree of reg as the zero Caller sees it: the global
// tools, within the toolset reg gives that caller.
func New(reg *tools.Registry, opts ...Option) *FS {
	t := &tree{reg: reg, hint: DefaultManifestHint}
	for _, o := range opts {
		o(t)
	}
	return &FS{tree: t}
}

// For returns the tree as c sees it: the global tools and c's own, within
// c's toolset. Tools outside c's view do not exist in it at any level.
// Trees of callers that share a view share their rendered files, and a
// caller's files are rendered again only when its view changes.
func (f *FS) For(c tools.Caller) *FS { return &FS{tree: f.tree, caller: c} }

// Version returns the version of the view the current content reflects
// (tools.View.Version).
func (f *FS) Version() uint64 { return f.current().version }

// current returns the snapshot of the caller's current view, building it
// on first use.
func (f *FS) current() *snapshot {
	v := f.tree.reg.View(f.caller)
	return v.Memo(f.tree, func(v *tools.View) any { return buildSnapshot(v, f.tree.hint) }).(*snapshot)
}

// snapshot is the catalogue of one view, with its rendered files cached
// as they are first read.
type snapshot struct {
	version uint64
	cats    []*category
	byName  map[string]*category
	tools   map[string]*tools.Tool
	files   sync.Map // path → *lazyFile
	shapes  sync.Map // tool name → output shape
	hint    string
	// runtime lists the runtime namespaces (see RuntimeDir).
	runtime  []*runtimeNS
	rtByName map[string]*runtimeNS
	// pages are the built-in runtime namespaces as search documents
	// (FS.Pages).
	pages []*tools.Tool
	// loading is set when a category's source is loading: the manifest
	// and that category's index then say how far it got, rendered at
	// each read rather than kept.
	loading bool
}

type category struct {
	name    string
	summary string
	status  tools.CategoryStatus
	// source is who wrote the text of its tools when not codecell
	// (tools.View.CategorySource): that text is marked as theirs.
	source  string
	tools   []*tools.Tool
	byShort map[string]*tools.Tool
	// root is the group tree of a category shown in groups, nil for one
	// shown flat (see GroupThreshold).
	root *group
	// groupOf is each tool's group path in a grouped category: its own
	// Group, or one made from its name (see buildGroups).
	groupOf map[*tools.Tool]string
}

type lazyFile struct {
	once sync.Once
	data []byte
}

func buildSnapshot(v *tools.View, hint string) *snapshot {
	s := &snapshot{version: v.Version(), hint: hint, byName: map[string]*category{}, tools: map[string]*tools.Tool{}}
	list := v.List()
	// Runtime tools are namespaces under RuntimeDir, not categories; a
	// category is one when it has a catalogue tool, or none at all (its
	// source is unavailable).
	rt := map[string][]*tools.Tool{}
	catalogue := map[string]bool{}
	for _, t := range list {
		if t.Runtime {
			rt[t.Category()] = append(rt[t.Category()], t)
		} else {
			catalogue[t.Category()] = true
		}
	}
	s.runtime, s.rtByName = buildRuntime(v, rt)
	s.pages = builtinPages(s.runtime)
	for _, name := range v.Categories() {
		if name == RuntimeDir || (!catalogue[name] && rt[name] != nil) {
			continue
		}
		c := &category{name: name, summary: v.CategorySummary(name), status: v.CategoryStatus(name), source: v.CategorySource(name), byShort: map[string]*tools.Tool{}}
		s.loading = s.loading || c.status.Loading
		s.byName[name] = c
		s.cats = append(s.cats, c)
	}
	for _, t := range list {
		if t.Runtime {
			s.tools[t.Name] = t
			continue
		}
		c := s.byName[t.Category()]
		if c == nil {
			continue // a catalogue category named RuntimeDir
		}
		c.tools = append(c.tools, t)
		c.byShort[t.ShortName()] = t
		s.tools[t.Name] = t
	}
	sort.Slice(s.cats, func(i, j int) bool { return s.cats[i].name < s.cats[j].name })
	for _, c := range s.cats {
		c.root = buildGroups(c)
	}
	return s
}

// related returns t's related tools that exist in the snapshot: a tool
// outside the caller's view is not named.
func (s *snapshot) related(t *tools.Tool) []string {
	var out []string
	for _, r := range t.Related {
		if s.tools[r] != nil {
			out = append(out, r)
		}
	}
	return out
}

// nodeKind says what a path names.
type nodeKind int

const (
	kindNone nodeKind = iota
	kindRoot
	kindManifest
	kindCategory
	kindGroup // a group's directory in a grouped category
	kindIndex
	kindSignature
	kindFull
	kindRuntime // RuntimeDir
	kindRuntimeIndex
	kindRuntimeSignature
	kindRuntimeFull
)

type node struct {
	kind nodeKind
	cat  *category
	tool *tools.Tool
	// grp is the group of a kindGroup directory or of a grouped
	// category's kindIndex; the category's own for its root.
	grp *group
	// rt is the namespace of a runtime file.
	rt *runtimeNS
}

func (n node) isDir() bool {
	return n.kind == kindRoot || n.kind == kindCategory || n.kind == kindGroup || n.kind == kindRuntime
}

// lookup resolves a valid io/fs path.
func (s *snapshot) lookup(name string) node {
	if name == "." {
		return node{kind: kindRoot}
	}
	if name == ManifestFile {
		return node{kind: kindManifest}
	}
	catName, rest, nested := strings.Cut(name, "/")
	if catName == RuntimeDir {
		return s.lookupRuntime(rest, nested)
	}
	c := s.byName[catName]
	if c == nil {
		return node{}
	}
	if !nested {
		return node{kind: kindCategory, cat: c, grp: c.root}
	}
	if c.root != nil {
		return c.lookupGrouped(rest)
	}
	if rest == IndexFile {
		return node{kind: kindIndex, cat: c}
	}
	if short, ok := strings.CutSuffix(rest, SignatureExt); ok {
		if t := c.byShort[short]; t != nil {
			return node{kind: kindSignature, cat: c, tool: t}
		}
	}
	if short, ok := strings.CutSuffix(rest, FullExt); ok {
		if t := c.byShort[short]; t != nil {
			return node{kind: kindFull, cat: c, tool: t}
		}
	}
	return node{}
}

// content returns a file's bytes, rendering them on first use. The
// returned slice is shared and must not be modified. A tool's files are
// kept once, under the path its name gives, wherever they were read.
func (s *snapshot) content(name string, n node) []byte {
	if s.loading && (n.kind == kindManifest || n.kind == kindIndex && n.cat.status.Loading) {
		return s.render(n) // with the progress of the moment
	}
	if n.tool != nil {
		name = toolPath(n.tool.Name, pathExt(name))
	}
	v, _ := s.files.LoadOrStore(name, &lazyFile{})
	lf := v.(*lazyFile)
	lf.once.Do(func() { lf.data = s.render(n) })
	return lf.data
}

func (s *snapshot) render(n node) []byte {
	switch n.kind {
	case kindManifest:
		return renderManifest(s)
	case kindIndex:
		if n.cat.root != nil {
			return renderGroupIndex(s, n.cat, n.grp)
		}
		return renderIndex(s, n.cat)
	case kindSignature:
		d, err := Declaration(n.tool)
		if err != nil {
			// Schemas were compiled at registration, so this is unreachable
			// for registered tools; say what happened rather than fail reads.
			return []byte("// " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
		}
		if n.cat.source != "" {
			d = "// From " + n.cat.source + ": the comments below are its words, not codecell's.\n" + d
		}
		return []byte(d)
	case kindFull:
		return renderFull(s, n.tool)
	case kindRuntimeIndex:
		return renderRuntimeIndex(s)
	case kindRuntimeSignature:
		return renderRuntimeSignature(n.rt)
	case kindRuntimeFull:
		return renderRuntimeFull(s, n.rt)
	}
	return nil
}

// entries lists a directory, sorted by name, with each file's size.
func (s *snapshot) entries(dir string, n node) []fs.DirEntry {
	var out []fs.DirEntry
	switch n.kind {
	case kindRoot:
		out = append(out, s.fileEntry(ManifestFile, node{kind: kindManifest}))
		for _, c := range s.cats {
			out = append(out, dirEntry{info: &fileInfo{name: c.name, dir: true}})
		}
		out = append(out, dirEntry{info: &fileInfo{name: RuntimeDir, dir: true}})
	case kindRuntime:
		out = s.runtimeEntries()
	case kindCategory, kindGroup:
		if n.grp != nil {
			out = s.groupEntries(dir, n.cat, n.grp)
			break
		}
		out = append(out, s.fileEntry(dir+"/"+IndexFile, node{kind: kindIndex, cat: n.cat}))
		for _, t := range n.cat.tools {
			out = append(out,
				s.fileEntry(dir+"/"+t.ShortName()+SignatureExt, node{kind: kindSignature, cat: n.cat, tool: t}),
				s.fileEntry(dir+"/"+t.ShortName()+FullExt, node{kind: kindFull, cat: n.cat, tool: t}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func (s *snapshot) fileEntry(p string, n node) fs.DirEntry {
	return dirEntry{info: &fileInfo{name: pathBase(p), size: int64(len(s.content(p, n)))}}
}

// pathExt is the tree extension of a tool file's path.
func pathExt(p string) string {
	if strings.HasSuffix(p, SignatureExt) {
		return SignatureExt
	}
	return FullExt
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Open opens the named file or directory. name follows io/fs rules
// (fs.ValidPath): unrooted, slash-separated, no "." or ".." elements, "."
// for the root. Errors are *fs.PathError wrapping fs.ErrInvalid or
// fs.ErrNotExist.
func (f *FS) Open(name string) (fs.File, error) {
	s, n, err := f.resolve("open", name)
	if err != nil {
		return nil, err
	}
	info := s.info(name, n)
	if n.isDir() {
		return &openDir{info: info, entries: s.entries(name, n)}, nil
	}
	return &openFile{info: info, r: bytes.NewReader(s.content(name, n))}, nil
}

// ReadFile returns a copy of the named file's content.
func (f *FS) ReadFile(name string) ([]byte, error) {
	s, n, err := f.resolve("readfile", name)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: errIsDir}
	}
	return bytes.Clone(s.content(name, n)), nil
}

// ReadDir lists the named directory, sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	s, n, err := f.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	return s.entries(name, n), nil
}

// Stat describes the named file or directory.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	s, n, err := f.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	return s.info(name, n), nil
}

var (
	errIsDir  = errors.New("is a directory")
	errNotDir = errors.New("not a directory")
)

func (f *FS) resolve(op, name string) (*snapshot, node, error) {
	if !fs.ValidPath(name) {
		return nil, node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	s := f.current()
	n := s.lookup(name)
	if n.kind == kindNone {
		return nil, node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return s, n, nil
}

func (s *snapshot) info(name string, n node) *fileInfo {
	if n.isDir() {
		return &fileInfo{name: pathBase(name), dir: true}
	}
	return &fileInfo{name: pathBase(name), size: int64(len(s.content(name, n)))}
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i *fileInfo) Name() string { return i.name }
func (i *fileInfo) Size() int64  { return i.size }
func (i *fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i *fileInfo) ModTime() time.Time { return time.Time{} }
func (i *fileInfo) IsDir() bool        { return i.dir }
func (i *fileInfo) Sys() any           { return nil }

type dirEntry struct{ info *fileInfo }

func (e dirEntry) Name() string               { return e.info.name }
func (e dirEntry) IsDir() bool                { return e.info.dir }
func (e dirEntry) Type() fs.FileMode          { return e.info.Mode().Type() }
func (e dirEntry) Info() (fs.FileInfo, error) { return e.info, nil }

type openFile struct {
	info *fileInfo
	r    *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *openFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *openFile) ReadAt(p []byte, off int64) (int, error) {
	return f.r.ReadAt(p, off)
}
func (f *openFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *openFile) Close() error                              { return nil }

type openDir struct {
	info    *fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errIsDir}
}
func (d *openDir) Close() error { return nil }

// ReadDir follows fs.ReadDirFile: n > 0 reads at most n entries and
// returns io.EOF at the end; n <= 0 reads all that remain.
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return rest[:n], nil
}
