package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Memoisation: a read-only tool whose name matches a MemoRule answers
// the same arguments from the same principal, within the rule's TTL, with
// the result it gave the first time, kept in the store's cache (kind
// memo) — shared by every instance on the store, and surviving restarts.
// A tool that is not annotated read-only is never memoised, whatever the
// rules say: the first call that a rule matches logs a warning instead.
//
// A memoised result keeps the provenance of the call's arguments (the
// gate puts it in the context, memory.WithProvenance): a tool that
// returns what it was given, such as an echo or a formatter, returns it
// from the cache too, in a run that does not know where it came from. On
// a hit, the run's data flow learns that the result's values came from
// those sources, as a live call's would have been known by them.

// MemoRule memoises the results of the tools whose qualified names match
// Pattern (path.Match syntax: "gh.get_*", "weather.*") for TTL.
type MemoRule struct {
	Pattern string
	TTL     time.Duration
}

// CacheConfig configures the cache tools (cache.get, cache.set,
// cache.delete) and memoisation. Zero fields take the defaults shown.
type CacheConfig struct {
	// DefaultTTL is the lifetime of a cache.set entry that names none:
	// 5 min. MaxTTL bounds any entry's and any MemoRule's: 24 h.
	DefaultTTL, MaxTTL time.Duration
	// MaxValueBytes bounds one cache.set value, as JSON: 1 MiB.
	MaxValueBytes int
	// MaxEntries bounds a principal's cache.set entries: 10000.
	MaxEntries int
	// MaxMemoBytes bounds a memoised result; a larger one is returned
	// but not kept: 4 MiB.
	MaxMemoBytes int
	// Memoize lists the rules; the most specific (longest) pattern that
	// matches a tool wins.
	Memoize []MemoRule
}

func (c CacheConfig) withDefaults() CacheConfig {
	if c.DefaultTTL <= 0 {
		c.DefaultTTL = 5 * time.Minute
	}
	if c.MaxTTL <= 0 {
		c.MaxTTL = 24 * time.Hour
	}
	if c.MaxValueBytes <= 0 {
		c.MaxValueBytes = 1 << 20
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = 10000
	}
	if c.MaxMemoBytes <= 0 {
		c.MaxMemoBytes = 4 << 20
	}
	return c
}

// Validate reports every bad field of c at once.
func (c CacheConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.DefaultTTL > c.MaxTTL {
		errs = append(errs, fmt.Errorf("cache: default_ttl %s is over max_ttl %s", c.DefaultTTL, c.MaxTTL))
	}
	for _, r := range c.Memoize {
		if _, err := path.Match(r.Pattern, ""); err != nil || r.Pattern == "" {
			errs = append(errs, fmt.Errorf("memoize %q: want a tool name or a pattern such as \"gh.get_*\"", r.Pattern))
		}
		if r.TTL <= 0 || r.TTL > c.MaxTTL {
			errs = append(errs, fmt.Errorf("memoize %q: ttl %s: want more than 0 and at most cache.max_ttl (%s)", r.Pattern, r.TTL, c.MaxTTL))
		}
	}
	return errors.Join(errs...)
}

// memoizer answers calls of memoised tools from the store's cache.
type memoizer struct {
	store    cacheStore
	results  *resultBytes // holds a hit as a call's result is held
	rules    []MemoRule   // longest pattern first
	maxBytes int
	log      *slog.Logger
	warned   sync.Map // tool name → struct{}: rules that matched a tool with writes
}

// newMemoizer returns nil when there are no rules or no store.
func newMemoizer(store cacheStore, cfg CacheConfig, log *slog.Logger) *memoizer {
	if store == nil || len(cfg.Memoize) == 0 {
		return nil
	}
	rules := slices.Clone(cfg.Memoize)
	slices.SortStableFunc(rules, func(a, b MemoRule) int { return len(b.Pattern) - len(a.Pattern) })
	return &memoizer{store: store, rules: rules, maxBytes: cfg.MaxMemoBytes, log: log}
}

