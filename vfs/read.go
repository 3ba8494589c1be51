package vfs

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/lexicon"
)

// Reasons a path is invalid; each wraps fs.ErrInvalid.
var (
	ErrBadChar = fmt.Errorf("%w: path has a NUL byte or a backslash", fs.ErrInvalid)
	ErrDotDot  = fmt.Errorf("%w: \"..\" is not allowed: the tool tree has no parent", fs.ErrInvalid)
	ErrTooLong = fmt.Errorf("%w: path is longer than %d bytes", fs.ErrInvalid, maxPathLen)
)

const maxPathLen = 512

// Clean turns a path as an agent writes it into an io/fs path of the
// tree. It accepts a leading "/" ("/github/index.json"), a trailing "/"
// on directories, "./" and repeated slashes; "", "/" and "." name the
// root, returned as ".". It rejects "..", NUL bytes, backslashes and
// paths over 512 bytes with an *fs.PathError wrapping fs.ErrInvalid.
func Clean(p string) (string, error) {
	if len(p) > maxPathLen {
		return "", &fs.PathError{Op: "read", Path: p[:64] + "…", Err: ErrTooLong}
	}
	if strings.ContainsAny(p, "\x00\\") {
		return "", &fs.PathError{Op: "read", Path: p, Err: ErrBadChar}
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", &fs.PathError{Op: "read", Path: p, Err: ErrDotDot}
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" {
		c = "."
	}
	if !fs.ValidPath(c) {
		return "", &fs.PathError{Op: "read", Path: p, Err: fs.ErrInvalid}
	}
	return c, nil
}

