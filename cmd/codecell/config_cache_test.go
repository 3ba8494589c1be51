package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCacheConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, file string
		wantErr    string // "" for a valid file
	}{
		{name: "memoize", file: "[sandbox]\nplan_ttl = \"10m\"\n[cache]\nmax_ttl = \"1h\"\n[cache.memoize]\n\"gh.get_*\" = \"5m\"\n\"weather.*\" = \"60s\"\n"},
		{name: "bad pattern", file: "[cache.memoize]\n\"gh.[\" = \"5m\"\n", wantErr: `memoize "gh.["`},
		{name: "ttl over the max", file: "[cache]\nmax_ttl = \"1h\"\n[cache.memoize]\n\"gh.*\" = \"2h\"\n", wantErr: "at most cache.max_ttl"},
		{name: "not a duration", file: "[cache.memoize]\n\"gh.*\" = \"soon\"\n", wantErr: "cache.memoize"},
		{name: "zero plan ttl", file: "[sandbox]\nplan_ttl = \"0s\"\n", wantErr: "sandbox.plan_ttl"},
		{name: "total below one value", file: "[cache]\nmax_total_bytes = 1000\n", wantErr: "cache.max_total_bytes: 1000 is less than one value may take"},
		{name: "total zero", file: "[cache]\nmax_total_bytes = 0\n", wantErr: "cache.max_total_bytes: must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := loadConfig(configSources{path, nil, nil})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := cfg.Cache.server()
			if len(sc.Memoize) != 2 || sc.Memoize[0].Pattern != "gh.get_*" || sc.Memoize[0].TTL != 5*time.Minute || sc.MaxTTL != time.Hour {
				t.Fatalf("cache config %+v", sc)
			}
			if cfg.Sandbox.PlanTTL.D() != 10*time.Minute {
				t.Fatalf("plan_ttl %v", cfg.Sandbox.PlanTTL.D())
			}
		})
	}
}
