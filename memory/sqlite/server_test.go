package sqlite

import (
	"github.com/codecell/codecell/memory"

	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestAudit(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	ctx := t.Context()
	for i := 0; i < 5; i++ {
		clock.t = clock.t.Add(time.Minute)
		e := memory.Execution{ID: fmt.Sprintf("e%d", i), Principal: []string{"alice", "bob"}[i%2], Session: "s1", Language: "javascript",
			Code: fmt.Sprintf("return %d", i), Status: "running"}
		if err := s.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: e.ID, Tool: "memory.recall", Args: []byte(`{"query":"x"}`), Status: "ok", Duration: 3 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		e.Status, e.Duration, e.ToolCalls, e.ResultBytes = "ok", 20*time.Millisecond, 1, 42
		if i == 4 {
			e.Status, e.ErrorKind = "error", "timeout"
		}
		if err := s.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ListExecutions(ctx, memory.ExecutionQuery{})
	if err != nil || len(all) != 5 || all[0].ID != "e4" || all[0].Code != "" {
		t.Fatalf("list: %+v %v", all, err)
	}
	alice := "alice"
	got, _ := s.ListExecutions(ctx, memory.ExecutionQuery{Principal: &alice})
	if len(got) != 3 {
		t.Fatalf("alice's executions: %d", len(got))
	}
	got, _ = s.ListExecutions(ctx, memory.ExecutionQuery{Status: "error", WithCode: true})
	if len(got) != 1 || got[0].ErrorKind != "timeout" || got[0].Code != "return 4" || got[0].CodeHash != memory.Hash([]byte("return 4")) {
		t.Fatalf("errors: %+v", got)
	}
	page, _ := s.ListExecutions(ctx, memory.ExecutionQuery{Limit: 2, Before: &all[1]})
	if len(page) != 2 || page[0].ID != "e2" {
		t.Fatalf("page after e3: %+v", page)
	}
	e, calls, err := s.GetExecution(ctx, "e1")
	if err != nil || e.Duration != 20*time.Millisecond || e.ToolCalls != 1 || len(calls) != 1 || calls[0].ArgsHash != memory.Hash([]byte(`{"query":"x"}`)) || calls[0].Duration != 3*time.Millisecond {
		t.Fatalf("get: %+v %+v %v", e, calls, err)
	}
	tc, _ := s.ListToolCalls(ctx, memory.ToolCallQuery{Tool: "memory.recall"})
	if len(tc) != 5 {
		t.Fatalf("tool calls: %d", len(tc))
	}
	if err := s.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: "nope", Tool: "x", Status: "ok"}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("tool call for an unknown execution: %v", err)
	}
	if _, _, err := s.GetExecution(ctx, "nope"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
}

func TestResults(t *testing.T) {
	s := openTest(t, Config{Limits: memory.Limits{MaxResultBytes: 1 << 20}})
	ctx := as(t.Context(), "alice")
	data := bytes.Repeat([]byte(`{"row": "some repetitive json"},`), 2000)
	info, err := s.PutResult(ctx, memory.PutResultInput{Data: data, ExecutionID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.StoredSize >= info.Size/10 || info.Session != "s-alice" || info.ContentType != "application/json" || len(info.ID) != 26 {
		t.Fatalf("info: %+v", info)
	}
	_, got, err := s.GetResult(ctx, info.ID)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %v (%d bytes)", err, len(got))
	}
	// Paging by byte ranges.
	var paged []byte
	for off := int64(0); ; off += 1000 {
		_, part, err := s.ReadResult(ctx, info.ID, off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(part) == 0 {
			break
		}
		paged = append(paged, part...)
	}
	if !bytes.Equal(paged, data) {
		t.Fatal("pages do not add up to the result")
	}
	// Another principal cannot read it.
	_, _, err = s.GetResult(as(t.Context(), "bob"), info.ID)
	wantCode(t, err, tools.CodeNotFound)
	list, _ := s.ListResults(ctx, "", 0)
	if len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("list: %+v", list)
	}
	_, err = s.PutResult(ctx, memory.PutResultInput{Data: make([]byte, 2<<20)})
	wantCode(t, err, memory.CodeTooLarge)
	if err := s.DeleteResult(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.StatResult(ctx, info.ID)
	wantCode(t, err, tools.CodeNotFound)
}

func TestWorkspaceLimits(t *testing.T) {
	s := openTest(t, Config{Limits: memory.Limits{MaxFileBytes: 100, MaxWorkspaceBytes: 250, MaxWorkspaceFiles: 3}})
	ctx := as(t.Context(), "alice")
	write := func(p string, n int) error {
		_, _, err := s.WriteFile(ctx, p, bytes.Repeat([]byte("x"), n))
		return err
	}
	if err := write("a.txt", 100); err != nil {
		t.Fatal(err)
	}
	wantCode(t, write("big.txt", 101), memory.CodeTooLarge)
	if err := write("b.txt", 100); err != nil {
		t.Fatal(err)
	}
	te := wantCode(t, write("c.txt", 60), memory.CodeQuotaExceeded)
	if !strings.Contains(te.Message, "limit is 250") {
		t.Fatalf("quota message: %s", te.Message)
	}
	// Replacing a file counts only the difference.
	if err := write("a.txt", 40); err != nil {
		t.Fatalf("shrinking a file: %v", err)
	}
	if err := write("c.txt", 60); err != nil {
		t.Fatal(err)
	}
	wantCode(t, write("d.txt", 1), memory.CodeQuotaExceeded) // 3 files
	// Bob's workspace is separate.
	if _, _, err := s.WriteFile(as(t.Context(), "bob"), "a.txt", []byte("bob")); err != nil {
		t.Fatal(err)
	}
	_, data, _ := s.ReadFile(ctx, "a.txt")
	if len(data) != 40 {
		t.Fatalf("alice's a.txt has %d bytes", len(data))
	}
	ls, _ := s.ListFiles(ctx, "")
	if ls.Count != 3 || ls.TotalBytes != 200 {
		t.Fatalf("listing: %+v", ls)
	}
	// Files persist across reopening.
	path := s.DBPath()
	s.Close()
	s2 := openTestAt(t, path)
	_, data, err := s2.ReadFile(ctx, "c.txt")
	if err != nil || len(data) != 60 {
		t.Fatalf("after reopen: %d bytes, %v", len(data), err)
	}
}

func TestPrune(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	path := t.TempDir() + "/p.db"
	s := openTest(t, Config{Path: path, Now: clock.now, Retention: memory.Retention{
		ExecutionsMaxAge: 48 * time.Hour, ExecutionsMaxRows: 3, ResultsMaxAge: time.Hour, ResultsMaxRows: 100, ResultsMaxBytes: -1,
		EpisodicMaxAge: 24 * time.Hour}})
	ctx := t.Context()
	for i := 0; i < 6; i++ {
		s.RecordExecution(ctx, memory.Execution{ID: fmt.Sprintf("e%d", i), Status: "ok", StartedAt: clock.t.Add(time.Duration(i-3) * 24 * time.Hour)})
		s.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: fmt.Sprintf("e%d", i), Tool: "t", Status: "ok"})
	}
	old, _ := s.PutResult(ctx, memory.PutResultInput{Data: []byte("old")})
	clock.t = clock.t.Add(2 * time.Hour)
	fresh, _ := s.PutResult(ctx, memory.PutResultInput{Data: []byte("new")})
	oldEvent := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "old event", OccurredAt: ptr(clock.t.Add(-48 * time.Hour))})
	newEvent := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "new event"})
	fact := mustRemember(t, s, ctx, memory.RememberInput{Content: "old fact"})

	rep, err := s.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// e0 and e1 are older than 48h; the row limit keeps the newest three.
	ex, _ := s.ListExecutions(ctx, memory.ExecutionQuery{})
	if len(ex) != 3 || ex[2].ID != "e3" || rep.Results != 1 || rep.Episodic != 1 {
		t.Fatalf("prune report %+v, executions %v", rep, ex)
	}
	tc, _ := s.ListToolCalls(ctx, memory.ToolCallQuery{})
	if len(tc) != 3 {
		t.Fatalf("%d tool calls left, want 3 (cascade)", len(tc))
	}
	if _, err := s.StatResult(ctx, old.ID); err == nil {
		t.Fatal("expired result kept")
	}
	if _, err := s.StatResult(ctx, fresh.ID); err != nil {
		t.Fatal("fresh result pruned")
	}
	if _, err := s.Get(ctx, oldEvent.ID); err == nil {
		t.Fatal("expired episodic memory kept")
	}
	for _, id := range []int64{newEvent.ID, fact.ID} {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("memory %d pruned", id)
		}
	}
}

func TestPruneResultBytes(t *testing.T) {
	s := openTest(t, Config{Retention: memory.Retention{ResultsMaxBytes: 100}})
	ctx := t.Context()
	var ids []string
	for i := 0; i < 5; i++ {
		info, err := s.PutResult(ctx, memory.PutResultInput{Data: []byte(fmt.Sprintf("result number %d with some text", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	list, _ := s.ListResults(ctx, "", 0)
	var total int64
	for _, r := range list {
		total += r.StoredSize
	}
	if total > 100 || len(list) == 0 || list[0].ID != ids[4] {
		t.Fatalf("after byte pruning: %d results, %d bytes", len(list), total)
	}
}
