package storecopy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storecopy"
	"github.com/codecell/codecell/tools"
)

// sqliteFixture writes a SQLite store holding some of everything:
// memories of two principals with tags and entities, a relation, skills
// (one published), workspace files, a stored result, an execution with
// tool calls and HTTP requests, and a tool shape. It returns its path.
func sqliteFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codecell.db")
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	bob := tools.WithCaller(t.Context(), tools.Caller{Principal: "bob"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, content := range []string{
		"The staging database is backed up every night at 02:00 UTC",
		"Deploys to production need a green pipeline and a reviewer",
		"Kubernetes pods of the billing service restart on OOM",
	} {
		_, err := st.Remember(alice, memory.RememberInput{Layer: memory.Semantic, Content: content,
			Tags: []string{"ops", fmt.Sprintf("t%d", i)}, Entities: []string{"Billing"}})
		must(err)
	}
	_, err = st.Remember(alice, memory.RememberInput{Layer: memory.Episodic, Content: "Met with Dana about the invoice export"})
	must(err)
	_, err = st.Remember(bob, memory.RememberInput{Layer: memory.Procedural, Content: "To rotate the TLS certificate run certbot renew"})
	must(err)
	gone, err := st.Remember(bob, memory.RememberInput{Content: "a memory that is forgotten before the copy"})
	must(err)
	_, err = st.Forget(bob, memory.ForgetInput{IDs: []int64{gone.ID}})
	must(err)
	_, err = st.Relate(alice, memory.RelateInput{From: "Billing", To: "Postgres", Type: "uses"})
	must(err)
	_, err = st.SaveSkill(alice, memory.Skill{Name: "greet", Description: "Says hello", Code: "return 'hello ' + input.name", Language: "javascript"})
	must(err)
	_, err = st.PublishSkill(alice, "greet")
	must(err)
	_, err = st.SaveSkill(bob, memory.Skill{Name: "sum", Description: "Adds", Code: "return input.a + input.b", Language: "javascript"})
	must(err)
	_, _, err = st.WriteFile(alice, "notes/today.md", []byte("# Today\nship the migration\n"))
	must(err)
	_, _, err = st.WriteFile(bob, "data.bin", []byte{0, 1, 2, 0xff})
	must(err)
	res, err := st.PutResult(alice, memory.PutResultInput{Data: []byte(`{"rows":[1,2,3]}`)})
	must(err)
	now := time.Now()
	must(st.RecordExecution(t.Context(), memory.Execution{ID: "exec-1", Principal: "alice", Session: "s1", Language: "javascript",
		Code: "return 1", Status: "ok", Duration: 3 * time.Millisecond, ToolCalls: 1, StartedAt: now, UpdatedAt: now}))
	must(st.RecordToolCalls(t.Context(), memory.ToolCall{ExecutionID: "exec-1", Tool: "memory.recall", Args: []byte(`{}`), Status: "ok", StartedAt: now}))
	must(st.RecordHTTPRequests(t.Context(), memory.HTTPRequest{ExecutionID: "exec-1", Tool: "api.get", Method: "GET", Host: "example.com", Status: 200, Attempt: 1, StartedAt: now}))
	must(st.PutToolShape(t.Context(), "upstream:files", "read", json.RawMessage(`{"type":"object"}`)))
	_, err = st.CacheSet(alice, memory.CacheSetInput{Kind: memory.CacheUser, Key: "k", Value: []byte(`"v"`), TTL: time.Hour})
	must(err)
	_, err = st.CacheSet(bob, memory.CacheSetInput{Kind: memory.CacheMemo, Key: "m", Value: []byte(`{"rows":[]}`), TTL: time.Hour})
	must(err)
	if res.ID == "" {
		t.Fatal("no result id")
	}
	return path
}

func table(rep storecopy.CopyReport, name string) (storecopy.TableCopy, bool) {
	i := slices.IndexFunc(rep.Tables, func(t storecopy.TableCopy) bool { return t.Table == name })
	if i < 0 {
		return storecopy.TableCopy{}, false
	}
	return rep.Tables[i], true
}

func TestCopyFromSQLite(t *testing.T) {
	path := sqliteFixture(t)
	dsn := pgtest.Database(t)
	dst := open(t, dsn)
	ctx := t.Context()

	rep, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{})
	if err != nil {
		var b strings.Builder
		rep.WriteTable(&b)
		t.Fatalf("copy: %v\n%s", err, b.String())
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("first copy:\n%s", out.String())
	if !rep.Verified() {
		t.Fatal("the copy does not verify")
	}
	wantRows := map[string]int64{
		"memories": 5, "memory_tags": 6, "memory_vectors": 5, "memory_codes": 5, "entities": 2, "relations": 1,
		"memory_entities": 3, "skills": 2, "published_skills": 1, "workspace_files": 2, "results": 1,
		"executions": 1, "tool_calls": 1, "http_requests": 1, "tool_shapes": 1, "memory_counts": 2,
		"cache_entries": 2, "cache_usage": 2, "principal_usage": 4,
	}
	for name, n := range wantRows {
		t.Run(name, func(t *testing.T) {
			tc, ok := table(rep, name)
			if !ok {
				t.Fatalf("no %s in the report", name)
			}
			if !tc.Compared || !tc.Match() || tc.SourceRows != n || tc.TargetRows != n {
				t.Fatalf("%s: %+v, want %d rows compared and matching", name, tc, n)
			}
		})
	}
	for _, name := range []string{"skill_changes", "memory_code_log"} {
		if tc, ok := table(rep, name); !ok || tc.Action != storecopy.ActionNotNeeded || tc.Reason == "" {
			t.Errorf("%s: %+v, want not needed, with a reason", name, tc)
		}
	}
	if !strings.Contains(out.String(), "verified: every table copied") {
		t.Errorf("the verdict does not say that every table was copied:\n%s", out.String())
	}

	// Recall on PostgreSQL finds the copied memories, by vector and by
	// keyword, and a principal sees only its own.
	alice := tools.WithCaller(ctx, tools.Caller{Principal: "alice"})
	for _, mode := range []string{memory.ModeVector, memory.ModeKeyword, memory.ModeHybrid} {
		got, err := dst.Recall(alice, memory.RecallInput{Query: "when is the staging database backed up", Mode: mode, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) == 0 || !strings.Contains(got.Results[0].Content, "backed up every night") {
			t.Errorf("%s recall after the copy: %+v", mode, got.Results)
		}
	}
	bob := tools.WithCaller(ctx, tools.Caller{Principal: "bob"})
	got, err := dst.Recall(bob, memory.RecallInput{Query: "staging database backup", Mode: memory.ModeKeyword})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 0 {
		t.Errorf("bob recalls alice's memories: %+v", got.Results)
	}
	// The rest reads back through the store, and a new memory takes a
	// fresh id.
	if _, data, err := dst.ReadFile(alice, "notes/today.md"); err != nil || !strings.Contains(string(data), "ship the migration") {
		t.Errorf("workspace file after the copy: %q, %v", data, err)
	}
	if sk, err := dst.GetSkill(alice, "greet"); err != nil || sk.Code == "" {
		t.Errorf("skill after the copy: %+v, %v", sk, err)
	}
	if e, calls, err := dst.GetExecution(ctx, "exec-1"); err != nil || e.Status != "ok" || len(calls) != 1 {
		t.Errorf("execution after the copy: %+v %+v %v", e, calls, err)
	}
	m, err := dst.Remember(alice, memory.RememberInput{Content: "a memory written after the copy"})
	if err != nil {
		t.Fatalf("remember after the copy: %v", err)
	}
	if m.ID <= 6 {
		t.Errorf("new memory id %d collides with the copied ids", m.ID)
	}
	if _, err := dst.Forget(alice, memory.ForgetInput{IDs: []int64{m.ID}}); err != nil {
		t.Fatal(err)
	}

	// Again: refused into a target with data; appending adds nothing and
	// verifies; forcing replaces with the same rows.
	if _, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{}); !errors.Is(err, storecopy.ErrTargetNotEmpty) {
		t.Fatalf("second copy into a full target: %v, want ErrTargetNotEmpty", err)
	}
	for _, mode := range []storecopy.CopyMode{storecopy.CopyAppend, storecopy.CopyForce, storecopy.CopyVerify} {
		again, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{Mode: mode})
		if err != nil {
			var b strings.Builder
			again.WriteTable(&b)
			t.Fatalf("copy again (%s): %v\n%s", again.Mode, err, b.String())
		}
		for name, n := range wantRows {
			tc, _ := table(again, name)
			first, _ := table(rep, name)
			switch {
			case mode == storecopy.CopyAppend && (name == "memory_counts" || name == "cache_usage" || name == "principal_usage"):
				if tc.Compared {
					t.Errorf("append again: %s compared, though the target's counts include its own rows", name)
				}
			case tc.SourceRows != n || !tc.Match():
				t.Errorf("%s again, %s: %+v, want %d source rows, matching", again.Mode, name, tc, n)
			case mode == storecopy.CopyAppend && name != "memory_counts" && name != "cache_usage" && name != "principal_usage" && (tc.Inserted != 0 || tc.Kept != n):
				t.Errorf("append again, %s: inserted %d and kept %d rows, want 0 and %d", name, tc.Inserted, tc.Kept, n)
			case mode != storecopy.CopyAppend && tc.TargetSum != first.TargetSum:
				// The recalls above counted accesses on PostgreSQL: force
				// puts the source's rows back, which verify then finds.
				t.Errorf("%s again, %s: target sum %s, first copy's %s", again.Mode, name, tc.TargetSum, first.TargetSum)
			}
		}
	}
}