// Entry is one item of a directory listing, with what reading it costs.
type Entry struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Dir    bool   `json:"dir,omitempty"`
	Bytes  int    `json:"bytes,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
	// About is a directory's one-line description (a category's).
	About string `json:"about,omitempty"`
}

// Node is what Read found: a file's content or a directory's listing.
type Node struct {
	// Path is the clean path, "." for the root.
	Path string
	Dir  bool
	// Content is a file's bytes; the caller may keep and modify them.
	Content []byte
	// Entries lists a directory, sorted by name.
	Entries []Entry
}

// NotFoundError is Read's answer for a path that does not exist: the
// nearest existing directory above it, that directory's listing and, when
// one is close, an existing path the agent probably meant. It wraps
// fs.ErrNotExist.
type NotFoundError struct {
	Path       string
	Parent     string
	Entries    []Entry
	Suggestion string
	// Absent, when set, says that the path's category is loading or
	// unavailable, so that its tools are not there yet, and when to look
	// again.
	Absent string
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s does not exist", e.Path)
	if e.Absent != "" {
		fmt.Fprintf(&b, " yet: %s", e.Absent)
	}
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %s?", e.Suggestion)
	}
	names := make([]string, 0, len(e.Entries))
	for _, en := range e.Entries {
		n := en.Name
		if en.Dir {
			n += "/"
		}
		names = append(names, n)
	}
	where := e.Parent + "/"
	if e.Parent == "." {
		where = "the root"
	}
	const show = 12
	if len(names) > show {
		names = append(names[:show], fmt.Sprintf("… %d more", len(names)-show))
	}
	fmt.Fprintf(&b, " (%s holds: %s)", where, strings.Join(names, ", "))
	return b.String()
}

func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

// Read reads a path as an agent gives it (see Clean): a file gives its
// content, a directory its listing with each entry's size and estimated
// tokens. A path that does not exist gives a *NotFoundError; an invalid
// one an *fs.PathError wrapping fs.ErrInvalid.
func (f *FS) Read(p string) (*Node, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	s := f.current()
	n := s.lookup(c)
	if n.kind == kindNone {
		return nil, s.notFound(c, f.meaning)
	}
	if n.isDir() {
		return &Node{Path: c, Dir: true, Entries: s.listing(c, n)}, nil
	}
	data := s.content(c, n)
	return &Node{Path: c, Content: append([]byte(nil), data...)}, nil
}

// Nearest returns, for a path that does not exist, the nearest existing
// directory above it, that directory's listing and a close existing path
// ("" when none is close). For an existing path it returns nil.
func (f *FS) Nearest(p string) *NotFoundError {
	c, err := Clean(p)
	if err != nil {
		return nil
	}
	s := f.current()
	if s.lookup(c).kind != kindNone {
		return nil
	}
	return s.notFound(c, f.meaning)
}

// meaning is the tool path the caller's Suggester finds for the words
// of a missing tool path's name in a category ("" for any), or "".
func (f *FS) meaning(s *snapshot, category, name string) string {
	if f.tree.suggest == nil {
		return ""
	}
	words := strings.Join(lexicon.Words(name), " ")
	if words == "" {
		return ""
	}
	t := f.tree.suggest(f.caller, category, words)
	if t == "" {
		return ""
	}
	cat, short, ok := strings.Cut(t, ".")
	if !ok {
		return ""
	}
	if q := cat + "/" + short + SignatureExt; s.lookup(q).kind != kindNone {
		return q
	}
	return ""
}

func (s *snapshot) listing(dir string, n node) []Entry {
	des := s.entries(dir, n)
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		p := de.Name()
		if dir != "." {
			p = dir + "/" + p
		}
		e := Entry{Name: de.Name(), Path: p, Dir: de.IsDir()}
		if de.IsDir() {
			switch dn := s.lookup(p); dn.kind {
			case kindCategory:
				e.About = dn.cat.summary
			case kindGroup:
				e.About = dn.grp.about()
			case kindRuntime:
				e.About = "what every program has besides the catalogue: llm, approval, progress, tools.paginate, …"
			}
		} else {
			info, _ := de.Info()
			e.Bytes = int(info.Size())
			e.Tokens = tools.EstimateTokens(e.Bytes)
		}
		out = append(out, e)
	}
	return out
}

func (s *snapshot) notFound(p string, meaning func(s *snapshot, category, name string) string) *NotFoundError {
	parent := "."
	elems := strings.Split(p, "/")
	for i := len(elems) - 1; i > 0; i-- {
		cand := strings.Join(elems[:i], "/")
		if n := s.lookup(cand); n.isDir() {
			parent = cand
			break
		}
	}
	nf := &NotFoundError{
		Path:       p,
		Parent:     parent,
		Entries:    s.listing(parent, s.lookup(parent)),
		Suggestion: s.suggest(p, meaning),
	}
	cat, _, _ := strings.Cut(p, "/")
	if c := s.byName[cat]; c != nil && c.status.Absent() {
		nf.Absent = absentNote(c)
	}
	return nf
}

// absentNote says why the tools of an absent category are not there and
// when to look again.
func absentNote(c *category) string {
	if c.status.Loading {
		return fmt.Sprintf("%s is %s; its tools appear when it is done, read this path again then", c.name, c.status.Describe())
	}
	return fmt.Sprintf("%s is %s; its tools appear when it is back", c.name, c.status.Describe())
}

// suggest returns the existing path an agent most likely meant by p, or
// "". It knows the common slips — a tool's dotted name, a missing
// extension, a tool looked for in the wrong category — and otherwise takes
// the tool its words mean (meaning, when the tree has a Suggester), then
// the closest path by edit distance, if close enough.
func (s *snapshot) suggest(p string, meaning func(s *snapshot, category, name string) string) string {
	exists := func(q string) bool { return s.lookup(q).kind != kindNone }
	// "github.search_issues" (or with an extension) → github/search_issues.d.ts
	if !strings.Contains(p, "/") {
		if cat, rest, ok := strings.Cut(p, "."); ok {
			tool, ext := splitExt(rest)
			if ext != FullExt {
				ext = SignatureExt
			}
			if q := cat + "/" + tool + ext; exists(q) {
				return q
			}
			if q := RuntimeDir + "/" + cat + ext; exists(q) {
				return q
			}
		}
	}
	dir, base := path.Split(p)
	stem, ext := splitExt(base)
	// A missing or wrong extension: the one meant first, then the others.
	if dir != "" {
		for _, e := range []string{ext, SignatureExt, FullExt} {
			if e == "" {
				continue
			}
			if q := dir + stem + e; q != p && exists(q) {
				return q
			}
		}
	}
	// The right tool in another category.
	if ext == SignatureExt || ext == FullExt || ext == "" {
		if ext == "" {
			ext = SignatureExt
		}
		for _, c := range s.cats {
			if c.byShort[stem] != nil {
				return c.name + "/" + stem + ext
			}
		}
	}
	// The closest existing path.
	best, bestD := "", len(p)/3+2
	consider := func(q string) {
		if d := tools.EditDistance(p, q, bestD); d < bestD {
			best, bestD = q, d
		}
	}
	consider(ManifestFile)
	for _, c := range s.cats {
		consider(c.name)
		consider(c.name + "/" + IndexFile)
		for _, t := range c.tools {
			consider(c.name + "/" + t.ShortName() + SignatureExt)
			consider(c.name + "/" + t.ShortName() + FullExt)
		}
	}
	if best != "" && bestD <= 2 {
		return best // a slip of spelling
	}
	// The tool its words mean: "github/delete_branch.d.ts" is
	// git_delete_ref, whose words are not delete_branch's.
	if (ext == SignatureExt || ext == FullExt) && meaning != nil {
		cat := strings.TrimSuffix(dir, "/")
		if strings.Contains(cat, "/") || s.lookup(cat).kind != kindCategory {
			cat = ""
		}
		if q := meaning(s, cat, stem); q != "" {
			return strings.TrimSuffix(q, SignatureExt) + ext
		}
	}
	return best
}

// splitExt splits a base name into the stem before its first dot and the
// tree extension the rest most likely means: ".md" when it mentions md,
// ".d.ts" when it mentions ts, else the rest as it is.
func splitExt(base string) (stem, ext string) {
	i := strings.IndexByte(base, '.')
	if i < 0 {
		return base, ""
	}
	stem, rest := base[:i], base[i:]
	switch {
	case rest == IndexFile[len("index"):] || rest == ".json":
		return stem, ".json"
	case strings.Contains(rest, ".md"):
		return stem, FullExt
	case strings.Contains(rest, "ts"):
		return stem, SignatureExt
	}
	return stem, rest
}
