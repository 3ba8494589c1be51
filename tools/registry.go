package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registry is the catalogue: a concurrency-safe set of tools keyed by their
// qualified names, with one-line descriptions of categories, a version that
// grows with every change, and subscribers told of each change.
//
// Tools are global (every caller sees them) or belong to a scope, the
// principal (Caller.Principal) they were registered for: a scope's tools
// are seen and called only by that principal, and one of them shadows a
// global tool of the same name for it. A toolset function (SetToolsets)
// may further hide tools from a caller. What one caller may see is its
// View; Call resolves names through the caller in its context, so a tool
// outside the caller's view does not exist for it.
//
// The *Tool values it hands out are shared and must not be modified.
type Registry struct {
	mu         sync.RWMutex
	tools      map[string]*entry            // global tools
	scopes     map[string]map[string]*entry // principal → its own tools
	categories map[string]string            // name → one-line description
	statuses   map[string]CategoryStatus    // name → availability, when set
	sources    map[string]string            // name → who wrote its text, when not codecell
	version    uint64                       // grows with every change
	globalAt   uint64                       // version of the last change every caller sees
	scopeAt    map[string]uint64            // version of the last change of each scope
	toolsets   func(Caller) Toolset
	subs       map[int]func(Change)
	nextSub    int
	loads      map[*Load]struct{} // loads in progress (BeginLoad)
	loadsIdle  chan struct{}      // closed when the last load ends; nil when none is in progress
	compiled   schemaCache
	snapDir    string        // SetSnapshots
	snapVer    func() string // SetSnapshots

	views viewCache
}

type entry struct {
	tool  *Tool
	input *lazySchema
}

// Change describes one change of the catalogue.
type Change struct {
	// Version is the registry's version after the change.
	Version uint64
	// Scope is the principal whose tools changed, or "" when the change
	// concerns every caller (global tools, category descriptions,
	// toolsets).
	Scope string
	// Added and Removed hold qualified names. A replaced tool is in both.
	Added, Removed []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		tools:      map[string]*entry{},
		scopes:     map[string]map[string]*entry{},
		categories: map[string]string{},
		statuses:   map[string]CategoryStatus{},
		sources:    map[string]string{},
		loads:      map[*Load]struct{}{},
		scopeAt:    map[string]uint64{},
		subs:       map[int]func(Change){},
		views:      viewCache{max: MaxCachedViews, m: map[viewKey]*View{}},
	}
}

// emptyObjectSchema is the input schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)

// Register adds global tools, replacing any registered under the same
// names. It checks every tool first, and adds none if one is invalid. A
// tool's input schema is compiled when the tool is first called or
// validated, once per distinct schema; a schema that does not compile,
// or is beyond the bounds (MaxSchemaDepth, MaxSchemas), makes that tool
// unavailable (CodeToolUnavailable) with the reason, not the others.
func (r *Registry) Register(ts ...Tool) error { return r.RegisterScoped("", ts...) }

