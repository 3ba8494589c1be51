package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// TestRunOutputHeld (issue 19): a run's own output is held in its
// results in flight — three copies of its bytes and 128 a JSON value —
// before the filter builds its tree. Under a per-run bound of 256 KiB, a
// string of 64 KiB passes, an array of 4,000 zeros (8 KB of JSON, half a
// megabyte once held) fails with result_too_large saying what to return
// instead, and so does a typed array; a small result passes as ever.
func TestRunOutputHeld(t *testing.T) {
	t.Parallel()
	srv, _ := storeServerTB(t, filepath.Join(t.TempDir(), "db"), mcpserver.Config{Limits: engine.Limits{ResultBytesInFlightPerRun: 256 << 10}})
	for _, tc := range []struct {
		name, code string
		refused    bool
	}{
		{"small", `return [1, 2, 3]`, false},
		{"a long string", `return "x".repeat(64 << 10)`, false},
		{"many values", `return Array(4000).fill(0)`, true},
		{"a typed array", `return new Uint8Array(4000)`, true},
		{"console lines", `for (let i = 0; i < 100; i++) console.log("line " + i); return 1`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _ := srv.Execute(t.Context(), engine.Execution{Code: tc.code})
			if !tc.refused {
				if rec.Error != nil {
					t.Fatalf("%s: %+v", tc.code, rec.Error)
				}
				return
			}
			if rec.Error == nil || rec.Error.Kind != executor.KindResultSize || !strings.Contains(rec.Error.Message, "JSON values") || !strings.Contains(rec.Error.Message, "base64") {
				t.Fatalf("%s: %+v", tc.code, rec.Error)
			}
		})
	}
}