// TestCopyAppendKeepsTarget: a row that the target holds under the same
// key with other content is kept as it is, and said to differ.
func TestCopyAppendKeepsTarget(t *testing.T) {
	path := sqliteFixture(t)
	dst := open(t, pgtest.Database(t))
	ctx := t.Context()
	alice := tools.WithCaller(ctx, tools.Caller{Principal: "alice"})
	if _, _, err := dst.WriteFile(alice, "notes/today.md", []byte("other content")); err != nil {
		t.Fatal(err)
	}
	rep, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{Mode: storecopy.CopyAppend})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	tc, _ := table(rep, "workspace_files")
	if tc.Kept != 1 || tc.KeptDiffering != 1 || tc.Inserted != 1 || !tc.Match() {
		t.Errorf("workspace_files: %+v, want one row kept (differing) and one inserted", tc)
	}
	if _, data, err := dst.ReadFile(alice, "notes/today.md"); err != nil || string(data) != "other content" {
		t.Errorf("the kept file reads %q, %v", data, err)
	}
}

// TestCopyVerifyFindsChange: a row changed on the target after the copy
// fails the verification, which names the table.
func TestCopyVerifyFindsChange(t *testing.T) {
	path := sqliteFixture(t)
	dst := open(t, pgtest.Database(t))
	ctx := t.Context()
	if _, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Pool().Exec(ctx, `UPDATE skills SET description = 'changed' WHERE name = 'sum'`); err != nil {
		t.Fatal(err)
	}
	rep, err := storecopy.CopyFromSQLite(ctx, dst, path, storecopy.CopyOptions{Mode: storecopy.CopyVerify})
	if !errors.Is(err, storecopy.ErrCopyMismatch) {
		t.Fatalf("verify after a change: %v, want ErrCopyMismatch", err)
	}
	tc, _ := table(rep, "skills")
	if tc.Differing != 1 || tc.Match() {
		t.Errorf("skills: %+v, want one differing row", tc)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "NOT VERIFIED") {
		t.Errorf("report does not say NOT VERIFIED:\n%s", b.String())
	}
	if other, _ := table(rep, "memories"); !other.Match() {
		t.Errorf("memories: %+v, want matching", other)
	}
}

