package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/codecell/codecell/tools"
)

// Access says which catalogue tools each caller may reach. A tool a
// caller may not reach does not exist for it: not in the tree at any
// level, not in search, completions or direct mode's tool list, and not
// callable from a program, where its name is an unknown tool like any
// name that never existed.
//
// Every rule that applies to a caller restricts what it sees, and the
// caller gets the tools that every one of them allows: the server-wide
// ReadOnly, the rule of its principal (or the "*" rule when its principal
// has none), and the rule of each OAuth scope its token grants. No rule
// grants more than another allows. A caller to whom no rule applies sees
// every tool.
//
// The zero Access restricts nothing.
type Access struct {
	// ReadOnly keeps, for every caller, only the tools annotated
	// read-only (and skills; see AccessRule.ReadOnly).
	ReadOnly bool
	// Principals holds a rule per principal. The rule named "*" applies
	// to principals without a rule of their own.
	Principals map[string]AccessRule
	// Scopes holds a rule per OAuth scope, applied to callers whose
	// access token grants the scope.
	Scopes map[string]AccessRule
}

// AccessRule is what one rule lets a caller reach.
type AccessRule struct {
	// Allow lists tool name globs; when it is not empty, only tools a glob
	// matches are kept. A glob is matched as path.Match does against a
	// tool's qualified name (category.tool) and each of its aliases
	// (category.alias): "*" matches any run of characters, dots included,
	// "?" one character, [a-z] a class. "memory.*", "*.get_*", "*".
	Allow []string
	// Deny lists tool name globs whose tools are removed, whatever Allow
	// says: deny wins.
	Deny []string
	// ReadOnly keeps only the tools known to be read-only (annotated so
	// by a source codecell trusts: see tools.Annotations.KnownReadOnly),
	// and skills: a
	// skill is a program that runs as its caller, each of its calls
	// resolved through the caller's own toolset, so it reaches nothing
	// the caller could not reach from its own program.
	ReadOnly bool
}

// CheckToolGlob reports why pattern is not a usable tool name glob, or
// returns nil.
func CheckToolGlob(pattern string) error {
	if strings.TrimSpace(pattern) == "" {
		return errors.New("empty glob; use \"*\" for every tool")
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("glob %q: %w", pattern, err)
	}
	if !strings.ContainsAny(pattern, ".*?[") {
		return fmt.Errorf("glob %q matches no tool: names are category.tool; for a whole category write %q", pattern, pattern+".*")
	}
	return nil
}

