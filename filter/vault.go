package filter

import (
	"bytes"
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Rule forbids an exfiltration flow: a value whose source tools include
// one matching From may not be passed to a tool matching To. Both are
// globs (path.Match syntax) over qualified tool names: "crm.*",
// "http.post", "*".
type Rule struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (r Rule) String() string { return r.From + " → " + r.To }

func (r Rule) validate() error {
	for _, p := range []string{r.From, r.To} {
		if p == "" {
			return fmt.Errorf("rule %s: empty pattern", r)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("rule %s: pattern %q: %w", r, p, err)
		}
	}
	return nil
}

// Errors that Vault.Resolve wraps.
var (
	// ErrUnknownToken is a token this vault did not issue or no longer
	// holds.
	ErrUnknownToken = errors.New("unknown token")
	// ErrRedacted is a redaction marker passed as if it were a value.
	ErrRedacted = errors.New("redacted value")
	// ErrExfiltration is a value that a Rule forbids passing to a tool.
	ErrExfiltration = errors.New("exfiltration rule violated")
)

// TokenError is a token in tool arguments that cannot be resolved. It
// names the token and the tool, never a value.
type TokenError struct {
	Token string
	Tool  string
	Err   error // ErrUnknownToken or ErrRedacted
}

func (e *TokenError) Error() string {
	if errors.Is(e.Err, ErrRedacted) {
		return fmt.Sprintf("argument for %s holds %s: the value was redacted and cannot be used; only tokens (⟦class:hex⟧) stand for values", e.Tool, e.Token)
	}
	return fmt.Sprintf("argument for %s holds %s: unknown token: this session did not issue it, or it expired (tokens live only as long as the session that issued them, and a session's oldest tokens expire when it holds too many); pass tokens exactly as this session's results show them", e.Tool, e.Token)
}

func (e *TokenError) Unwrap() error { return e.Err }

// RuleError is a token whose value a Rule forbids passing to a tool. It
// names the rule, the token, the source tool and the destination, never
// the value.
type RuleError struct {
	Rule   Rule
	Token  string
	Source string // the source tool that matched Rule.From
	Tool   string // the destination tool
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("rule %q → %q forbids passing %s (a value from %s) to %s",
		e.Rule.From, e.Rule.To, e.Token, sourceText(e.Source), e.Tool)
}

func (e *RuleError) Unwrap() error { return ErrExfiltration }

// VaultOptions configure a Vault.
type VaultOptions struct {
	// MaxEntries bounds the tokens held; the least recently used go first.
	// 0 means 65536.
	MaxEntries int
	// MaxBytes bounds the memory the vault holds, as Stats counts it:
	// values, tokens and bookkeeping. 0 means 64 MiB.
	MaxBytes int
	// Rules are the exfiltration rules checked by Resolve.
	Rules []Rule
	// Match is FlowOptions.Match, for the rules' patterns here.
	Match NameMatch
	// Store, when set, keeps the vault's entries beyond this process,
	// sealed, so that its tokens resolve on every instance that shares
	// the store (see TokenStore): Flush writes what was minted, and
	// Resolve reads a token it does not hold from the store.
	Store TokenStore
	// Session names the vault's MCP session in the Store ("" for the
	// principal's session-less state).
	Session string
	// TTL is how long a stored entry lives after it was last minted.
	// 0 means one hour.
	TTL time.Duration
}

// maxSources bounds the source tools remembered per value; past it, a
// value is of every source (AnySource).
const maxSources = 32

// Vault maps the tokens of one MCP session to their values, in memory
// (and, with VaultOptions.Store, sealed in a store that other instances
// share), and resolves tokens in tool arguments. A session belongs to one
// principal, and tokens are derived under that principal's key (see
// NewVault). It is safe for concurrent use. The zero value is not usable;
// call NewVault.
type Vault struct {
	key        Key // the principal's
	principal  string
	rules      []Rule
	match      NameMatch
	maxEntries int
	maxBytes   int

	macs sync.Pool // of hash.Hash: HMAC-SHA256 under key

	mu      sync.Mutex
	byToken map[string]*vaultEntry
	byValue map[valueKey]*vaultEntry
	lru     list.List // of *vaultEntry, most recent first
	bytes   int       // as Stats counts them
	evicted int

	shared *sharedVault // nil unless VaultOptions.Store is set
}

// VaultStats is what a vault holds, for the server to cap and evict
// sessions and to report metrics.
type VaultStats struct {
	// Entries is the number of tokens held.
	Entries int
	// Bytes estimates the memory they take: values, tokens, sources and
	// a fixed cost per entry for the maps and lists that index them
	// (calibrated by BenchmarkVaultMemory).
	Bytes int
	// Evicted counts the entries dropped to stay within the bounds.
	Evicted int
}

// entryOverhead is the memory an entry takes besides its strings: the
// entry, its list element, its slots in two maps and its sources slice
// (BenchmarkVaultMemory measures it).
const entryOverhead = 272

func (e *vaultEntry) cost() int {
	return entryOverhead + len(e.value) + len(e.token) + 16*cap(e.sources)
}

type valueKey struct {
	class Class
	value string
}

type vaultEntry struct {
	token   string
	class   Class
	value   string
	raw     bool // value is a JSON number literal, restored as a number
	sources []string
	elem    *list.Element
}

// NewVault returns an empty vault for a session of principal, which
// derives tokens under the principal's own key: HKDF-SHA256 of the
// installation key and the principal's name. The same value gets the same
// token in every session of one principal and unrelated tokens for
// another principal, so a token is no oracle across principals. The
// principal may not be empty.
func NewVault(key Key, principal string, opts VaultOptions) (*Vault, error) {
	if principal == "" {
		return nil, errors.New("new vault: no principal")
	}
	for _, r := range opts.Rules {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("new vault: %w", err)
		}
	}
	pk, err := key.forPrincipal(principal)
	if err != nil {
		return nil, fmt.Errorf("new vault: %w", err)
	}
	v := &Vault{
		key:        pk,
		principal:  principal,
		rules:      slices.Clone(opts.Rules),
		match:      opts.Match,
		maxEntries: opts.MaxEntries,
		maxBytes:   opts.MaxBytes,
		byToken:    map[string]*vaultEntry{},
		byValue:    map[valueKey]*vaultEntry{},
	}
	v.macs.New = func() any { return hmac.New(sha256.New, v.key.b[:]) }
	if v.maxEntries <= 0 {
		v.maxEntries = 1 << 16
	}
	if v.maxBytes <= 0 {
		v.maxBytes = 64 << 20
	}
	if opts.Store != nil {
		if v.shared, err = newSharedVault(pk, principal, opts); err != nil {
			return nil, fmt.Errorf("new vault: %w", err)
		}
	}
	return v, nil
}