func TestCopyRefusesOtherEmbedder(t *testing.T) {
	path := sqliteFixture(t)
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: pgtest.Database(t), Embedder: memory.NewHashEmbedder(64), MaxConns: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := storecopy.CopyFromSQLite(t.Context(), st, path, storecopy.CopyOptions{}); !errors.Is(err, memory.ErrEmbedderMismatch) {
		t.Fatalf("copy into a store of another embedder: %v, want ErrEmbedderMismatch", err)
	}
}

// TestCopyFillsEmbeddings: a copy into a database in pgvector mode gives
// every copied vector its embedding (listed as rebuilt), and vector
// recall on the HNSW path finds the copied memories.
func TestCopyFillsEmbeddings(t *testing.T) {
	needPgvector(t)
	path := sqliteFixture(t)
	st := openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Vectors: postgres.VectorsPgvector, ExactSearchLimit: 1})
	rep, err := storecopy.CopyFromSQLite(t.Context(), st, path, storecopy.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Tables, func(tc storecopy.TableCopy) bool { return tc.Table == "memory_embeddings" })
	if i < 0 || rep.Tables[i].Action != storecopy.ActionRebuilt {
		t.Fatalf("the report lists no rebuilt memory_embeddings: %+v", rep.Tables)
	}
	var vectors, embeddings int64
	if err := st.Pool().QueryRow(t.Context(), `SELECT (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_embeddings)`).Scan(&vectors, &embeddings); err != nil {
		t.Fatal(err)
	}
	if vectors == 0 || embeddings != vectors || rep.Tables[i].Inserted != vectors {
		t.Fatalf("%d vectors, %d embeddings, %d inserted by the copy", vectors, embeddings, rep.Tables[i].Inserted)
	}
	alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	res, err := st.Recall(alice, memory.RecallInput{Query: "staging database backup", Mode: memory.ModeVector, Limit: 1})
	if err != nil || len(res.Results) != 1 || !strings.Contains(res.Results[0].Content, "staging database") {
		t.Fatalf("recall after copy: %+v %v", res.Results, err)
	}
}
