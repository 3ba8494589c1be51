package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver/engine"
)

// This file reads the [cluster] section: several instances behind one load
// balancer, on one store.
//
//	[cluster]
//	shared = true                       # vaults and rate limits through the store
//	key_env = "CODECELL_FILTER_KEY"     # the filter key, the same on every instance
//	drain_delay = "5s"                  # /readyz at 503 this long before shutdown

// ClusterConfig holds what the instances of one store share.
type ClusterConfig struct {
	// Shared shares the session token vaults (sealed) and the
	// per-principal rate limits through the store, so that a token minted
	// on one instance resolves on another and a limit holds over all.
	Shared bool `toml:"shared"`
	// KeyEnv names an environment variable holding the filter key (64
	// hex digits), for instances that share no data directory; it takes
	// the place of filter.key_file.
	KeyEnv string `toml:"key_env"`
	// DrainDelay is how long a stopping instance keeps serving with
	// /readyz at 503 before it stops accepting connections.
	DrainDelay Duration `toml:"drain_delay"`
}

// validateCluster checks the [cluster] section, and the key its key_env
// names in the environment.
func (c *Config) validateCluster(env func(string) string) []error {
	var errs []error
	cl := c.Cluster
	if cl.DrainDelay < 0 {
		errs = append(errs, configError{"cluster.drain_delay", "must not be negative"})
	}
	if cl.KeyEnv != "" {
		if _, err := keyFromEnv(cl.KeyEnv, env); err != nil {
			errs = append(errs, configError{"cluster.key_env", err.Error()})
		}
	}
	return errs
}

// keyFromEnv reads the filter key from the variable name.
func keyFromEnv(name string, env func(string) string) (filter.Key, error) {
	v := strings.TrimSpace(env(name))
	if v == "" {
		return filter.Key{}, fmt.Errorf("%s is not set: put the filter key there (64 hex digits, e.g. from openssl rand -hex 32), the same on every instance", name)
	}
	raw, err := hex.DecodeString(v)
	if err != nil || len(raw) != filter.KeySize {
		return filter.Key{}, fmt.Errorf("%s does not hold a filter key: want %d hex digits", name, 2*filter.KeySize)
	}
	return filter.KeyFromBytes(raw)
}

// loadFilterKey is the filter key: from the environment variable
// cluster.key_env names, or else the key file at path, created on first
// start.
func loadFilterKey(cfg Config, path string, env func(string) string) (filter.Key, error) {
	if cfg.Cluster.KeyEnv != "" {
		return keyFromEnv(cfg.Cluster.KeyEnv, env)
	}
	return filter.LoadOrCreateKey(path)
}

// sharedState returns the store as the state the instances share when
// cluster.shared is on, after checking that this instance's filter key is
// the one the others use (the store keeps its fingerprint, never the
// key); nil when it is off.
func sharedState(cfg Config, st store, key filter.Key) (engine.SharedStore, error) {
	if !cfg.Cluster.Shared {
		return nil, nil
	}
	shared, ok := st.(clusterStore)
	if !ok {
		return nil, fmt.Errorf("cluster: the %s store cannot share vaults and rate limits", backendOf(cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shared.CheckFilterKey(ctx, key.ID()); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return shared, nil
}

// clusterStore is a store that instances can share state through: both
// backends are one.
type clusterStore interface {
	engine.SharedStore
	CheckFilterKey(ctx context.Context, id string) error
}