// ttl returns how long t's results are memoised; 0 means not at all.
func (m *memoizer) ttl(t *tools.Tool) time.Duration {
	if m == nil || t == nil {
		return 0
	}
	for _, r := range m.rules {
		if !t.Matches(r.Pattern) {
			continue
		}
		if !t.Annotations.KnownReadOnly() {
			if _, seen := m.warned.LoadOrStore(t.Name, struct{}{}); !seen {
				m.log.Warn("a memoize rule matches a tool not known to be read-only (an upstream server's tools need trust_annotations); it is called every time", "tool", t.Name, "pattern", r.Pattern)
			}
			return 0
		}
		return r.TTL
	}
	return 0
}

// pass answers a call of a memoised tool from the cache when the caller
// in ctx has its result within the TTL — held in the call's results in
// flight as a live result is, before the run's flow observes it — and
// else keeps what the rest of the gate answers. A store that fails is logged and bypassed:
// memoisation never fails a call. A helper's own call is not memoised
// (its calls are, each on its own).
func (m *memoizer) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	if c.gated() {
		return next.call(ctx, c)
	}
	t := c.Tool
	ttl := m.ttl(t)
	if ttl == 0 {
		return next.call(ctx, c)
	}
	name := t.Name
	if p, ok := tools.PageFrom(ctx, t.Name); ok {
		// A page of a pagination is a result of its own, page by page.
		name += "\x00page\x00" + p.Next
	}
	key, err := memoKey(name, c.Args)
	if err != nil {
		return next.call(ctx, c)
	}
	var held *holding
	if m.results != nil {
		if held, err = m.results.holdHit(ctx, c, m.maxBytes); err != nil {
			return nil, err
		}
	}
	e, err := m.store.CacheGet(ctx, memory.CacheMemo, key)
	if err != nil && held != nil {
		held.giveBack() // a miss: the call holds what its tool's does
	}
	switch {
	case err == nil:
		if held != nil {
			if err := held.settle(ctx, e.Value); err != nil {
				return nil, err
			}
		}
		if err := m.observeMemo(ctx, c, t.Name, e.Value, e.Provenance); err != nil {
			return nil, err
		}
		c.served = servedCached
		return e.Value, nil
	case !errors.Is(err, memory.ErrNotFound):
		m.log.Error("memo get", "tool", t.Name, "err", err)
	}
	out, err := next.call(ctx, c)
	if err != nil || len(out) > m.maxBytes {
		return out, err
	}
	if _, err := m.store.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheMemo, Key: key, Value: out, TTL: ttl}); err != nil {
		m.log.Error("memo set", "tool", t.Name, "err", err)
	}
	return out, nil
}

// observeMemo tells the data flow of the run that made the call, if a
// program's, that a memoised result's values came from the sources prov
// names (besides the tool, which the observer records), holding what
// that costs as the observer does.
func (m *memoizer) observeMemo(ctx context.Context, c *Call, tool string, out, prov json.RawMessage) error {
	if c.Run.log == nil || c.Run.flow == nil || len(prov) == 0 {
		return nil
	}
	var p filter.Provenance
	if json.Unmarshal(prov, &p) != nil || p.IsZero() {
		return nil
	}
	hold, keep, release := m.results.holdObserving(ctx, c, len(out))
	defer release()
	if err := c.Run.flow.observe(tool, out, p, hold, keep); err != nil {
		return observeError(tool, err)
	}
	c.seen.note(tool, out, p)
	return nil
}

// memoKey is the hex SHA-256 of the tool's name and its arguments as
// canonical JSON (object keys sorted, insignificant space dropped,
// numbers as written), so that {"a":1,"b":2} and { "b": 2, "a": 1 } are
// one key. The arguments are the resolved ones: the key is a hash, and
// the principal is part of the entry's own key in the store.
func memoKey(tool string, args json.RawMessage) (string, error) {
	canon, err := canonicalJSON(args)
	if err != nil {
		return "", err
	}
	return hashHex(append([]byte(tool+"\x00"), canon...)), nil
}

func canonicalJSON(b json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
