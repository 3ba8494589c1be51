package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/codecell/codecell/mcpserver/engine"
)

// This file reads the [cache] section: the programs' cache (cache.get,
// cache.set, cache.delete) and the memoisation of read-only tools, whose
// [cache.memoize] table maps tool names or patterns to how long their
// results are kept:
//
//	[cache.memoize]
//	"gh.get_*" = "5m"
//	"weather.*" = "60s"
//
// A pattern that names a whole source ("weather.*") memoises every
// read-only tool of it; a tool that is not annotated read-only is never
// memoised. Dry runs' plans live sandbox.plan_ttl.

// CacheConfig is the [cache] section.
type CacheConfig struct {
	DefaultTTL    Duration `toml:"default_ttl"`
	MaxTTL        Duration `toml:"max_ttl"`
	MaxValueBytes int      `toml:"max_value_bytes"`
	MaxEntries    int      `toml:"max_entries"`
	MaxMemoBytes  int      `toml:"max_memo_bytes"`
	// MaxTotalBytes bounds every principal's entries together; the
	// store evicts the oldest past it (memory.Limits.MaxCacheBytes).
	MaxTotalBytes int64 `toml:"max_total_bytes"`
	// Memoize maps tool names or patterns (path.Match syntax) to a TTL.
	Memoize map[string]Duration `toml:"memoize"`
}

func defaultCacheConfig() CacheConfig {
	return CacheConfig{
		DefaultTTL:    Duration(5 * time.Minute),
		MaxTTL:        Duration(24 * time.Hour),
		MaxValueBytes: 1 << 20,
		MaxEntries:    10000,
		MaxMemoBytes:  4 << 20,
		MaxTotalBytes: 256 << 20,
	}
}

// server is the section as mcpserver takes it.
func (c CacheConfig) server() engine.CacheConfig {
	out := engine.CacheConfig{
		DefaultTTL:    c.DefaultTTL.D(),
		MaxTTL:        c.MaxTTL.D(),
		MaxValueBytes: c.MaxValueBytes,
		MaxEntries:    c.MaxEntries,
		MaxMemoBytes:  c.MaxMemoBytes,
	}
	for _, pattern := range slices.Sorted(maps.Keys(c.Memoize)) {
		out.Memoize = append(out.Memoize, engine.MemoRule{Pattern: pattern, TTL: c.Memoize[pattern].D()})
	}
	return out
}

// validateCache checks the [cache] section and sandbox.plan_ttl.
func (c *Config) validateCache() []error {
	var errs []error
	for key, v := range map[string]int{"cache.max_value_bytes": c.Cache.MaxValueBytes, "cache.max_entries": c.Cache.MaxEntries, "cache.max_memo_bytes": c.Cache.MaxMemoBytes} {
		if v <= 0 {
			errs = append(errs, configError{key, "must be positive"})
		}
	}
	for key, v := range map[string]Duration{"cache.default_ttl": c.Cache.DefaultTTL, "cache.max_ttl": c.Cache.MaxTTL, "sandbox.plan_ttl": c.Sandbox.PlanTTL} {
		if v <= 0 {
			errs = append(errs, configError{key, "must be positive"})
		}
	}
	switch {
	case c.Cache.MaxTotalBytes <= 0:
		errs = append(errs, configError{"cache.max_total_bytes", "must be positive"})
	case c.Cache.MaxTotalBytes < int64(c.Cache.MaxValueBytes) || c.Cache.MaxTotalBytes < int64(c.Cache.MaxMemoBytes):
		errs = append(errs, configError{"cache.max_total_bytes", fmt.Sprintf("%d is less than one value may take (max_value_bytes %d, max_memo_bytes %d)", c.Cache.MaxTotalBytes, c.Cache.MaxValueBytes, c.Cache.MaxMemoBytes)})
	}
	if len(errs) > 0 {
		return errs
	}
	if err := c.Cache.server().Validate(); err != nil {
		errs = append(errs, configError{"cache", fmt.Sprint(err)})
	}
	return errs
}
