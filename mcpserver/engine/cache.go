package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The cache tools give programs a per-principal key-value cache in the
// store, with a time to live: cache.get, cache.set and cache.delete. They
// are part of the programs' runtime (tools.Tool.Runtime).
//
// An entry keeps the provenance of what was cached — the tool sources of
// the values in cache.set's arguments, which the gate puts in the
// context (memory.WithProvenance) — and cache.get returns it in its
// result's provenance field, as workspace.read does: the run that reads
// the value knows it came from those sources, and the data-flow rules
// hold for it as for the run that cached it.

// CacheCategory is the category of the cache tools.
const CacheCategory = "cache"

// cache is the cache namespace: cache.get, cache.set and cache.delete
// over the caller's entries in the store.
type cache struct {
	store cacheStore
	cfg   CacheConfig
}

type cacheKey struct {
	Key string `json:"key"`
}

type cacheSetArgs struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	TTL     json.RawMessage `json:"ttl"`
	Options struct {
		TTL json.RawMessage `json:"ttl"`
	} `json:"options"`
}

const (
	cacheKeySchema = `{"type": "string", "minLength": 1, "maxLength": 256, "description": "Any text up to 256 bytes."}`
	cacheTTLSchema = `{"type": ["number", "string"], "description": "Seconds, or a duration such as \"90s\", \"5m\", \"2h\"."}`
)

func (k cache) tools() []tools.Tool {
	c := k.cfg
	limits := fmt.Sprintf("Entries are yours alone (per principal) and live in the store: other runs and sessions of yours read them until they expire. The default time to live is %s, the longest %s; a value is at most %d bytes of JSON, and you keep at most %d entries.",
		c.DefaultTTL, c.MaxTTL, c.MaxValueBytes, c.MaxEntries)
	return []tools.Tool{
		{
			Name:        "cache.get",
			Summary:     "Read a value you cached with cache.set; found is false once it expired.",
			Description: "Get returns the value stored under key by cache.set, with its expiry. " + limits,
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"key": ` + cacheKeySchema + `}, "required": ["key"], "additionalProperties": false}`),
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"found": {"type": "boolean"}, "value": {}, "expires_at": {"type": "string", "format": "date-time"},
				"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools the value came from, when known."}}, "required": ["found"]}`),
			Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
			Examples:    []tools.Example{{Args: json.RawMessage(`{"key": "rates:eur"}`), Result: json.RawMessage(`{"found": true, "value": {"usd": 1.08}, "expires_at": "2025-01-31T09:05:00Z"}`)}},
			Positional:  []string{"key"},
			Related:     []string{"cache.set", "cache.delete"},
			Runtime:     true,
			// A value is read from the store whole (issue 19, attack9
			// D7: 128 reads at once of a 1 MB value took 1.4 GiB): the
			// driver's copy, the scan's and the encoded result's.
			MaxResultBytes: tools.ResultCopies * (int64(c.MaxValueBytes) + 4<<10),
			// The value's sources are its provenance field's, never a
			// "provenance" key of the value (attack21 P1).
			Stored:  &tools.StoredFields{Provenance: []string{"provenance"}},
			Handler: tools.Handle(k.get),
		},
		{
			Name:        "cache.set",
			Summary:     "Keep a JSON value under a key for a while (ttl), for later runs: cache.set(key, value, {ttl: \"5m\"}).",
			Description: "Set stores value under key, replacing what was there, until the time to live passes. " + limits,
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"key": ` + cacheKeySchema + `, "value": {"description": "Any JSON value."},
				"ttl": ` + cacheTTLSchema + `, "options": {"type": "object", "properties": {"ttl": ` + cacheTTLSchema + `}, "additionalProperties": false}},
				"required": ["key", "value"], "additionalProperties": false}`),
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"expires_at": {"type": "string", "format": "date-time"}}, "required": ["expires_at"]}`),
			Annotations:  tools.Annotations{Idempotent: true},
			Examples:     []tools.Example{{Title: "Keep exchange rates for five minutes", Args: json.RawMessage(`{"key": "rates:eur", "value": {"usd": 1.08}, "ttl": "5m"}`)}},
			Errors: []tools.ErrorDoc{
				{Code: tools.CodeInvalidArguments, Description: "A time to live that is not positive or over the maximum."},
				{Code: memory.CodeTooLarge, Description: "The value is over the size limit."},
				{Code: memory.CodeQuotaExceeded, Description: "You keep too many entries; delete some or let them expire."},
			},
			Positional: []string{"key", "value", "options"},
			Related:    []string{"cache.get", "cache.delete"},
			Runtime:    true,
			Handler:    tools.Handle(k.set),
		},
		{
			Name:         "cache.delete",
			Summary:      "Remove a cached value before it expires.",
			InputSchema:  json.RawMessage(`{"type": "object", "properties": {"key": ` + cacheKeySchema + `}, "required": ["key"], "additionalProperties": false}`),
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"deleted": {"type": "boolean"}}, "required": ["deleted"]}`),
			Annotations:  tools.Annotations{Destructive: true, Idempotent: true},
			Positional:   []string{"key"},
			Related:      []string{"cache.set"},
			Runtime:      true,
			Handler:      tools.Handle(k.delete),
		},
	}
}

type cacheGetResult struct {
	Found     bool            `json:"found"`
	Value     json.RawMessage `json:"value,omitempty"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
	// Provenance names the sources of the value (see storedOf).
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

func (k cache) get(ctx context.Context, in cacheKey) (cacheGetResult, error) {
	entry, err := k.store.CacheGet(ctx, memory.CacheUser, in.Key)
	if errors.Is(err, memory.ErrNotFound) {
		return cacheGetResult{}, nil
	}
	if err != nil {
		return cacheGetResult{}, err
	}
	return cacheGetResult{Found: true, Value: entry.Value, ExpiresAt: &entry.ExpiresAt, Provenance: entry.Provenance}, nil
}

func (k cache) set(ctx context.Context, in cacheSetArgs) (map[string]time.Time, error) {
	c := k.cfg
	raw := in.TTL
	if len(raw) == 0 {
		raw = in.Options.TTL
	}
	ttl := c.DefaultTTL
	if len(raw) > 0 {
		d, err := parseTTL(raw)
		if err != nil {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "ttl: %v", err)
		}
		ttl = d
	}
	if ttl <= 0 || ttl > c.MaxTTL {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "ttl %s: want more than 0 and at most %s", ttl, c.MaxTTL)
	}
	if len(in.Value) > c.MaxValueBytes {
		return nil, &tools.Error{Code: memory.CodeTooLarge, Message: fmt.Sprintf("the value is %d bytes of JSON, over the limit of %d; cache less, or keep it in the workspace", len(in.Value), c.MaxValueBytes)}
	}
	exp, err := k.store.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheUser, Key: in.Key, Value: in.Value, TTL: ttl, MaxEntries: c.MaxEntries})
	if err != nil {
		return nil, err
	}
	return map[string]time.Time{"expires_at": exp}, nil
}

func (k cache) delete(ctx context.Context, in cacheKey) (map[string]bool, error) {
	ok, err := k.store.CacheDelete(ctx, memory.CacheUser, in.Key)
	return map[string]bool{"deleted": ok}, err
}

// parseTTL reads seconds (a number) or a Go duration ("5m").
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		if secs <= 0 || secs > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%v seconds: want a positive number", secs)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return 0, errors.New("want seconds or a duration such as \"5m\"")
	}
	d, err := time.ParseDuration(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as \"90s\", \"5m\" or \"2h\"", text)
	}
	return d, nil
}
