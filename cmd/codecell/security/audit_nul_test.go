package security

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory/postgres/pgserver"
)

// TestAuditKeepsRunsWithNUL (issue 19, attack9 D3): on PostgreSQL, whose
// text cannot hold U+0000, a program with a NUL in its code (a comment)
// or in the message of the error it threw was missing from the audit
// log: the insert failed and the run's record was dropped. Every run is
// audited now, its code and error with each NUL shown as U+FFFD, and the
// code's hash is the hash of the code as it ran.
func TestAuditKeepsRunsWithNUL(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	srv, err := pgserver.Start(ctx)
	cancel()
	if err != nil {
		t.Skipf("PostgreSQL: %v", err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, "CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN="+dsn)
	alice := s.open(t, aliceToken)
	runs := []struct{ code, status string }{
		{`await memory.remember({content: "control run"}); return 1`, "ok"},
		{"await memory.remember({content: \"a NUL in a comment\"}); return 2 // \x00", "ok"},
		{`await memory.remember({content: "a run that throws"}); throw new Error("x" + String.fromCharCode(0) + "y")`, "error"},
	}
	for _, r := range runs {
		if rec := alice.run(r.code); rec.Status != r.status {
			t.Fatalf("run %q: %.300s", r.code, rec.raw)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The audit writes in batches: wait until it has the three runs, or
	// until the server has logged an audit failure.
	type row struct{ code, hash, errMsg string }
	var got []row
	for deadline := time.Now().Add(30 * time.Second); ; {
		got = got[:0]
		rows, err := conn.Query(t.Context(), `SELECT code, code_hash, error_message FROM executions WHERE principal = 'alice' ORDER BY started_at`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.code, &r.hash, &r.errMsg); err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if len(got) == len(runs) || strings.Contains(s.stderr.String(), "msg=audit") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got) != len(runs) {
		t.Fatalf("the audit log holds %d of alice's %d runs; server log:\n%s", len(got), len(runs), s.stderr.String())
	}
	for i, r := range got {
		sum := sha256.Sum256([]byte(runs[i].code))
		if want := strings.ReplaceAll(runs[i].code, "\x00", "\uFFFD"); r.code != want || r.hash != hex.EncodeToString(sum[:]) {
			t.Errorf("audited run %d: code %q, hash %s; want %q and the hash of the code as it ran", i, r.code, r.hash, want)
		}
	}
	if !strings.Contains(got[2].errMsg, "x\uFFFDy") {
		t.Errorf("audited error message %q, want the thrown message with U+FFFD for its NUL", got[2].errMsg)
	}
	alice.normal()
}
