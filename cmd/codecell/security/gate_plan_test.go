package security

import (
	"crypto/sha256"
	"database/sql"
	binenc "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// planned runs code as a dry run and returns the plan's id.
func (h *host) planned(code string) string {
	h.t.Helper()
	rec := h.run(code, "mode", "plan")
	var r struct {
		Plan struct {
			ID string `json:"plan_id"`
		} `json:"plan"`
	}
	json.Unmarshal([]byte(strings.SplitN(rec.raw, "\n", 2)[0]), &r)
	if rec.Status != "ok" || r.Plan.ID == "" {
		h.t.Fatalf("the dry run made no plan: %s", rec.raw)
	}
	return r.Plan.ID
}

// TestGatePlanCommitFiltered (issue 19, High 3): the API echoes a
// committed step's password back; the commit's record, with details,
// shows it as the filter shows any run's result.
func TestGatePlanCommitFiltered(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	// The password goes where no field name gives it away; outside a
	// plan the run's flow knows where it came from.
	const write = `const s = await vault.get_secret(); const r = await api.create_user({name: s.password});`
	if rec := alice.run(write+` r`, "details", true); rec.Status != "ok" {
		t.Fatalf("the call outside a plan failed: %s", rec.raw)
	} else {
		noPlanted(t, "the same call outside a plan", rec.raw)
	}
	id := alice.planned(write + ` "planned"`)
	rec := alice.run("", "plan_id", id, "details", true)
	if rec.Status != "ok" || len(api.got("POST /users")) != 2 {
		t.Fatalf("the commit did not make its step: %s", rec.raw)
	}
	noPlanted(t, "the commit's record", rec.raw)
	if !strings.Contains(rec.raw, "⟦password:redacted⟧") {
		t.Errorf("the echoed password is not shown redacted: %.1500s", rec.raw)
	}
	alice.normal()
}

// TestGatePlanStore (issue 19, Low): the store holds no raw secret of a
// plan's arguments, and a plan altered in the store — its unkeyed hash
// recomputed — does not run.
func TestGatePlanStore(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	data := t.TempDir()
	s := start(t, "--config", gateConfig(t, api, nil, ""), "CODECELL_SERVER_DATA_DIR="+data)
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	id := alice.planned(`const s = await vault.get_secret(); await api.create_user({name: "dana", email: s.email, password: s.password}); "planned"`)

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "codecell.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Run("no raw secret in the store", func(t *testing.T) {
		rows, err := db.Query(`SELECT CAST(args AS TEXT) FROM plan_steps`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var args string
			rows.Scan(&args)
			noPlanted(t, "a stored plan step", args)
			n++
		}
		if n == 0 {
			t.Fatal("no plan step in the store")
		}
	})
	t.Run("altered in the store", func(t *testing.T) {
		// Whoever can write the database rewrites the step and its
		// hash, as memory/plans.go computes it.
		var hash string
		if err := db.QueryRow(`SELECT plan_hash FROM plan_steps LIMIT 1`).Scan(&hash); err != nil {
			t.Fatal(err)
		}
		evil := `{"name":"mallory","password":"x"}`
		if _, err := db.Exec(`UPDATE plan_steps SET args = CAST(? AS BLOB) WHERE plan_hash = ?`, evil, hash); err != nil {
			t.Fatal(err)
		}
		var tool string
		var prov []byte
		db.QueryRow(`SELECT tool, provenance FROM plan_steps WHERE plan_hash = ?`, hash).Scan(&tool, &prov)
		if _, err := db.Exec(`UPDATE plans SET steps_hash = ? WHERE id_hash = ?`, unkeyedStepsHash(tool, evil, prov), hash); err != nil {
			t.Fatal(err)
		}
		rec := alice.run("", "plan_id", id)
		if rec.Status != "error" || rec.Error.Kind != "plan_altered" {
			t.Errorf("an altered plan ran: %s", rec.raw)
		}
		for _, r := range api.got("POST /users") {
			if strings.Contains(r, "mallory") {
				t.Errorf("the altered step reached the API: %s", r)
			}
		}
	})
	alice.normal()
}

// unkeyedStepsHash is the steps hash of a one-step plan as the store
// computes it: SHA-256 over each part, length-prefixed.
func unkeyedStepsHash(tool, args string, provenance []byte) string {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(tool), []byte(args), provenance} {
		var n [8]byte
		binenc.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestGatePlanCommittedOnce (issue 19, third round, a11): a plan
// committed by another principal, or by its own eight times at once,
// sends its write once, for its own principal only.
func TestGatePlanCommittedOnce(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	alice := s.connect(t, aliceToken, &user{}, "api", "vault")
	bob := s.connect(t, bobToken, &user{}, "api", "vault")
	id := alice.planned(`await api.create_user({name: "once"}); "planned"`)
	if rec := bob.run("", "plan_id", id); rec.Status != "error" {
		t.Errorf("bob committed alice's plan: %.300s", rec.raw)
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if alice.run("", "plan_id", id).Status == "ok" {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := len(api.got("POST /users")); n != 1 || ok.Load() != 1 {
		t.Errorf("eight commits at once: %d succeeded, the write was sent %d times; want once", ok.Load(), n)
	}
	alice.normal()
}
