package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// badText is text as a program may write it: a NUL, and bytes that are
// not UTF-8 (a JavaScript string's lone surrogate, as Go receives it).
// Memory operations refuse text that is not UTF-8 (with an error that
// says so) and get nulText.
const (
	badText = "before\x00after \xed\xa0\x80 end"
	nulText = "before\x00after"
)

// keptText reports whether got is want as the store keeps text: the
// same, or with each NUL and each run of bytes that is not UTF-8 as
// U+FFFD (PostgreSQL's text holds neither).
func keptText(got, want string) bool {
	return got == want || got == strings.ReplaceAll(strings.ToValidUTF8(want, "\uFFFD"), "\x00", "\uFFFD")
}

// testProgramText: text a program wrote — a run's code and error
// message, the tool calls and requests it made, memories, task notes,
// cache keys, skills, plan steps, tool shapes — holding a
// NUL or bytes that are not UTF-8 is stored and read back, the same or
// visibly escaped (keptText), on every backend; never refused, never
// dropped (issue 19, attack9 D3: on PostgreSQL such a run's audit
// record failed to insert and was lost).
func testProgramText(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	alice := as(ctx, "alice")
	now := time.Now().UTC().Truncate(time.Millisecond)

	code := "return 2 // " + badText
	rec := memory.AuditRecord{
		Execution: memory.Execution{ID: "run-nul", Principal: "alice", Session: "s-alice", Language: "javascript", Code: code,
			CodeHash: memory.Hash([]byte(code)), Status: "error", ErrorKind: "script", ErrorMessage: "Error: x" + badText, StartedAt: now},
		ToolCalls:    []memory.ToolCall{{ExecutionID: "run-nul", Tool: "memory.remember" + badText, ArgsHash: "h", Status: "error", ErrorCode: "invalid" + badText, StartedAt: now}},
		HTTPRequests: []memory.HTTPRequest{{ExecutionID: "run-nul", Tool: "api.get", Method: "GET", Host: "example.com", Error: "refused " + badText, Attempt: 1, StartedAt: now}},
	}
	if err := st.RecordAudit(ctx, rec); err != nil {
		t.Fatalf("audit of a run with a NUL in its code: %v", err)
	}
	e, calls, err := st.GetExecution(ctx, "run-nul")
	if err != nil {
		t.Fatalf("the run is not in the audit: %v", err)
	}
	if !keptText(e.Code, code) || !keptText(e.ErrorMessage, rec.Execution.ErrorMessage) || e.CodeHash != rec.Execution.CodeHash {
		t.Errorf("audited run: code %q, error %q, hash %s; want %q, %q, the original's hash", e.Code, e.ErrorMessage, e.CodeHash, code, rec.Execution.ErrorMessage)
	}
	if len(calls) != 1 || !keptText(calls[0].Tool, rec.ToolCalls[0].Tool) || !keptText(calls[0].ErrorCode, rec.ToolCalls[0].ErrorCode) {
		t.Errorf("audited tool calls: %+v", calls)
	}
	if reqs, err := st.HTTPRequests(ctx, "run-nul"); err != nil || len(reqs) != 1 || !keptText(reqs[0].Error, rec.HTTPRequests[0].Error) {
		t.Errorf("audited requests: %+v %v", reqs, err)
	}
	if err := st.RecordExecution(ctx, memory.Execution{ID: "run-nul-2", Principal: "alice", Code: "\x00", Status: "running", StartedAt: now}); err != nil {
		t.Errorf("execution record with a NUL: %v", err)
	}

	m, err := st.Remember(alice, memory.RememberInput{Content: "the note says " + nulText, Source: "src" + nulText})
	if err != nil {
		t.Fatalf("remember: %v", err)
	}
	got, err := st.Get(alice, m.ID)
	if err != nil || !keptText(got.Content, "the note says "+nulText) || !keptText(got.Source, "src"+nulText) {
		t.Errorf("memory read back: %q %q %v", got.Content, got.Source, err)
	}
	content := "renew " + nulText
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, Content: &content}); err != nil {
		t.Errorf("update: %v", err)
	}
	task, err := st.AddTask(alice, memory.TaskInput{Content: "task " + nulText})
	if err != nil {
		t.Fatalf("add task: %v", err)
	}
	if _, err := st.UpdateTask(alice, memory.TaskUpdate{ID: task.ID, Note: "note " + nulText}); err != nil {
		t.Errorf("task note: %v", err)
	}

	key := "key" + nulText
	if _, err := st.CacheSet(alice, memory.CacheSetInput{Kind: memory.CacheUser, Key: key, Value: []byte(`"v"`), TTL: time.Hour}); err != nil {
		t.Fatalf("cache set: %v", err)
	}
	if ce, err := st.CacheGet(alice, memory.CacheUser, key); err != nil || string(ce.Value) != `"v"` {
		t.Errorf("cache entry under a key with a NUL: %v", err)
	}

	if _, err := st.SaveSkill(alice, memory.Skill{Name: "nul_skill", Description: "does " + nulText, Code: "return 1 // " + nulText, Language: "javascript"}); err != nil {
		t.Errorf("save skill: %v", err)
	} else if sk, err := st.GetSkill(alice, "nul_skill"); err != nil || !keptText(sk.Description, "does "+nulText) || !keptText(sk.Code, "return 1 // "+nulText) {
		t.Errorf("skill read back: %+v %v", sk, err)
	}

	id, _, err := st.SavePlan(alice, memory.SavePlanInput{Session: "s-alice", ExecutionID: "run-nul", TTL: time.Hour,
		Steps: []memory.PlanStep{{Seq: 1, Tool: "api.post" + nulText, Args: []byte(`{"body":"\u0000"}`)}}})
	if err != nil {
		t.Fatalf("save plan: %v", err)
	}
	if p, err := st.GetPlan(alice, id); err != nil || len(p.Steps) != 1 || !keptText(p.Steps[0].Tool, "api.post"+nulText) {
		t.Errorf("plan read back: %+v %v", p, err)
	}
	if err := st.FinishPlanStep(alice, id, 1, memory.StepError, "code"+nulText); err != nil {
		t.Errorf("finish plan step: %v", err)
	}

	if err := st.PutToolShape(ctx, "up"+badText, "tool"+badText, []byte(`{"type":"object"}`)); err != nil {
		t.Errorf("tool shape: %v", err)
	}
	checkStoreWhole(ctx, t, st)
}

// checkStoreWhole: the store still answers after the writes above.
func checkStoreWhole(ctx context.Context, t *testing.T, st Backend) {
	t.Helper()
	if _, err := st.ListExecutions(ctx, memory.ExecutionQuery{}); err != nil {
		t.Errorf("list executions: %v", err)
	}
}
