package security

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/mcpserver/oauth/oauthtest"
)

// TestOAuthPrincipalsAreNamespaced (issue 19, OAuth identities): a JWT
// with sub "alice" was the static-token principal alice, and the same
// sub from two issuers was one principal: each read the other's files.
// An OAuth principal is now its claim in its issuer's namespace; a
// configured mapping merges identities, and only then.
func TestOAuthPrincipalsAreNamespaced(t *testing.T) {
	t.Parallel()
	one, two := oauthtest.New(t), oauthtest.New(t)
	const resource = "http://codecell.test/mcp"
	config := func(extra string) string {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		os.WriteFile(cfg, []byte("[auth.oauth]\nissuers = [\""+one.URL+"\", \""+two.URL+"\"]\nresource = \""+resource+"\"\n"+extra), 0o600)
		return cfg
	}
	s := start(t, "--config", config(""))
	static := s.open(t, aliceToken)
	if rec := static.run(`await workspace.write("secret.txt", "the static alice's secret"); 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	fromOne := s.open(t, one.Sign(t, one.Claims("alice", resource)))
	if rec := fromOne.run(`await workspace.write("mine.txt", "the first issuer's alice's secret"); 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	fromTwo := s.open(t, two.Sign(t, two.Claims("alice", resource)))
	for _, tc := range []struct {
		name string
		ss   *session
		file string
	}{
		{"an OAuth alice reads the static alice's file", fromOne, "secret.txt"},
		{"another issuer's alice reads the static alice's file", fromTwo, "secret.txt"},
		{"another issuer's alice reads the first one's file", fromTwo, "mine.txt"},
		{"the static alice reads an OAuth alice's file", static, "mine.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.ss.run(`(await workspace.read(` + "`" + tc.file + "`" + `)).data`)
			if rec.Status != "error" || strings.Contains(rec.raw, "s secret") {
				t.Fatalf("%s: %.400s", tc.file, rec.raw)
			}
		})
	}
	if rec := fromOne.run(`(await workspace.read("mine.txt")).data`); rec.Status != "ok" || !strings.Contains(rec.raw, "first issuer") {
		t.Fatalf("the first issuer's alice lost her own file: %.400s", rec.raw)
	}
	fromTwo.normal()

	// A static token named like an issuer's principals is refused at
	// start, saying what to change.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--http", "127.0.0.1:0", "--config", config(""))
	cmd.Env = append(os.Environ(), "CODECELL_SERVER_DATA_DIR="+t.TempDir(), "CODECELL_AUTH_TOKENS="+one.URL+"#bob="+bobToken)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput() // a server that starts is killed after a minute
	if err == nil || !strings.Contains(string(out), "auth.tokens[0].principal") || !strings.Contains(string(out), "principal_prefix") || strings.Contains(string(out), bobToken) {
		t.Fatalf("a static principal named like an issuer's: %v\n%s", err, out)
	}

	// An explicit mapping merges one identity with the static alice.
	merged := start(t, "--config", config("[auth.oauth.principals]\n\""+one.URL+"#alice\" = \"alice\"\n"))
	merged.open(t, aliceToken).run(`await workspace.write("shared.txt", "one alice"); 1`)
	if rec := merged.open(t, one.Sign(t, one.Claims("alice", resource))).run(`(await workspace.read("shared.txt")).data`); rec.Status != "ok" || !strings.Contains(rec.raw, "one alice") {
		t.Fatalf("the mapped identity is not the static alice: %.400s", rec.raw)
	}
}
