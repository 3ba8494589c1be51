package security

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTaskNotificationsStayWithTheirPrincipal (issue 19, low): mcp-go
// sends a task's status notification to every session, so bob's stream
// learnt the ids and statuses of alice's tasks. They now reach the
// sessions of the task's principal only.
func TestTaskNotificationsStayWithTheirPrincipal(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.open(t, aliceToken), s.open(t, bobToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aliceHears, bobHears := alice.listen(ctx), bob.listen(ctx)
	id := alice.startTask(map[string]any{"code": `await util.sleep({ms: 100}); return 1`})
	if rec := alice.taskRecord(id, time.Minute); rec.Status != "ok" {
		t.Fatalf("alice's task: %.400s", rec.raw)
	}
	// Alice's stream hears of her task: notifications flow, and bob's
	// stream was written to at the same time if ever.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(aliceHears.String(), id) {
		if time.Now().After(deadline) {
			t.Fatalf("alice's stream never heard of her task %s:\n%s", id, aliceHears.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if heard := bobHears.String(); strings.Contains(heard, id) {
		t.Fatalf("bob's stream heard of alice's task:\n%s", heard)
	}
	bob.normal()
}

// listen opens the session's GET event stream and collects what it
// hears until ctx ends.
func (ss *session) listen(ctx context.Context) *syncBuffer {
	ss.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ss.url, nil)
	if err != nil {
		ss.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	// Go's client asks for gzip by itself, and the compressing handler
	// then holds the stream's headers back until its first event.
	req.Header.Set("Accept-Encoding", "identity")
	for k, v := range ss.header() {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ss.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		ss.t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	heard := &syncBuffer{}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			heard.WriteString(sc.Text() + "\n")
		}
	}()
	return heard
}

// TestTaskRecordsBounded (issue 19, third round, H3): finished task
// records were kept result_ttl each with no count limit (one principal
// made 32,592 in two minutes: RSS 49 MiB → 1,031 MiB, a 5.2 MB
// tasks/list). With the defaults, a principal keeps at most 64 tasks,
// the oldest finished dropped for new ones, and tasks/list pages 50 at
// a time.
func TestTaskRecordsBounded(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	var ids []string
	for range 80 {
		ids = append(ids, bob.startTask(map[string]any{"code": `return "x".repeat(1000)`}))
		time.Sleep(100 * time.Millisecond) // within the execution rate limit (600 a minute)
	}
	if rec := bob.taskRecord(ids[len(ids)-1], time.Minute); rec.Status != "ok" {
		t.Fatalf("the newest task: %.400s", rec.raw)
	}
	var page struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
		} `json:"tasks"`
		NextCursor string `json:"nextCursor"`
	}
	listed := 0
	for cursor, first := "", true; first || cursor != ""; first = false {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		page.NextCursor = ""
		if err := json.Unmarshal(bob.rpc("tasks/list", params), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Tasks) > 50 {
			t.Fatalf("tasks/list: a page of %d tasks, want at most 50", len(page.Tasks))
		}
		listed += len(page.Tasks)
		cursor = page.NextCursor
	}
	if listed > 64 {
		t.Fatalf("bob keeps %d tasks of the 80 he made, want at most 64 (tasks.max_per_principal)", listed)
	}
	body := `{"jsonrpc": "2.0", "id": 99999, "method": "tasks/get", "params": {"taskId": "` + ids[0] + `"}}`
	if _, _, out := do(t, http.MethodPost, bob.url, bob.header(), body); !strings.Contains(lastMessage(out), "not found") {
		t.Fatalf("bob's oldest task is still kept: %.300s", lastMessage(out))
	}
	bob.normal()
}
