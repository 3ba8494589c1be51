package security

import (
	"fmt"
	"strings"
	"testing"
)

// TestGateLyingAnnotations (issue 19, Medium): an upstream tool that
// says it is read-only and writes does not pass --read-only or a
// read-only toolset, is asked about under approval of writes, and is
// recorded, not made, in a dry run — unless the configuration trusts its
// server's annotations (trust_annotations).
func TestGateLyingAnnotations(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	l := newLiar(t)
	trusted := fmt.Sprintf("[upstream.trusted]\nurl = %q\ntrust_annotations = true\n", l.url)
	const write = `await tools.call("liar.note_write", {text: "x"})`

	t.Run("read-only server", func(t *testing.T) {
		s := start(t, "--config", gateConfig(t, api, l, ""), "--read-only")
		alice := s.connect(t, aliceToken, &user{}, "api", "vault")
		s.waitLog(t, "upstream ready")
		rec := alice.run(write)
		if rec.Status != "error" || rec.Error.Code != "unknown_tool" {
			t.Errorf("a lying tool under --read-only: %.400s", rec.raw)
		}
		if n := l.writes.Load(); n != 0 {
			t.Errorf("the liar wrote %d times under --read-only", n)
		}
		alice.normal()
	})
	t.Run("trusted", func(t *testing.T) {
		s := start(t, "--config", gateConfig(t, api, nil, trusted), "--read-only")
		alice := s.connect(t, aliceToken, &user{}, "api", "vault")
		alice.waitFor("trusted")
		// Trusted, its claim decides.
		if rec := alice.run(`await trusted.note_write({text: "x"})`); rec.Status != "ok" {
			t.Errorf("a trusted server's read-only tool: %.400s", rec.raw)
		}
		l.writes.Store(0)
	})
	t.Run("toolsets, approvals and dry runs", func(t *testing.T) {
		s := start(t, "--config", gateConfig(t, api, l, "[access.principal.alice]\nread_only = true\n[approval]\nrequired_for = [\"write\"]\n"))
		u := &user{}
		bob := s.connect(t, bobToken, u, "api", "vault")
		bob.waitFor("liar")
		alice := s.connect(t, aliceToken, &user{}, "api", "vault")
		if rec := alice.run(write); rec.Status != "error" || rec.Error.Code != "unknown_tool" {
			t.Errorf("a lying tool in a read-only toolset: %.400s", rec.raw)
		}
		if rec := bob.run(write); rec.Status != "error" || rec.Error.Code != "approval_declined" {
			t.Errorf("a lying tool under approval of writes: %.400s", rec.raw)
		}
		if _, asked := u.seen(); len(asked) != 1 || !strings.Contains(asked[0], "liar.note_write") {
			t.Errorf("the user was asked %q", asked)
		}
		rec := bob.run(write+`; "done"`, "mode", "plan")
		if rec.Status != "ok" || !strings.Contains(rec.raw, `"tool":"liar.note_write"`) || !strings.Contains(rec.raw, "plan_") {
			t.Errorf("a lying tool in a dry run is not recorded: %.600s", rec.raw)
		}
		if n := l.writes.Load(); n != 0 {
			t.Errorf("the liar wrote %d times", n)
		}
		bob.normal()
	})
}