// Principal returns the principal whose session the vault serves.
func (v *Vault) Principal() string { return v.principal }

// Len returns the number of tokens held.
func (v *Vault) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.byToken)
}

// Stats returns what the vault holds. It takes constant time.
func (v *Vault) Stats() VaultStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	return VaultStats{Entries: len(v.byToken), Bytes: v.bytes, Evicted: v.evicted}
}

// Tokenize returns the token for value of class c and remembers value and
// its sources (qualified names of the tools whose results contained it).
// The same value and class always get the same token under one key and
// principal.
func (v *Vault) Tokenize(c Class, value string, sources []string) string {
	return v.tokenize(c, value, false, sources)
}

func (v *Vault) tokenize(c Class, value string, raw bool, sources []string) string {
	v.mu.Lock()
	if e, ok := v.byValue[valueKey{c, value}]; ok {
		e.raw = e.raw && raw
		v.addSources(e, sources)
		v.lru.MoveToFront(e.elem)
		v.mu.Unlock()
		return e.token
	}
	v.mu.Unlock()
	mac := v.macs.Get().(hash.Hash)
	digest := tokenDigest(mac, c, value)
	v.macs.Put(mac)
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.byValue[valueKey{c, value}]; ok { // added meanwhile
		v.addSources(e, sources)
		return e.token
	}
	var token string
	for _, n := range tokenHexLens {
		token = formatToken(c, digest[:n])
		if _, taken := v.byToken[token]; !taken {
			break
		}
	}
	e := &vaultEntry{token: token, class: c, value: value, raw: raw, sources: addSources(nil, sources)}
	if _, taken := v.byToken[token]; taken || e.cost() > v.maxBytes {
		// A full-length digest collision, or a value too large to keep:
		// the token stands, but cannot be resolved.
		return token
	}
	// Clone: value may be a slice of a large document.
	e.value = strings.Clone(value)
	v.insertLocked(e)
	v.shared.markLocked(e)
	v.evictLocked()
	return token
}

