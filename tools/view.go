package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// View is the catalogue as one caller sees it at one moment: the global
// tools and the caller's own (which shadow global tools of the same
// names), less what the caller's toolset leaves out. A View never changes;
// Registry.View returns a new one once what the caller sees has changed.
//
// Callers without tools of their own and with the full toolset share one
// view, as do callers of one principal with the same toolset. Derived data
// (a file tree, a search index, a program's namespaces) is kept on the view
// with Memo, so that it is built once per view and rebuilt exactly when
// what its callers see changes.
type View struct {
	version   uint64
	key       viewKey
	entries   map[string]*entry
	aliases   map[string]*entry // category.alias → the tool that has it
	tools     []*Tool           // sorted by name
	cats      []string
	summaries map[string]string
	statuses  map[string]CategoryStatus
	sources   map[string]string
	memo      sync.Map // key → *memoCell
	used      atomic.Uint64
}

// viewKey identifies the callers that share a view: the principal whose
// scope it includes ("" when none) and the toolset's key.
type viewKey struct {
	scope, toolset string
}

type memoCell struct {
	once sync.Once
	v    any
}

// Version identifies what the view shows: a caller's views with the same
// version show the same tools, and a change the caller can see gives it a
// view with another version. It is the registry version of the last such
// change.
func (v *View) Version() uint64 { return v.version }

// Scoped reports whether the view holds tools of a scope, that is, whether
// it differs from the global view by more than a toolset.
func (v *View) Scoped() bool { return v.key.scope != "" }

// Shared reports whether the view is the global one, seen by every caller
// without tools of its own and with the full toolset.
func (v *View) Shared() bool { return v.key == viewKey{} }

// Get returns the named tool; name may be one of its aliases
// (category.alias).
func (v *View) Get(name string) (*Tool, bool) {
	e, ok := v.entry(name)
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// entry finds a tool by name, then by alias.
func (v *View) entry(name string) (*entry, bool) {
	if e, ok := v.entries[name]; ok {
		return e, true
	}
	e, ok := v.aliases[name]
	return e, ok
}

// List returns the tools, sorted by name. The slice is shared: do not
// modify it.
func (v *View) List() []*Tool { return v.tools }

// Len returns the number of tools.
func (v *View) Len() int { return len(v.tools) }

// ListCategory returns the tools of one category, sorted by name.
func (v *View) ListCategory(category string) []*Tool {
	prefix := category + "."
	var out []*Tool
	for _, t := range v.tools {
		if strings.HasPrefix(t.Name, prefix) {
			out = append(out, t)
		}
	}
	return out
}

// Categories returns the names of the categories that hold tools, and of
// those marked unavailable (Registry.SetCategoryStatus) or loading
// (Registry.BeginLoad) even when they hold none, sorted. Such a category
// without tools is listed only in views without a toolset, since a
// toolset chooses among tools. The slice is shared: do not modify it.
func (v *View) Categories() []string { return v.cats }

// CategoryStatus returns whether a category's source is available (see
// Registry.SetCategoryStatus).
func (v *View) CategoryStatus(name string) CategoryStatus { return v.statuses[name] }

// CategorySource returns who wrote the text of a category's tools, ""
// for codecell itself (see Registry.SetCategorySource).
func (v *View) CategorySource(name string) string { return v.sources[name] }

// CategorySummary returns a category's description (see
// Registry.DescribeCategory).
func (v *View) CategorySummary(name string) string { return v.summaries[name] }

// Validate checks args against the named tool's input schema. It returns
// an *Error with code CodeUnknownTool or CodeInvalidArguments, or nil.
func (v *View) Validate(name string, args json.RawMessage) error {
	return v.ValidateContext(context.Background(), name, args)
}

// ValidateContext is Validate, holding what the arguments decode into
// with ctx's holder (WithArgsHolder) while they are checked.
func (v *View) ValidateContext(ctx context.Context, name string, args json.RawMessage) error {
	e, ok := v.entry(name)
	if !ok {
		return v.unknown(name)
	}
	return validateArgs(ctx, e, args)
}

// Call runs the named tool of the view as Registry.Call does. The view
// only decides which tool the name means; the handler acts for the caller
// in ctx, as always.
func (v *View) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	e, ok := v.entry(name)
	if !ok {
		return nil, v.unknown(name)
	}
	return call(ctx, e, args)
}

