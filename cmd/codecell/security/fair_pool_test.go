package security

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The second attack round (issue 19): fair share of the pool, tasks,
// identities and stored state. Helpers the attacks share are in this
// file.

// TestLongRunsLeaveASlot (issue 19, fairness): three for(;;){} runs of
// bob's at a 60 s deadline once held both sandboxes of a pool of two,
// and alice was refused busy after the 10 s queue wait. Runs past the
// default deadline may not take the slot kept for the others: alice is
// served while bob's runs go on.
func TestLongRunsLeaveASlot(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "2")
	alice := s.open(t, aliceToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bobs []<-chan record
	for range 3 {
		bobs = append(bobs, s.open(t, bobToken).background(ctx, `for (;;) {}`, "timeout_ms", 60000))
	}
	s.waitMetric(t, "codecell_pool_in_use", 1)
	time.Sleep(2 * time.Second) // bob's other runs reach the server, and wait or run
	began := time.Now()
	alice.normal()
	t.Logf("alice was served %s after bob's runs began", time.Since(began).Round(time.Millisecond))
	cancel()
	for _, c := range bobs {
		<-c
	}
	s.open(t, bobToken).normal()
}

// TestTasksHaveTheDefaultDeadline (issue 19, high 4): a task without
// timeout_ms got max_task_duration, ten minutes, and two for(;;){} tasks
// of bob's made alice busy for over a minute. A task now has the default
// deadline unless it asks, and a long one leaves the reserved slot.
func TestTasksHaveTheDefaultDeadline(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "2")
	alice := s.open(t, aliceToken)
	bob := s.open(t, bobToken)
	ids := []string{bob.startTask(map[string]any{"code": `for (;;) {}`}), bob.startTask(map[string]any{"code": `for (;;) {}`})}
	s.waitMetric(t, "codecell_pool_in_use", 2)
	alice.normal()
	for _, id := range ids {
		rec := bob.taskRecord(id, 2*time.Minute)
		if rec.Status != "error" || rec.Error == nil || rec.Error.Kind != "timeout" || rec.Stats.DurationMS > 60000 {
			t.Fatalf("bob's task without timeout_ms: %.400s", rec.raw)
		}
		t.Logf("bob's task ended after %.0f ms: %s", rec.Stats.DurationMS, rec.Error.Message)
	}

	// Tasks that ask for the longest deadline take the slots long runs
	// may use, not the reserved one.
	ids = []string{
		bob.startTask(map[string]any{"code": `for (;;) {}`, "timeout_ms": 600000}),
		bob.startTask(map[string]any{"code": `for (;;) {}`, "timeout_ms": 600000}),
	}
	s.waitMetric(t, "codecell_pool_in_use", 1)
	time.Sleep(2 * time.Second)
	alice.normal()
	for _, id := range ids {
		bob.rpc("tasks/cancel", map[string]any{"taskId": id})
	}
	s.open(t, bobToken).normal()
}

// background runs code as ss's principal until ctx ends; the channel
// gets its record, or a record with status "request failed" when the
// request itself failed (as when ctx ends first).
func (ss *session) background(ctx context.Context, code string, extra ...any) <-chan record {
	args := map[string]any{"code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	ss.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ss.next, "method": "tools/call",
		"params": map[string]any{"name": "execute_code", "arguments": args}})
	out := make(chan record, 1)
	go func() {
		rec := record{Status: "request failed"}
		defer func() { out <- rec }()
		_, text, err := post(ctx, ss.url, ss.header(), string(body))
		if err != nil {
			return
		}
		var r struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(lastMessage(text)), &r) == nil && len(r.Result.Content) > 0 {
			json.Unmarshal([]byte(r.Result.Content[0].Text), &rec)
			rec.raw = r.Result.Content[0].Text
		}
	}()
	return out
}

// post sends one POST request; unlike do it may run on any goroutine.
func post(ctx context.Context, url string, header map[string]string, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitMetric waits until the metric is at least min.
func (s *server) waitMetric(t *testing.T, name string, min float64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for s.metric(t, name) < min {
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed below %v", name, min)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startTask calls execute_code as an MCP task and returns the task's id.
func (ss *session) startTask(args map[string]any) string {
	ss.t.Helper()
	res := ss.rpc("tools/call", map[string]any{"name": "execute_code", "arguments": args, "task": map[string]any{}})
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(res, &created) != nil || created.Task.TaskID == "" {
		ss.t.Fatalf("not a task handle: %s", res)
	}
	return created.Task.TaskID
}

// taskRecord polls the task until it ends, within wait, and returns the
// run record of its result.
func (ss *session) taskRecord(id string, wait time.Duration) record {
	ss.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var task struct {
			Status string `json:"status"`
		}
		json.Unmarshal(ss.rpc("tasks/get", map[string]any{"taskId": id}), &task)
		if task.Status != "working" && task.Status != "input_required" {
			break
		}
		if time.Now().After(deadline) {
			ss.t.Fatalf("task %s still %s after %s", id, task.Status, wait)
		}
		time.Sleep(200 * time.Millisecond)
	}
	res := ss.rpc("tasks/result", map[string]any{"taskId": id})
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var rec record
	if json.Unmarshal(res, &r) != nil || len(r.Content) == 0 || json.Unmarshal([]byte(r.Content[0].Text), &rec) != nil {
		ss.t.Fatalf("no run record in task %s's result: %s", id, res)
	}
	rec.raw = r.Content[0].Text
	return rec
}