// RegisterScoped adds tools to scope, the principal they belong to,
// replacing that scope's tools of the same names; "" is the global scope
// (Register). Only callers whose Principal is scope see and call them, and
// for those callers they shadow global tools of the same names. It checks
// the tools as Register does.
func (r *Registry) RegisterScoped(scope string, ts ...Tool) error {
	entries := make([]*entry, 0, len(ts))
	seen := map[string]bool{}
	for i := range ts {
		t := ts[i]
		if err := t.check(); err != nil {
			return fmt.Errorf("register: %w", err)
		}
		if seen[t.Name] {
			return fmt.Errorf("register: tool %s given twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.InputSchema) == 0 {
			t.InputSchema = emptyObjectSchema
		}
		entries = append(entries, &entry{tool: &t, input: r.inputSchema(&t)})
	}
	if len(entries) == 0 {
		return nil
	}

	r.mu.Lock()
	m := r.tools
	if scope != "" {
		m = r.scopes[scope]
		if m == nil {
			m = map[string]*entry{}
			r.scopes[scope] = m
		}
	}
	ch := Change{Scope: scope}
	for _, e := range entries {
		if _, ok := m[e.tool.Name]; ok {
			ch.Removed = append(ch.Removed, e.tool.Name)
		}
		m[e.tool.Name] = e
		ch.Added = append(ch.Added, e.tool.Name)
	}
	subs := r.changed(&ch)
	r.mu.Unlock()

	notify(subs, ch)
	return nil
}

// Unregister removes the named global tools and reports how many were
// present.
func (r *Registry) Unregister(names ...string) int { return r.UnregisterScoped("", names...) }

// UnregisterScoped removes the named tools of scope ("" is the global
// scope) and reports how many were present.
func (r *Registry) UnregisterScoped(scope string, names ...string) int {
	r.mu.Lock()
	m := r.tools
	if scope != "" {
		m = r.scopes[scope]
	}
	ch := Change{Scope: scope}
	for _, n := range names {
		if _, ok := m[n]; ok {
			delete(m, n)
			ch.Removed = append(ch.Removed, n)
		}
	}
	if len(ch.Removed) == 0 {
		r.mu.Unlock()
		return 0
	}
	subs := r.changed(&ch)
	if scope != "" && len(m) == 0 {
		// The principal's callers share the global view again.
		delete(r.scopes, scope)
		delete(r.scopeAt, scope)
	}
	r.mu.Unlock()

	notify(subs, ch)
	return len(ch.Removed)
}

// changed records a change of ch.Scope: it bumps the version, sets
// ch.Version and returns the subscribers to tell. r.mu is held.
func (r *Registry) changed(ch *Change) []func(Change) {
	r.version++
	ch.Version = r.version
	if ch.Scope == "" {
		r.globalAt = r.version
	} else {
		r.scopeAt[ch.Scope] = r.version
	}
	return r.subscribers()
}

// DescribeCategory sets the one-line description of a category. Categories
// exist as long as they hold tools; a description may be set before.
func (r *Registry) DescribeCategory(name, summary string) error {
	if !ValidCategory(name) {
		return fmt.Errorf("category name %q: want a lower-case identifier ([a-z][a-z0-9_]*)", name)
	}
	r.mu.Lock()
	r.categories[name] = summary
	ch := Change{}
	subs := r.changed(&ch)
	r.mu.Unlock()
	notify(subs, ch)
	return nil
}

// CategoryStatus is whether the source of a category's tools can be
// reached. The zero value is available.
type CategoryStatus struct {
	// Unavailable is set while the source cannot be reached: its tools,
	// if it has any, fail when called.
	Unavailable bool `json:"unavailable,omitempty"`
	// Loading is set while the source loads its tools (BeginLoad): they
	// are not there yet, or not all of them.
	Loading bool `json:"loading,omitempty"`
	// Reason says why, for the manifest and the category's index: what
	// failed and what is being done about it, or, while loading, what
	// the source does first.
	Reason string `json:"reason,omitempty"`
	// Load is the load in progress while Loading, whose State is how far
	// it got now; nil otherwise.
	Load *Load `json:"-"`
}

// Absent reports whether the category's source is loading or unavailable,
// so that its tools are not there, or not all of them.
func (st CategoryStatus) Absent() bool { return st.Unavailable || st.Loading }

// SetCategoryStatus records whether a category's source is available. An
// unavailable category is listed even when it holds no tools, so that an
// agent sees a source that failed rather than nothing; the zero status
// clears it. Setting a status equal to the current one changes nothing.
// A source that loads for a while says so with BeginLoad instead.
func (r *Registry) SetCategoryStatus(name string, st CategoryStatus) error {
	if !ValidCategory(name) {
		return fmt.Errorf("category name %q: want a lower-case identifier ([a-z][a-z0-9_]*)", name)
	}
	r.mu.Lock()
	if r.statuses[name] == st {
		r.mu.Unlock()
		return nil
	}
	if st == (CategoryStatus{}) {
		delete(r.statuses, name)
	} else {
		r.statuses[name] = st
	}
	ch := Change{}
	subs := r.changed(&ch)
	r.mu.Unlock()
	notify(subs, ch)
	return nil
}

// SetCategorySource records who wrote the text of a category's tools when
// it is not codecell — a source's own words, such as `the MCP server
// "memory"` or `the OpenAPI description "github"` — so that everything
// the model reads of it (the category's description, the tools'
// summaries, declarations and pages, search hits) is marked as that
// source's, never as codecell's. "" clears it.
func (r *Registry) SetCategorySource(name, source string) error {
	if !ValidCategory(name) {
		return fmt.Errorf("category name %q: want a lower-case identifier ([a-z][a-z0-9_]*)", name)
	}
	if strings.ContainsAny(source, "\r\n") {
		return fmt.Errorf("category %s: source %q: want one line", name, source)
	}
	r.mu.Lock()
	if r.sources[name] == source {
		r.mu.Unlock()
		return nil
	}
	if source == "" {
		delete(r.sources, name)
	} else {
		r.sources[name] = source
	}
	ch := Change{}
	subs := r.changed(&ch)
	r.mu.Unlock()
	notify(subs, ch)
	return nil
}

// CategoryStatusOf returns what SetCategoryStatus recorded.
func (r *Registry) CategoryStatusOf(name string) CategoryStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.statuses[name]
}

