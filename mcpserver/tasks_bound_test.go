package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
)

// TestTasksBounded keeps the tasks a principal makes within count and
// byte limits (issue 19, third round, H3: one principal made 32,592
// finished tasks in two minutes, 1 GiB of results kept ten minutes):
// a new task drops the oldest finished, found no more; a task that would
// need to drop a running one is refused with the limit's name; the bytes
// of the results kept are bounded; another principal's tasks are not
// dropped for them; tasks/list is paginated.
func TestTasksBounded(t *testing.T) {
	t.Parallel()
	url, _, open := taskServer(t,
		engine.TaskConfig{MaxDuration: 5 * time.Second, MaxPerPrincipal: 3, MaxBytesPerPrincipal: 6000},
		executor.Config{Timeout: 3 * time.Second, MaxTimeout: 3 * time.Second})
	alice := newTaskClient(t, url, aliceToken)
	bob := newTaskClient(t, url, bobToken)

	finished := func(c *taskClient, code string) string {
		t.Helper()
		task := c.startTask(t, map[string]any{"code": code})
		c.poll(t, task.TaskId, 20*time.Millisecond, 10*time.Second)
		return task.TaskId
	}
	aliceTask := finished(alice, `return 1`)

	var ids []string
	for i := range 5 {
		ids = append(ids, finished(bob, `return `+string(rune('0'+i))))
	}
	if got := bob.list(t); !sameSet(got, ids[2:]) {
		t.Fatalf("bob lists %v, want his three newest %v", got, ids[2:])
	}
	for _, id := range ids[:2] {
		if _, rpcErr := bob.getTask(t, id); rpcErr == nil {
			t.Errorf("bob's dropped task %s is still found", id)
		}
	}
	if _, rec := alice.result(t, aliceTask); rec == nil || rec.Status != executor.StatusOK {
		t.Fatalf("alice's task was dropped for bob's: %+v", rec)
	}

	// Bytes: three results of ~2.5 KB are over 6,000 bytes: the oldest
	// is dropped, the newest kept whole.
	var big []string
	for range 3 {
		big = append(big, finished(bob, `return "x".repeat(2500)`))
	}
	if got := bob.list(t); slices.Contains(got, big[0]) || !slices.Contains(got, big[2]) {
		t.Fatalf("bob lists %v after three 2.5 KB results over a 6,000-byte limit: want the oldest dropped, the newest kept", got)
	}
	if res, rec := bob.result(t, big[2]); rec == nil || rec.Status != executor.StatusOK || !strings.Contains(textOf(res.Content), strings.Repeat("x", 2500)) {
		t.Fatalf("newest result not kept whole: %+v", rec)
	}

	// Running: three waiting tasks fill bob's limit; a fourth is refused
	// with the limit's name, and his finished ones are all dropped.
	var running []string
	for range 3 {
		running = append(running, bob.startTask(t, map[string]any{"code": `await test.wait({}); return 1`, "timeout_ms": 4000}).TaskId)
	}
	refused := bob.startTask(t, map[string]any{"code": `return 1`})
	bob.poll(t, refused.TaskId, 20*time.Millisecond, 10*time.Second)
	if res, rec := bob.result(t, refused.TaskId); rec == nil || rec.Error == nil || !strings.Contains(rec.Error.Message, "tasks.max_per_principal") {
		t.Fatalf("a task over the running limit: %+v %s", rec, textOf(res.Content))
	}
	close(open)
	for _, id := range running {
		if task, _ := bob.poll(t, id, 20*time.Millisecond, 10*time.Second); task.Status != mcp.TaskStatusCompleted {
			t.Errorf("running task %s ended %s", id, task.Status)
		}
	}
}

// TestTasksListPaginated pages tasks/list: a principal's tasks come 50
// at a time, with a cursor to the next page, and no other principal's.
func TestTasksListPaginated(t *testing.T) {
	t.Parallel()
	url, _, _ := taskServer(t, engine.TaskConfig{MaxPerPrincipal: 100},
		executor.Config{Timeout: 3 * time.Second, MaxTimeout: 3 * time.Second})
	alice := newTaskClient(t, url, aliceToken)
	bob := newTaskClient(t, url, bobToken)
	alice.startTask(t, map[string]any{"code": `return 1`})
	var ids []string
	for range 60 {
		ids = append(ids, bob.startTask(t, map[string]any{"code": `return 1`}).TaskId)
	}
	var listed []string
	cursor, pages := "", 0
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, rpcErr := bob.call(t, "tasks/list", params)
		if rpcErr != nil {
			t.Fatalf("tasks/list: %+v", rpcErr)
		}
		var page mcp.ListTasksResult
		if err := json.Unmarshal(res, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Tasks) > 50 {
			t.Fatalf("a page of %d tasks, want at most 50", len(page.Tasks))
		}
		for _, task := range page.Tasks {
			listed = append(listed, task.TaskId)
		}
		pages++
		if cursor = string(page.NextCursor); cursor == "" {
			break
		}
	}
	if pages != 2 || !sameSet(listed, ids) {
		t.Fatalf("%d pages listing %d tasks, want 2 pages listing bob's %d", pages, len(listed), len(ids))
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func textOf(cs []mcp.Content) string {
	var b strings.Builder
	for _, c := range cs {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
