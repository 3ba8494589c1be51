package security

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditLogKeepsSessionHashes (issue 19, third round L9): the audit
// log keeps a run's MCP session as the hash the server log writes
// (session_hash), never the session ID, so that the two join and neither
// holds the ID.
func TestAuditLogKeepsSessionHashes(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := start(t, "CODECELL_SERVER_DATA_DIR="+data)
	ss := s.open(t, aliceToken)
	if ss.id == "" {
		t.Fatal("no session id")
	}
	if rec := ss.run(`1 + 1`); rec.Status != "ok" {
		t.Fatalf("run: %s", rec.raw)
	}
	sum := sha256.Sum256([]byte(ss.id))
	want := hex.EncodeToString(sum[:4])
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "codecell.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sessions []string
	for deadline := time.Now().Add(30 * time.Second); len(sessions) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sessions = nil
		rows, err := db.Query(`SELECT session FROM executions`)
		if err != nil {
			continue
		}
		for rows.Next() {
			var v string
			rows.Scan(&v)
			sessions = append(sessions, v)
		}
		rows.Close()
	}
	if len(sessions) == 0 {
		t.Fatal("the run is not in the audit log")
	}
	for _, v := range sessions {
		if v == ss.id || strings.Contains(v, ss.id) {
			t.Errorf("the audit log keeps the session ID itself: %q", v)
		} else if v != want {
			t.Errorf("the audit log keeps session %q, want its hash %q", v, want)
		}
	}
	if !strings.Contains(s.stderr.String(), "session_hash="+want) {
		t.Errorf("the server log has no session_hash=%s to join the audit log with:\n%.2000s", want, s.stderr.String())
	}
}