// CategorySummary returns the description set by DescribeCategory.
func (r *Registry) CategorySummary(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.categories[name]
}

// Toolset is the set of tools one caller may see and call. Tools outside
// it do not exist for the caller: not in its view, not in search, not
// callable, and not suggested when it misspells a name.
type Toolset struct {
	// Key names the set: callers whose toolsets have the same key must
	// see the same tools, so that they can share one view. "" is the set
	// of all tools, and Allow is then not consulted.
	Key string
	// Allow reports whether t is in the set.
	Allow func(t *Tool) bool
}

// SetToolsets sets the function that gives each caller its toolset; nil,
// the default, gives every caller every tool. fn is called often (for
// every view lookup and call) with the registry's read lock held: it must
// be fast and must not call the registry. Setting it is a change that
// concerns every caller.
func (r *Registry) SetToolsets(fn func(Caller) Toolset) {
	r.mu.Lock()
	r.toolsets = fn
	ch := Change{}
	subs := r.changed(&ch)
	r.mu.Unlock()
	notify(subs, ch)
}

// Get returns the named global tool. It does not see scoped tools and
// ignores toolsets; code that acts for a caller uses the caller's View.
func (r *Registry) Get(name string) (*Tool, bool) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// MatchName reports whether glob matches a name the global tool called
// name answers to (Tool.Matches); a name r does not hold is matched as it
// is. It is what the data-flow rules match tool names with.
func (r *Registry) MatchName(glob, name string) bool {
	if t, ok := r.Get(name); ok {
		return t.Matches(glob)
	}
	ok, _ := path.Match(glob, name)
	return ok
}

// List returns every global tool, sorted by name. It does not list scoped
// tools and ignores toolsets; see View and ListScope.
func (r *Registry) List() []*Tool {
	r.mu.RLock()
	out := make([]*Tool, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e.tool)
	}
	r.mu.RUnlock()
	sortTools(out)
	return out
}

// All returns every tool registered, the global ones and those of every
// scope, in no order, and the registry's version (Version) they are of:
// what an index of the whole catalogue holds, within which each caller
// then sees its View.
func (r *Registry) All() (uint64, []*Tool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := len(r.tools)
	for _, m := range r.scopes {
		n += len(m)
	}
	out := make([]*Tool, 0, n)
	for _, e := range r.tools {
		out = append(out, e.tool)
	}
	for _, m := range r.scopes {
		for _, e := range m {
			out = append(out, e.tool)
		}
	}
	return r.version, out
}

// ListScope returns the tools registered for scope ("" for the global
// ones), sorted by name.
func (r *Registry) ListScope(scope string) []*Tool {
	if scope == "" {
		return r.List()
	}
	r.mu.RLock()
	m := r.scopes[scope]
	out := make([]*Tool, 0, len(m))
	for _, e := range m {
		out = append(out, e.tool)
	}
	r.mu.RUnlock()
	sortTools(out)
	return out
}

