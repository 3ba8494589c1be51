package security

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refBomb is an OpenAPI document of n request bodies, each an object of
// two properties that refer to the one before by a JSON pointer outside
// components/schemas: copied at each use, the operation's input schema
// doubles with each level.
func refBomb(n int) []byte {
	ptr := func(i int) string {
		return fmt.Sprintf("#/components/requestBodies/B%d/content/application~1json/schema", i)
	}
	rb := map[string]any{"B0": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "string"}}}}}
	for i := 1; i < n; i++ {
		rb[fmt.Sprintf("B%d", i)] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
			"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": ptr(i - 1)}, "b": map[string]any{"$ref": ptr(i - 1)}}}}}}
	}
	doc := map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "refbomb", "version": "1"},
		"paths": map[string]any{
			"/x": map[string]any{"post": map[string]any{"operationId": "x",
				"requestBody": map[string]any{"$ref": fmt.Sprintf("#/components/requestBodies/B%d", n-1)},
				"responses":   map[string]any{"200": map[string]any{"description": "ok"}}}},
			"/ok": map[string]any{"get": map[string]any{"operationId": "ok",
				"responses": map[string]any{"200": map[string]any{"description": "ok"}}}}},
		"components": map[string]any{"requestBodies": rb}}
	b, _ := json.Marshal(doc)
	return b
}

// rssMiB is the resident memory of pid in MiB.
func rssMiB(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb >> 10
		}
	}
	return 0
}

// TestOpenAPIReferenceBomb (issue 19, a15): a 5 KB OpenAPI document whose
// request bodies refer to each other by JSON pointers outside
// components/schemas made codecell expand them exponentially while it
// loaded, past 1.5 GiB. The operation is left out with a warning naming
// it; the rest of the document loads and the memory stays small.
func TestOpenAPIReferenceBomb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "bomb.json")
	os.WriteFile(spec, refBomb(24), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.bomb]\nspec = %q\nbase_url = \"http://127.0.0.1:9\"\n", spec)), 0o600)
	s := start(t, "--config", cfg)
	pid := s.cmd.Process.Pid
	alice := s.open(t, aliceToken)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if r := rssMiB(pid); r > 1024 {
			s.cmd.Process.Kill()
			t.Fatalf("codecell reached %d MiB loading the document", r)
		}
		rec := alice.run(`try { await bomb.x({}); return "called" } catch (e) { return e.code }`, "timeout_ms", 20000)
		if rec.Status == "ok" && string(rec.Result) != `"loading"` {
			if string(rec.Result) != `"unknown_tool"` {
				t.Errorf("the bomb's operation: %.600s", rec.raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source never loaded: %.600s\n%s", rec.raw, s.stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r := rssMiB(pid); r > 512 {
		t.Errorf("codecell holds %d MiB after loading a %d-level reference bomb", r, 24)
	}
	if log := s.stderr.String(); !strings.Contains(log, "its schema expands too far") || !strings.Contains(log, "POST /x") {
		t.Errorf("no warning names the operation left out:\n%s", log)
	}
	alice.normal()
}
