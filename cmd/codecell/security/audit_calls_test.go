package security

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestAuditToolCallRowsBounded (issue 19, attack9's D9): the audit kept
// a row per tool call (about 290 bytes with its index and WAL) for
// memory.audit_max_age, bounded per principal only by the tool-call rate
// limit: one principal's cheap calls kept 2.3 GiB a day. Past a
// principal's daily allowance (limits.audit_call_rows_per_day, here
// 200), a run's calls are kept as one row per tool and outcome with
// their count: bob's 1,000 cache.get calls must keep at most 200 rows
// and a few aggregates, and still account for every call; alice's calls
// keep their rows.
func TestAuditToolCallRowsBounded(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := start(t, "CODECELL_SERVER_DATA_DIR="+data, "CODECELL_LIMITS_AUDIT_CALL_ROWS_PER_DAY=200")
	bob := s.open(t, bobToken)
	for i := range 2 {
		rec := bob.run(`await Promise.all(Array.from({length: 500}, (_, i) => cache.get("k" + i))); return 1`, "timeout_ms", 60000)
		if rec.Status != "ok" {
			t.Fatalf("bob's run %d: %.300s", i, rec.raw)
		}
	}
	alice := s.open(t, aliceToken)
	if rec := alice.run(`for (let i = 0; i < 5; i++) await cache.get("a" + i); return 1`); rec.Status != "ok" {
		t.Fatalf("alice's run: %.300s", rec.raw)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "codecell.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The audit is written off the requests' path: wait for the three
	// runs' records (their executions say how many calls they made).
	count := func(q string) (n int) {
		if err := db.QueryRow(q).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	const ended = `SELECT coalesce(sum(tool_calls), 0) FROM executions WHERE status = 'ok'`
	for deadline := time.Now().Add(time.Minute); count(ended) < 1005 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if n := count(ended); n < 1005 {
		t.Fatalf("the runs' records are not in the audit log: %d calls recorded", n)
	}
	const of = ` FROM tool_calls JOIN executions e ON e.id = execution_id WHERE e.principal = `
	rows := count(`SELECT count(*)` + of + `'bob'`)
	t.Logf("bob's 1,000 calls: %d rows", rows)
	if rows > 200+2 {
		t.Fatalf("bob's 1,000 calls keep %d rows of the audit log, past the allowance of 200 a day", rows)
	}
	if calls := count(`SELECT sum(max(calls, 1))` + of + `'bob'`); calls != 1000 {
		t.Errorf("bob's rows account for %d calls, want 1000", calls)
	}
	if n := count(`SELECT count(*)` + of + `'bob' AND calls > 0 AND args_hash = ''`); n < 1 {
		t.Errorf("no row of bob's says it was aggregated (calls > 0)")
	}
	if n := count(`SELECT count(*)` + of + `'alice' AND calls = 0`); n != 5 {
		t.Errorf("alice's 5 calls keep %d rows of their own, want 5", n)
	}
}