// Memo returns the value build made for key on this view, calling build
// once per view and key (concurrent callers wait for the first). Keep data
// derived from a view here rather than in a cache of your own: it lives as
// long as the view. key must be comparable and should be private to the
// package that uses it, like a context key (a pointer the package owns, or
// a value of an unexported type).
func (v *View) Memo(key any, build func(*View) any) any {
	c, ok := v.memo.Load(key)
	if !ok {
		c, _ = v.memo.LoadOrStore(key, &memoCell{})
	}
	cell := c.(*memoCell)
	cell.once.Do(func() { cell.v = build(v) })
	return cell.v
}

func (v *View) unknown(name string) *Error {
	s := v.suggest(name)
	if cat, _, ok := strings.Cut(name, "."); ok && len(s) == 0 {
		if st := v.statuses[cat]; st.Absent() {
			return absentError(name, cat, st)
		}
	}
	msg := "unknown tool " + quoteName(name)
	if len(s) > 0 {
		quoted := make([]string, len(s))
		for i, n := range s {
			quoted[i] = quoteName(n)
		}
		msg += "; did you mean " + strings.Join(quoted, " or ") + "?"
	} else if !ValidName(name) {
		msg += "; tool names are category.name, e.g. \"util.echo\""
	}
	return &Error{Code: CodeUnknownTool, Tool: name, Message: msg}
}

