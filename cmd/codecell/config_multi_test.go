package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterConfig reads [cluster] and checks the key its key_env names.
func TestClusterConfig(t *testing.T) {
	t.Parallel()
	const key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		wantErr string // "" for none
	}{
		{name: "defaults", file: ``},
		{name: "every key", file: "[cluster]\nshared = true\nkey_env = \"CODECELL_FILTER_KEY\"\ndrain_delay = \"5s\"\n",
			env: map[string]string{"CODECELL_FILTER_KEY": key}},
		{name: "key not set", file: "[cluster]\nkey_env = \"TEAM_FILTER_KEY\"\n", wantErr: "cluster.key_env: TEAM_FILTER_KEY is not set"},
		{name: "not a key", file: "[cluster]\nkey_env = \"TEAM_FILTER_KEY\"\n", env: map[string]string{"TEAM_FILTER_KEY": "secret"},
			wantErr: "TEAM_FILTER_KEY does not hold a filter key: want 64 hex digits"},
		{name: "negative delay", file: "[cluster]\ndrain_delay = \"-1s\"\n", wantErr: "cluster.drain_delay: must not be negative"},
		{name: "from the environment", env: map[string]string{"CODECELL_CLUSTER_SHARED": "true", "CODECELL_CLUSTER_DRAIN_DELAY": "5s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.toml")
			os.WriteFile(path, []byte(tt.file), 0o600)
			cfg, pv, err := loadConfig(configSources{path, environ(tt.env), nil})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pv.unknownEnv) > 0 {
				t.Errorf("unknown environment reported: %v", pv.unknownEnv)
			}
			if tt.name == "defaults" && (cfg.Cluster != ClusterConfig{}) {
				t.Errorf("defaults: %+v", cfg.Cluster)
			}
			if tt.name != "defaults" && (!cfg.Cluster.Shared || cfg.Cluster.DrainDelay.D() != 5*time.Second) {
				t.Errorf("decoded %+v", cfg.Cluster)
			}
			if tt.name == "every key" {
				k, err := loadFilterKey(cfg, "", func(n string) string { return tt.env[n] })
				if err != nil || k.ID() == "" {
					t.Errorf("key from the environment: %v", err)
				}
			}
		})
	}
}