// insertLocked indexes a new entry as the most recently used.
func (v *Vault) insertLocked(e *vaultEntry) {
	e.elem = v.lru.PushFront(e)
	v.byToken[e.token] = e
	v.byValue[valueKey{e.class, e.value}] = e
	v.bytes += e.cost()
}

// evictLocked drops the least recently used entries beyond the bounds. A
// vault with a Store can read them back when they are used again.
func (v *Vault) evictLocked() {
	for len(v.byToken) > v.maxEntries || v.bytes > v.maxBytes {
		old := v.lru.Back().Value.(*vaultEntry)
		v.lru.Remove(old.elem)
		delete(v.byToken, old.token)
		delete(v.byValue, valueKey{old.class, old.value})
		v.bytes -= old.cost()
		v.evicted++
	}
}

// addSources adds sources to e, keeping the byte count.
func (v *Vault) addSources(e *vaultEntry, add []string) {
	if len(add) == 0 {
		return
	}
	before, had := e.cost(), len(e.sources)
	wasAny := isAnySource(e.sources)
	e.sources = addSources(e.sources, add)
	v.bytes += e.cost() - before
	if len(e.sources) != had || isAnySource(e.sources) != wasAny {
		v.shared.markLocked(e) // the stored copy must learn its sources
	}
}

// addSources returns have with the sources of add it lacks. Past
// maxSources, or given AnySource, it is AnySource alone: the value is of
// every source, never of some of them with the others dropped (issue 19,
// attack21 P1: 40 made-up names that sort before "crm." were kept in
// place of crm.get_contact, and the token passed crm.* → http.*).
func addSources(have, add []string) []string {
	if isAnySource(have) {
		return have
	}
	for _, s := range add {
		switch {
		case s == AnySource:
			return []string{AnySource}
		case s == "" || slices.Contains(have, s):
		case len(have) == maxSources:
			return []string{AnySource}
		default:
			have = append(have, s)
		}
	}
	return have
}

// isAnySource reports whether sources are AnySource alone.
func isAnySource(sources []string) bool { return len(sources) == 1 && sources[0] == AnySource }

// Sources returns the source tools recorded for a token.
func (v *Vault) Sources(token string) ([]string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byToken[token]
	if !ok {
		return nil, false
	}
	return slices.Clone(e.sources), true
}

// Held returns the value and the sources of a token the vault holds
// now, as resolving it last left them (with the sources other instances
// stored, for a shared vault), without reading the store or checking the
// rules; false when it holds no such token.
func (v *Vault) Held(token string) (value string, sources []string, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byToken[token]
	if !ok {
		return "", nil, false
	}
	return e.value, slices.Clone(e.sources), true
}

// holds reports whether the vault holds token now: it minted it, and
// has not let it expire.
func (v *Vault) holds(token string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.byToken[token]
	return ok
}

// mayHoldToken reports whether JSON text can contain a token: the opening
// bracket, raw or escaped.
func mayHoldToken(b []byte) bool {
	return bytes.Contains(b, []byte(tokenOpen)) || bytes.Contains(b, []byte(`\u27e6`)) || bytes.Contains(b, []byte(`\u27E6`))
}

// Resolve returns args with every token replaced by its value, for a call
// of the tool destTool. Tokens are replaced wherever they are: a string
// that is exactly a token becomes the value (a number again if the value
// was a number), a token inside a longer string or in an object key is
// replaced by the value's text, JSON-escaped. Arguments without tokens are
// returned as they are; others are re-encoded compactly.
//
// An unknown token or a redaction marker fails with a *TokenError, a value
// that a rule forbids passing to destTool with a *RuleError; the error
// names the token, never the value. A string that merely resembles a token
// (wrong shape) is left alone.
func (v *Vault) Resolve(args json.RawMessage, destTool string) (json.RawMessage, error) {
	return v.ResolveContext(context.Background(), args, destTool)
}

// ResolveContext is Resolve for a vault with a Store, which reads the
// tokens it does not hold from the store under ctx.
func (v *Vault) ResolveContext(ctx context.Context, args json.RawMessage, destTool string) (json.RawMessage, error) {
	if !mayHoldToken(args) {
		return args, nil
	}
	root, err := parseJSON(args)
	if err != nil {
		return nil, fmt.Errorf("resolve tokens: %w", err)
	}
	changed := false
	if err := v.resolveNode(ctx, &root, destTool, &changed); err != nil {
		return nil, err
	}
	if !changed {
		return args, nil
	}
	return appendJSON(make([]byte, 0, len(args)+64), &root), nil
}

