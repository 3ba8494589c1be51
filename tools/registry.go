package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registry is the catalogue: a concurrency-safe set of tools keyed by their
// qualified names, with one-line descriptions of categories, a version that
// grows with every change, and subscribers told of each change.
//
// The *Tool values it hands out are shared and must not be modified.
type Registry struct {
	mu         sync.RWMutex
	tools      map[string]*entry
	categories map[string]string // name → one-line description
	version    uint64
	subs       map[int]func(Change)
	nextSub    int
}

type entry struct {
	tool   *Tool
	schema *Schema
}

// Change describes one change of the catalogue.
type Change struct {
	// Version is the registry's version after the change.
	Version uint64
	// Added and Removed hold qualified names. A replaced tool is in both.
	Added, Removed []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		tools:      map[string]*entry{},
		categories: map[string]string{},
		subs:       map[int]func(Change){},
	}
}

// emptyObjectSchema is the input schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)

// Register adds tools, replacing any registered under the same names. It
// checks every tool and compiles its input schema first, and adds none if
// one is invalid.
func (r *Registry) Register(ts ...Tool) error {
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
		s, err := CompileSchema(t.InputSchema)
		if err != nil {
			return fmt.Errorf("register %s: input schema: %w", t.Name, err)
		}
		if len(t.OutputSchema) > 0 {
			if _, err := CompileSchema(t.OutputSchema); err != nil {
				return fmt.Errorf("register %s: output schema: %w", t.Name, err)
			}
		}
		entries = append(entries, &entry{tool: &t, schema: s})
	}
	if len(entries) == 0 {
		return nil
	}

	r.mu.Lock()
	ch := Change{}
	for _, e := range entries {
		if _, ok := r.tools[e.tool.Name]; ok {
			ch.Removed = append(ch.Removed, e.tool.Name)
		}
		r.tools[e.tool.Name] = e
		ch.Added = append(ch.Added, e.tool.Name)
	}
	r.version++
	ch.Version = r.version
	subs := r.subscribers()
	r.mu.Unlock()

	notify(subs, ch)
	return nil
}

// Unregister removes the named tools and reports how many were present.
func (r *Registry) Unregister(names ...string) int {
	r.mu.Lock()
	ch := Change{}
	for _, n := range names {
		if _, ok := r.tools[n]; ok {
			delete(r.tools, n)
			ch.Removed = append(ch.Removed, n)
		}
	}
	if len(ch.Removed) == 0 {
		r.mu.Unlock()
		return 0
	}
	r.version++
	ch.Version = r.version
	subs := r.subscribers()
	r.mu.Unlock()

	notify(subs, ch)
	return len(ch.Removed)
}

// DescribeCategory sets the one-line description of a category. Categories
// exist as long as they hold tools; a description may be set before.
func (r *Registry) DescribeCategory(name, summary string) error {
	if !ValidCategory(name) {
		return fmt.Errorf("category name %q: want a lower-case identifier ([a-z][a-z0-9_]*)", name)
	}
	r.mu.Lock()
	r.categories[name] = summary
	r.version++
	ch := Change{Version: r.version}
	subs := r.subscribers()
	r.mu.Unlock()
	notify(subs, ch)
	return nil
}

// CategorySummary returns the description set by DescribeCategory.
func (r *Registry) CategorySummary(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.categories[name]
}

// Get returns the named tool.
func (r *Registry) Get(name string) (*Tool, bool) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// List returns every tool, sorted by name.
func (r *Registry) List() []*Tool {
	r.mu.RLock()
	out := make([]*Tool, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e.tool)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ListCategory returns the tools of one category, sorted by name.
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
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Categories returns the names of the categories that hold tools, sorted.
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

// Version returns a number that changes whenever the catalogue does.
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

// Validate checks args against the named tool's input schema. It returns
// an *Error with code CodeUnknownTool or CodeInvalidArguments, or nil.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return r.unknown(name)
	}
	return validateArgs(e, args)
}

func validateArgs(e *entry, args json.RawMessage) error {
	if ps := e.schema.Validate(args); len(ps) > 0 {
		return &Error{
			Code:     CodeInvalidArguments,
			Tool:     e.tool.Name,
			Message:  "invalid arguments: " + DescribeProblems(ps),
			Problems: ps,
		}
	}
	return nil
}

// Call validates args against the tool's input schema and runs its handler.
// Empty args mean {}. Every failure is an *Error: an unknown tool, invalid
// arguments (naming each offending field), a cancelled context, a handler's
// error or a handler's panic, which Call recovers.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, r.unknown(name)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := validateArgs(e, args); err != nil {
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
	if !json.Valid(out) {
		return nil, &Error{Code: CodeToolFailed, Tool: name, Message: "tool returned a result that is not valid JSON; this is a bug in the tool"}
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

func (r *Registry) unknown(name string) *Error {
	msg := fmt.Sprintf("unknown tool %q", name)
	if s := r.suggest(name); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else if !ValidName(name) {
		msg += "; tool names are category.name, e.g. \"util.echo\""
	}
	return &Error{Code: CodeUnknownTool, Tool: name, Message: msg}
}

// suggest returns the registered name closest to name, if close enough.
func (r *Registry) suggest(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	best, bestD := "", len(name)/3+2
	for n := range r.tools {
		if d := EditDistance(name, n, bestD); d < bestD || (d == bestD && best != "" && n < best) {
			best, bestD = n, d
		}
	}
	if bestD > len(name)/3+1 {
		return ""
	}
	return best
}

// Caller identifies who a call is made for: the principal (the
// authenticated caller, or the local user over stdio) and the MCP session.
type Caller struct {
	Principal string
	Session   string
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
