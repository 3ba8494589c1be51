package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptSDKTasks drives execute_code as MCP tasks with the
// official TypeScript SDK's client (its experimental tasks API, protocol
// 2025-11-25) over Streamable HTTP, as two principals: a task polled to
// completion past sandbox.max_timeout, an ordinary call still cut at it, a
// task past sandbox.max_task_duration, a task cancelled mid-run whose sandbox
// serves the next run, and another principal who can neither get, fetch,
// cancel nor list it (testdata/sdk/tasks.mjs).
func TestTypeScriptSDKTasks(t *testing.T) {
	t.Parallel()
	node(t)
	const alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	config := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(config, []byte(`
[sandbox]
pool_size = 1
queue_wait = "2s"
timeout = "1s"
max_timeout = "1s"
max_task_duration = "4s"

[[auth.tokens]]
principal = "alice"
token = "`+alice+`"

[[auth.tokens]]
principal = "bob"
token = "`+bob+`"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base, _ := startHTTP(t, "--config", config)
	out, err := runNode(t, 2*time.Minute, "tasks.mjs", base+"/mcp", alice, bob)
	if err != nil {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, out)
	}
	for _, check := range []string{"advertised", "task completed", "ordinary call keeps max_timeout", "task timeout", "task cancelled", "another principal"} {
		if !strings.Contains(out, `"check":"`+check+`","ok":true`) {
			t.Errorf("check %s did not pass:\n%s", check, out)
		}
	}
	t.Logf("%s", out)
}

// TestTypeScriptSDKTwoMinuteTask: a run of two minutes, started as an MCP
// task by the official TypeScript SDK's client and polled to completion
// (testdata/sdk/longtask.mjs). It mostly sleeps; -short skips it.
func TestTypeScriptSDKTwoMinuteTask(t *testing.T) {
	if testing.Short() {
		t.Skip("a two-minute task; -short skips it")
	}
	t.Parallel()
	node(t)
	const token = "long-task-token-0123456789abcdef"
	config := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(config, []byte(`
[sandbox]
max_timeout = "5s"
max_task_duration = "3m"

[[auth.tokens]]
principal = "alice"
token = "`+token+`"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base, _ := startHTTP(t, "--config", config)
	out, err := runNode(t, 4*time.Minute, "longtask.mjs", base+"/mcp", token)
	if err != nil || !strings.Contains(out, `"check":"two-minute task","ok":true`) {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