// Scopes returns the principals that have tools of their own, sorted.
func (r *Registry) Scopes() []string {
	r.mu.RLock()
	out := make([]string, 0, len(r.scopes))
	for s := range r.scopes {
		out = append(out, s)
	}
	r.mu.RUnlock()
	slices.Sort(out)
	return out
}

// ListCategory returns the global tools of one category, sorted by name.
func (r *Registry) ListCategory(category string) []*Tool {
	prefix := category + "."
	r.mu.RLock()
	var out []*Tool
	for name, e := range r.tools {
		if strings.HasPrefix(name, prefix) {
			out = append(out, e.tool)
		}
	}
	r.mu.RUnlock()
	sortTools(out)
	return out
}

// Categories returns the names of the categories that hold global tools,
// sorted.
func (r *Registry) Categories() []string {
	r.mu.RLock()
	set := map[string]bool{}
	for _, e := range r.tools {
		set[e.tool.Category()] = true
	}
	r.mu.RUnlock()
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func sortTools(ts []*Tool) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
}

// Version returns a number that changes whenever the catalogue does, in
// any scope. A caller's View has its own version, which changes only when
// what that caller sees does.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Subscribe calls fn after every change, on the goroutine that made it, in
// the order of the changes that goroutine made. fn must return quickly and
// must not change the registry. The returned function ends the subscription.
func (r *Registry) Subscribe(fn func(Change)) (cancel func()) {
	r.mu.Lock()
	id := r.nextSub
	r.nextSub++
	r.subs[id] = fn
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
	}
}

func (r *Registry) subscribers() []func(Change) {
	ids := make([]int, 0, len(r.subs))
	for id := range r.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]func(Change), len(ids))
	for i, id := range ids {
		out[i] = r.subs[id]
	}
	return out
}

func notify(subs []func(Change), ch Change) {
	for _, fn := range subs {
		fn(ch)
	}
}

// SetSnapshots names the directory where what is made of the catalogue
// (the terms search_tools' index takes from each tool) is kept between
// starts, and the build of codecell that makes it: what another build
// made is never read. version is called when first needed, and must
// change whenever the code does. An empty dir keeps nothing.
func (r *Registry) SetSnapshots(dir string, version func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapDir, r.snapVer = dir, version
}

// Snapshots returns what SetSnapshots set: the directory, and the
// build's version; "" and "" when nothing is kept.
func (r *Registry) Snapshots() (dir, version string) {
	r.mu.RLock()
	dir, ver := r.snapDir, r.snapVer
	r.mu.RUnlock()
	if dir == "" || ver == nil {
		return "", ""
	}
	if version = ver(); version == "" {
		return "", ""
	}
	return dir, version
}

// Validate checks args against the named global tool's input schema. It
// returns an *Error with code CodeUnknownTool or CodeInvalidArguments, or
// nil. View.Validate does the same for a caller.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return r.View(Caller{}).Validate(name, args)
	}
	return validateArgs(context.Background(), e, args)
}

// inputSchema returns t's input schema, to compile when first needed:
// with its shared definitions, or by itself through the registry's
// cache.
func (r *Registry) inputSchema(t *Tool) *lazySchema {
	doc, defs := t.InputSchema, t.InputDefs
	if defs != nil {
		return &lazySchema{compile: func() (*Schema, error) { return defs.compile(doc) }}
	}
	return &lazySchema{compile: func() (*Schema, error) { return r.compiled.compile(doc) }}
}

// validateArgs checks args against e's input schema. Arguments the
// schema must decode to check are held first, with the holder in ctx
// (WithArgsHolder), if any: 30 calls at once of 2 MB arrays of small
// values decoded into 300–400 MiB outside every bound (attack18 K10).
func validateArgs(ctx context.Context, e *entry, args json.RawMessage) error {
	s, err := e.input.get()
	if err != nil {
		return &Error{
			Code: CodeToolUnavailable,
			Tool: e.tool.Name,
			Message: "this tool cannot be called: its input schema cannot be used to check arguments (" + err.Error() +
				"); codecell calls no tool whose arguments it cannot check. Its source must fix or simplify the schema, or the configuration leave the tool out",
			Err: err,
		}
	}
	var hold func(int64) error
	if h, ok := ctx.Value(argsHolderKey{}).(DecodedHolder); ok {
		hold = func(n int64) error { return h(ctx, n) }
	}
	ps, err := s.validate(args, hold)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		return &Error{
			Code:     CodeInvalidArguments,
			Tool:     e.tool.Name,
			Message:  "invalid arguments: " + DescribeProblems(ps),
			Problems: ps,
		}
	}
	return nil
}