func quoteName(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// absentError is the error of a call to a category whose source is
// loading or unavailable: it names the source, says why and when to try
// again.
func absentError(name, cat string, st CategoryStatus) *Error {
	if st.Loading {
		ls := st.Load.State()
		return &Error{Code: CodeLoading, Tool: name, Message: fmt.Sprintf(
			"%s is still loading (%s): its tools are not there yet. Run the program again in about %s; read_tools \"/manifest.json\" says how far it got",
			cat, ls.Describe(st.Reason), roughDuration(ls.RetryAfter()))}
	}
	return &Error{Code: CodeUnavailable, Tool: name, Message: fmt.Sprintf(
		"%s is unavailable: %s. Its tools cannot be called until it is back; read_tools \"/%s/index.json\" shows its status",
		cat, st.Reason, cat)}
}

// MaxCachedViews bounds the views a registry keeps besides the global one:
// the least recently used is dropped when a new one would exceed it.
const MaxCachedViews = 256

// View returns the catalogue as c sees it. Views are built on first use
// and cached until what their callers see changes.
func (r *Registry) View(c Caller) *View {
	r.mu.RLock()
	key, ts, version := r.viewOf(c)
	if v := r.views.get(key, version); v != nil {
		r.mu.RUnlock()
		return v
	}
	v := r.buildView(key, ts, version)
	r.mu.RUnlock()
	return r.views.put(v)
}

// viewOf returns the key and version of c's view and c's toolset. r.mu
// is held.
func (r *Registry) viewOf(c Caller) (viewKey, Toolset, uint64) {
	var key viewKey
	var ts Toolset
	if r.toolsets != nil {
		ts = r.toolsets(c)
		key.toolset = ts.Key
	}
	version := r.globalAt
	if at, ok := r.scopeAt[c.Principal]; ok && len(r.scopes[c.Principal]) > 0 {
		key.scope = c.Principal
		version = max(version, at)
	}
	return key, ts, version
}

// buildView builds the view of key. r.mu is held.
func (r *Registry) buildView(key viewKey, ts Toolset, version uint64) *View {
	scoped := r.scopes[key.scope]
	v := &View{version: version, key: key, entries: make(map[string]*entry, len(r.tools)+len(scoped))}
	keep := func(e *entry) bool { return key.toolset == "" || (ts.Allow != nil && ts.Allow(e.tool)) }
	for name, e := range r.tools {
		if _, shadowed := scoped[name]; !shadowed && keep(e) {
			v.entries[name] = e
		}
	}
	for name, e := range scoped {
		if keep(e) {
			v.entries[name] = e
		}
	}
	v.tools = make([]*Tool, 0, len(v.entries))
	for _, e := range v.entries {
		v.tools = append(v.tools, e.tool)
	}
	sortTools(v.tools)
	v.summaries = map[string]string{}
	v.statuses = map[string]CategoryStatus{}
	v.sources = maps.Clone(r.sources)
	for _, t := range v.tools {
		c := t.Category()
		if _, ok := v.summaries[c]; !ok {
			v.summaries[c] = r.categories[c]
			v.statuses[c] = r.statuses[c]
			v.cats = append(v.cats, c)
		}
		for _, a := range t.Aliases {
			qa := c + "." + a
			if _, taken := v.aliases[qa]; !taken {
				if v.aliases == nil {
					v.aliases = map[string]*entry{}
				}
				v.aliases[qa] = v.entries[t.Name]
			}
		}
	}
	if key.toolset == "" {
		for c, st := range r.statuses {
			if _, ok := v.summaries[c]; !ok && st.Absent() {
				v.summaries[c] = r.categories[c]
				v.statuses[c] = st
				v.cats = append(v.cats, c)
			}
		}
		sort.Strings(v.cats)
	}
	return v
}

// viewCache holds the current view of each key: the global one apart, the
// others bounded.
type viewCache struct {
	global atomic.Pointer[View]
	mu     sync.Mutex
	m      map[viewKey]*View
	max    int
	clock  atomic.Uint64
}

// get returns the cached view of key at version, or nil.
func (vc *viewCache) get(key viewKey, version uint64) *View {
	var v *View
	if key == (viewKey{}) {
		v = vc.global.Load()
	} else {
		vc.mu.Lock()
		v = vc.m[key]
		vc.mu.Unlock()
	}
	if v == nil || v.version != version {
		return nil
	}
	v.used.Store(vc.clock.Add(1))
	return v
}

// put caches v unless a view of its key at its version or later is
// cached already, and returns the one cached. A key's versions only grow.
func (vc *viewCache) put(v *View) *View {
	v.used.Store(vc.clock.Add(1))
	if v.key == (viewKey{}) {
		for {
			old := vc.global.Load()
			if old != nil && old.version >= v.version {
				return old
			}
			if vc.global.CompareAndSwap(old, v) {
				return v
			}
		}
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if old := vc.m[v.key]; old != nil && old.version >= v.version {
		return old
	}
	if _, ok := vc.m[v.key]; !ok && len(vc.m) >= vc.max {
		var lru viewKey
		oldest := uint64(1<<64 - 1)
		for k, cv := range vc.m {
			if u := cv.used.Load(); u < oldest {
				lru, oldest = k, u
			}
		}
		delete(vc.m, lru)
	}
	vc.m[v.key] = v
	return v
}

// cached returns the number of views cached besides the global one.
func (vc *viewCache) cached() int {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	return len(vc.m)
}

// suggest returns the tools of the view an agent most likely meant by
// name, best first, or nil when none is close enough. It knows the common
// slips — case, a direct-mode name (github__search_issues), a dash for an
// underscore, a short name without its category or with a category that
// does not exist — and otherwise allows a few edits within the category
// (or, when it does not exist, in the category's name). It never leaves a
// category that exists, so a misspelled github tool is never answered
// with an analytics one, nor jira.create_issue with github.create_issue,
// and it breaks ties by name, so the answer does not change from run to
// run.
func (v *View) suggest(name string) []string {
	norm := strings.ToLower(strings.TrimSpace(name))
	norm = strings.ReplaceAll(norm, "-", "_")
	if !strings.Contains(norm, ".") {
		norm = strings.Replace(norm, "__", ".", 1)
	}
	if _, ok := v.entries[norm]; ok && norm != name {
		return []string{norm}
	}
	cat, short, qualified := strings.Cut(norm, ".")
	if !qualified {
		// A short name alone: the tools of that name, in any category.
		return v.withShortName(cat)
	}
	// A category that exists was chosen on purpose: look only in it.
	if _, ok := v.summaries[cat]; ok {
		return v.inCategory(cat, short)
	}
	// A misspelled category, then the right tool in another category.
	if c := closest(cat, v.cats); c != "" {
		if s := v.inCategory(c, short); s != nil {
			return s
		}
	}
	return v.withShortName(short)
}

// inCategory returns the tool of category closest to short, if close
// enough.
func (v *View) inCategory(category, short string) []string {
	var shorts []string
	for _, t := range v.ListCategory(category) {
		shorts = append(shorts, t.ShortName())
	}
	if s := closest(short, shorts); s != "" {
		return []string{category + "." + s}
	}
	return nil
}

// withShortName returns up to three tools named short, sorted.
func (v *View) withShortName(short string) []string {
	var out []string
	for _, t := range v.tools {
		if t.ShortName() == short {
			out = append(out, t.Name)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// closest returns the candidate nearest to s by edit distance, within
// maxEdits of it; ties go to the first in candidates, which callers keep
// sorted.
func closest(s string, candidates []string) string {
	limit := maxEdits(len(s)) + 1
	best, bestD := "", limit
	for _, c := range candidates {
		if d := EditDistance(s, c, limit); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// maxEdits is how many edits a name of n bytes may be away from the one
// it was meant to be: one for short names, then one per four bytes, at
// most three (delete_repository is four edits from create_repository).
func maxEdits(n int) int { return min(max(n/4, 1), 3) }
