package security

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestDryRunPlansKeptOnDisk (issue 19, attack7's B2): a dry run's plan
// was bounded at 4 MiB, but nothing bounded how many plans a principal
// kept for sandbox.plan_ttl: 12 dry runs of one 3.9 MB write in 3 s grew
// the data directory by 79 MiB, and at the rate limit one principal
// filled the disk for everyone. A principal's live plans are bounded
// together (limits.max_principal_plan_bytes): past it a dry run's plan is
// not saved, and the run says why; another principal still saves its own.
func TestDryRunPlansKeptOnDisk(t *testing.T) {
	data := t.TempDir()
	s := ruledWith(t, "", "CODECELL_SERVER_DATA_DIR="+data)
	alice := s.open(t, aliceToken)
	before := dirBytes(data)
	const runs = 12
	saved := 0
	for i := range runs {
		rec := alice.run(`const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"; const parts = []; for (let i = 0; i < 65536 / 8; i++) { let w = ""; for (let j = 0; j < 8; j++) w += a[(Math.random() * 62) | 0]; parts.push(w) } const s = parts.join("").repeat(59); await http.post_webhook({url: "https://hooks.example/x", payload: {v: s}}); return s.length`, "mode", "plan", "timeout_ms", 60000)
		if rec.Status != "ok" {
			t.Fatalf("dry run %d: %.500s", i, rec.raw)
		}
		if strings.Contains(rec.raw, `"plan_id"`) {
			saved++
		} else if at := strings.Index(rec.raw, "the plan was not saved"); at >= 0 && strings.Contains(rec.raw[at:], "limits.max_principal_plan_bytes") {
			if i == runs-1 {
				t.Logf("the last dry run says: %.500s", rec.raw[at:])
			}
		} else {
			t.Errorf("dry run %d saved no plan and does not say the quota: %.300s … %.600s", i, rec.raw, rec.raw[max(0, len(rec.raw)-600):])
		}
	}
	grew := dirBytes(data) - before
	t.Logf("%d dry runs of one 3.9 MB write each saved %d plans and grew the data directory by %d MiB", runs, saved, grew>>20)
	if saved > 1 {
		t.Errorf("one principal keeps %d plans of 3.9 MB: its live plans are not bounded together (default 8 MiB)", saved)
	}
	if grew > 16<<20 {
		t.Errorf("one principal's dry runs keep %d MiB in the store (%d runs)", grew>>20, runs)
	}
	bob := s.open(t, bobToken)
	if rec := bob.run(`await http.post_webhook({url: "https://hooks.example/x", payload: {v: 1}}); return 1`, "mode", "plan"); !strings.Contains(rec.raw, `"plan_id"`) {
		t.Errorf("another principal's small plan was not saved: %.400s", rec.raw)
	}
}

// elicitFunc is an MCP host's elicitation handler as a function.
type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// TestClaimedPlansKeepNoArguments (issue 19, attack8 C1): a plan leaves
// limits.max_principal_plan_bytes when a commit claims it, but its steps
// (the writes' arguments) stayed in the store for memory.audit_max_age
// (30 days) — after the commit, and for good when the commit never
// finished. Here each commit, on protocol 2026-07-28, stops to ask the
// user about its guarded write (input_required) and the client never
// sends the retry: 12 dry runs of one 3.9 MB write, each claimed so,
// kept 47 MB of arguments in plan_steps. The claim now clears them (the
// commit carries its steps, and a waiting commit's journal has its own
// bound, memory.max_principal_journal_bytes).
func TestClaimedPlansKeepNoArguments(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := ruledWith(t, "[approval]\nrequired_for = [\"http.post_webhook\"]\n", "CODECELL_SERVER_DATA_DIR="+data)
	asked := make(chan struct{}, 1)
	// The user never answers: the client's retry waits until the test
	// gives up on it.
	a := s.connect26With(t, aliceToken, client.WithElicitationHandler(elicitFunc(func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})))
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "codecell.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := dirBytes(data)
	const runs = 12
	for i := range runs {
		id := a.planned(`const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"; const parts = []; for (let i = 0; i < 65536 / 8; i++) { let w = ""; for (let j = 0; j < 8; j++) w += a[(Math.random() * 62) | 0]; parts.push(w) } const s = parts.join("").repeat(59); await http.post_webhook({url: "https://hooks.example/x", payload: {v: s}}); return s.length`)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		done := make(chan error, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "execute_code"
			req.Params.Arguments = map[string]any{"plan_id": id}
			_, err := a.c.CallTool(ctx, req)
			done <- err
		}()
		select {
		case <-asked:
		case err := <-done:
			cancel()
			t.Fatalf("commit %d ended without asking the user: %v", i, err)
		}
		// The commit ended with input_required; its retry is never sent.
		cancel()
		<-done
	}
	var committing, held int64
	if err := db.QueryRow(`SELECT count(*) FROM plans WHERE state = 'committing'`).Scan(&committing); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COALESCE(sum(length(args)) + sum(COALESCE(length(provenance), 0)), 0) FROM plan_steps`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	var journals int64
	if err := db.QueryRow(`SELECT COALESCE(sum(length(value)), 0) FROM cache_entries WHERE kind = 'mrtr-journal'`).Scan(&journals); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d dry runs of one 3.9 MB write, each claimed by a commit never retried: %d plans committing, %d bytes of arguments in plan_steps, %d KiB of waiting commits' journals (kept 15 minutes, within limits.max_principal_journal_bytes); the data directory grew by %d MiB, with SQLite's write-ahead log", runs, committing, held, journals>>10, (dirBytes(data)-before)>>20)
	if committing != runs {
		t.Fatalf("%d plans committing, want %d: the test did not leave its commits waiting", committing, runs)
	}
	if held > 1<<20 {
		t.Errorf("one principal's claimed plans keep %d KiB of arguments in the store (%d plans), out of limits.max_principal_plan_bytes, for memory.audit_max_age", held>>10, runs)
	}
}