// ResolveString replaces the tokens in s, with the checks of Resolve.
func (v *Vault) ResolveString(s, destTool string) (string, error) {
	out, _, err := v.resolveText(context.Background(), s, destTool)
	return out, err
}

func (v *Vault) resolveNode(ctx context.Context, n *node, tool string, changed *bool) error {
	switch n.kind {
	case kindString:
		refs := findTokenRefs(n.str)
		if len(refs) == 0 {
			return nil
		}
		if len(refs) == 1 && refs[0].start == 0 && refs[0].end == len(n.str) {
			e, err := v.lookup(ctx, refs[0], n.str, tool)
			if err != nil {
				return err
			}
			*changed = true
			if e.raw {
				if lit, err := parseJSONString(e.value); err == nil && lit.kind == kindNumber {
					lit.key = n.key
					*n = lit
					return nil
				}
			}
			n.str = e.value
			return nil
		}
		s, _, err := v.resolveRefs(ctx, n.str, refs, tool)
		if err != nil {
			return err
		}
		n.str = s
		*changed = true
	case kindArray, kindObject:
		for i := range n.kids {
			if k := n.kids[i].key; strings.Contains(k, tokenOpen) {
				s, ok, err := v.resolveText(ctx, k, tool)
				if err != nil {
					return err
				}
				if ok {
					n.kids[i].key = s
					*changed = true
				}
			}
		}
		for i := range n.kids {
			if err := v.resolveNode(ctx, &n.kids[i], tool, changed); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *Vault) resolveText(ctx context.Context, s, tool string) (string, bool, error) {
	refs := findTokenRefs(s)
	if len(refs) == 0 {
		return s, false, nil
	}
	return v.resolveRefs(ctx, s, refs, tool)
}

func (v *Vault) resolveRefs(ctx context.Context, s string, refs []tokenRef, tool string) (string, bool, error) {
	var b strings.Builder
	last := 0
	for _, r := range refs {
		e, err := v.lookup(ctx, r, s, tool)
		if err != nil {
			return "", false, err
		}
		b.WriteString(s[last:r.start])
		b.WriteString(e.value)
		last = r.end
	}
	b.WriteString(s[last:])
	return b.String(), true, nil
}

// lookup finds the entry of a token and checks the rules. The entry it
// returns is a copy, safe to read without the lock.
func (v *Vault) lookup(ctx context.Context, r tokenRef, s, tool string) (vaultEntry, error) {
	token := s[r.start:r.end]
	if r.redacted() {
		return vaultEntry{}, &TokenError{Token: token, Tool: tool, Err: ErrRedacted}
	}
	v.mu.Lock()
	e, ok := v.byToken[token]
	var cp vaultEntry
	if ok {
		v.lru.MoveToFront(e.elem)
		cp = vaultEntry{token: e.token, class: e.class, value: e.value, raw: e.raw, sources: slices.Clone(e.sources)}
	}
	v.mu.Unlock()
	if ok && v.shared != nil {
		// Held here, but other instances may have learned sources of
		// the value since: the rules check them all (vaultstore.go).
		stored, err := v.storedSources(ctx, token)
		if err != nil {
			return vaultEntry{}, err
		}
		if len(stored) > 0 {
			cp.sources = addSources(cp.sources, stored)
			v.mu.Lock()
			if e, held := v.byToken[token]; held {
				v.learnSourcesLocked(e, stored)
			}
			v.mu.Unlock()
		}
	}
	if !ok && v.shared != nil {
		var err error
		if cp, ok, err = v.load(ctx, token); err != nil {
			return vaultEntry{}, err
		}
	}
	if !ok {
		return vaultEntry{}, &TokenError{Token: token, Tool: tool, Err: ErrUnknownToken}
	}
	for _, rule := range v.rules {
		if !v.match.name(rule.To, tool) {
			continue
		}
		for _, src := range cp.sources {
			if v.match.from(rule.From, src) {
				return vaultEntry{}, &RuleError{Rule: rule, Token: token, Source: src, Tool: tool}
			}
		}
	}
	return cp, nil
}