// resolve finds the tool name names for c: c's own tool, else the global
// one, provided c's toolset holds it.
func (r *Registry) resolve(c Caller, name string) (*entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.scopes[c.Principal][name]
	if !ok {
		e, ok = r.tools[name]
	}
	if ok && r.toolsets != nil {
		if ts := r.toolsets(c); ts.Key != "" && (ts.Allow == nil || !ts.Allow(e.tool)) {
			return nil, false
		}
	}
	return e, ok
}

// Call validates args against the tool's input schema and runs its handler.
// The name is resolved for the caller in ctx (CallerFrom): its own tools
// first, then the global ones, within its toolset; any other name is an
// unknown tool, whether or not another caller has it. Empty args mean {}.
// Every failure is an *Error: an unknown tool, invalid arguments (naming
// each offending field), a cancelled context, a handler's error or a
// handler's panic, which Call recovers.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	c := CallerFrom(ctx)
	e, ok := r.resolve(c, name)
	if !ok {
		// An alias, or an unknown tool: the caller's view knows which.
		return r.View(c).Call(ctx, name, args)
	}
	return call(ctx, e, args)
}

func call(ctx context.Context, e *entry, args json.RawMessage) (json.RawMessage, error) {
	name := e.tool.Name
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := validateArgs(ctx, e, args); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: CodeCanceled, Tool: name, Message: "call cancelled before it started", Err: err}
	}
	out, err := run(ctx, e.tool, args)
	if err != nil {
		return nil, asError(ctx, name, err)
	}
	if len(out) == 0 {
		return json.RawMessage("null"), nil
	}
	values, ok := validJSON(out)
	if !ok {
		return nil, &Error{Code: CodeToolFailed, Tool: name, Message: "tool returned a result that is not valid JSON; this is a bug in the tool"}
	}
	// What the result decodes into next (the filter, the sandbox) is
	// held in the results in flight until the program has it, for every
	// tool, built-ins included (issue 19, attack9 D7), with the copies
	// of its bytes the server makes (ResultCopies).
	if err := HoldDecoded(ctx, ResultCopies*int64(len(out)), values); err != nil {
		return nil, err
	}
	return out, nil
}

// run calls the handler and turns a panic into an error.
func run(ctx context.Context, t *Tool, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			out = nil
			err = &Error{
				Code:    CodeToolPanic,
				Tool:    t.Name,
				Message: "tool crashed (panic); this is a bug in the tool, not in your arguments",
				Err:     fmt.Errorf("panic: %v", p),
			}
		}
	}()
	return t.Handler(ctx, args)
}

func asError(ctx context.Context, name string, err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		cp := *te
		if cp.Tool == "" {
			cp.Tool = name
		}
		if cp.Code == "" {
			cp.Code = CodeToolFailed
		}
		return &cp
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return &Error{Code: CodeCanceled, Tool: name, Message: "call cancelled: " + err.Error(), Err: err}
	}
	return &Error{Code: CodeToolFailed, Tool: name, Message: err.Error(), Err: err}
}

// Caller identifies who a call is made for: the principal (the
// authenticated caller, or the local user over stdio) and the MCP session.
// The principal names the scope whose tools the caller sees beside the
// global ones.
type Caller struct {
	Principal string
	Session   string
	// Scopes are the OAuth scopes the caller's access token grants,
	// sorted and space-separated as in a token's "scope" claim; "" when
	// it was not authenticated by OAuth.
	Scopes string
}

type callerKey struct{}

// WithCaller returns a context that carries c to tool handlers.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller that WithCaller stored, or the zero Caller.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}