// check returns every bad glob of the rules, each naming its rule.
func (a Access) check() error {
	var errs []error
	for _, set := range []struct {
		kind  string
		rules map[string]AccessRule
	}{{"principal", a.Principals}, {"scope", a.Scopes}} {
		for _, name := range slices.Sorted(maps.Keys(set.rules)) {
			r := set.rules[name]
			for _, list := range []struct {
				field string
				globs []string
			}{{"allow", r.Allow}, {"deny", r.Deny}} {
				for i, g := range list.globs {
					if err := CheckToolGlob(g); err != nil {
						errs = append(errs, fmt.Errorf("access %s %q: %s[%d]: %w", set.kind, name, list.field, i, err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// toolRule is an AccessRule ready to match tools.
type toolRule struct {
	id          int
	allow, deny []string // sorted, without duplicates
	readOnly    bool
	desc        string // canonical: equal rules have equal descriptions
}

func newToolRule(id int, r AccessRule) *toolRule {
	tr := &toolRule{id: id, allow: sortedSet(r.Allow), deny: sortedSet(r.Deny), readOnly: r.ReadOnly}
	var parts []string
	if tr.readOnly {
		parts = append(parts, "read_only")
	}
	if len(tr.allow) > 0 {
		parts = append(parts, "allow "+strings.Join(tr.allow, ","))
	}
	if len(tr.deny) > 0 {
		parts = append(parts, "deny "+strings.Join(tr.deny, ","))
	}
	tr.desc = strings.Join(parts, "; ")
	return tr
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// restricts reports whether the rule hides anything.
func (r *toolRule) restricts() bool { return r.desc != "" }

// allows reports whether the rule lets a caller reach t.
func (r *toolRule) allows(t *tools.Tool) bool {
	if r.readOnly && !t.Annotations.KnownReadOnly() && t.Source == "" {
		return false
	}
	if matchesAny(r.deny, t) {
		return false
	}
	return len(r.allow) == 0 || matchesAny(r.allow, t)
}

// matchesAny reports whether a glob matches t's name or one of its
// aliases.
func matchesAny(globs []string, t *tools.Tool) bool {
	for _, g := range globs {
		if t.Matches(g) {
			return true
		}
	}
	return false
}

// accessPolicy gives each caller its toolset. It is built once from the
// configuration and never changes, so a caller's toolset depends only on
// which rules apply to it; the toolset of each combination of rules is
// made once.
type accessPolicy struct {
	server     *toolRule // the server-wide read_only, or nil
	principals map[string]*toolRule
	fallback   *toolRule // the "*" rule, or nil
	scopes     map[string]*toolRule

	mu  sync.RWMutex
	set map[string]callerToolset // rule ids, joined → the toolset
}

// callerToolset is a caller's toolset with its description for the
// audit log.
type callerToolset struct {
	tools.Toolset
	desc string // "" for every tool
}

// newAccessPolicy compiles a. It returns nil when no rule restricts
// anything: then every caller sees every tool.
func newAccessPolicy(a Access) (*accessPolicy, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	p := &accessPolicy{principals: map[string]*toolRule{}, scopes: map[string]*toolRule{}, set: map[string]callerToolset{}}
	id := 0
	add := func(r AccessRule) *toolRule {
		id++
		if tr := newToolRule(id, r); tr.restricts() {
			return tr
		}
		return nil
	}
	restricted := false
	if a.ReadOnly {
		p.server = add(AccessRule{ReadOnly: true})
		restricted = true
	}
	// Sorted, so that a rule's id does not change from run to run.
	for _, name := range slices.Sorted(maps.Keys(a.Principals)) {
		tr := add(a.Principals[name])
		if name == "*" {
			p.fallback = tr
		}
		// A principal's rule that restricts nothing still stands in for
		// the "*" rule: the principal sees everything.
		p.principals[name] = tr
		restricted = restricted || tr != nil
	}
	for _, name := range slices.Sorted(maps.Keys(a.Scopes)) {
		if tr := add(a.Scopes[name]); tr != nil {
			p.scopes[name] = tr
			restricted = true
		}
	}
	if !restricted {
		return nil, nil
	}
	return p, nil
}

// rules returns the rules that apply to c, nil ones left out.
func (p *accessPolicy) rules(c tools.Caller, buf []*toolRule) []*toolRule {
	out := buf[:0]
	if p.server != nil {
		out = append(out, p.server)
	}
	r, own := p.principals[c.Principal]
	if !own {
		r = p.fallback
	}
	if r != nil {
		out = append(out, r)
	}
	for scope := range strings.FieldsSeq(c.Scopes) {
		if r := p.scopes[scope]; r != nil && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// toolset returns c's toolset; it is what the registry asks
// (tools.Registry.SetToolsets). A nil policy gives every tool.
func (p *accessPolicy) toolset(c tools.Caller) tools.Toolset { return p.of(c).Toolset }

// of returns c's toolset with its description.
func (p *accessPolicy) of(c tools.Caller) callerToolset {
	if p == nil {
		return callerToolset{}
	}
	var buf [8]*toolRule
	rules := p.rules(c, buf[:])
	if len(rules) == 0 {
		return callerToolset{}
	}
	slices.SortFunc(rules, func(a, b *toolRule) int { return a.id - b.id })
	var kb [64]byte
	key := kb[:0]
	for _, r := range rules {
		key = strconv.AppendInt(key, int64(r.id), 10)
		key = append(key, ',')
	}
	p.mu.RLock()
	ts, ok := p.set[string(key)]
	p.mu.RUnlock()
	if ok {
		return ts
	}
	ts = combine(slices.Clone(rules))
	p.mu.Lock()
	p.set[string(key)] = ts
	p.mu.Unlock()
	return ts
}

// combine makes the toolset of the tools every rule allows. Its key is
// derived from the rules' descriptions, so callers under equal rules,
// whichever configured them, share one view.
func combine(rules []*toolRule) callerToolset {
	descs := make([]string, 0, len(rules))
	for _, r := range rules {
		descs = append(descs, r.desc)
	}
	slices.Sort(descs)
	desc := strings.Join(slices.Compact(descs), " & ")
	sum := sha256.Sum256([]byte(desc))
	return callerToolset{
		Toolset: tools.Toolset{
			Key: "ts-" + hex.EncodeToString(sum[:6]),
			Allow: func(t *tools.Tool) bool {
				for _, r := range rules {
					if !r.allows(t) {
						return false
					}
				}
				return true
			},
		},
		desc: desc,
	}
}
