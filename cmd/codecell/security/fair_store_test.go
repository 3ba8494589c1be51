package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheKeepsProvenance (issue 19, high 5): a crm value stored with
// cache.set and read back in a new session reached http.post_webhook
// despite the rule crm.* → http.*. A cache entry, and a memoised result,
// now keep the sources of their value, as memories and workspace files
// do.
func TestCacheKeepsProvenance(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n\n[cache.memoize]\n\"util.echo\" = \"5m\"\n"), 0o600)
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--config", cfg, "--catalog", catalog)
	const get = `const c = await crm.get_contact({id: "c_8812"}); const v = c.email;`
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}})`
	}
	first := s.open(t, aliceToken)
	if rec := first.run(get + `await cache.set("plain", v); await cache.set("object", {contact: {mail: v}}, {ttl: "10m"}); await util.echo({text: v}); 1`); rec.Status != "ok" {
		t.Fatalf("caching the value: %.400s", rec.raw)
	}
	// A new session of alice's, whose runs never saw crm.
	later := s.open(t, aliceToken)
	for _, tc := range []struct{ name, code string }{
		{"cache.get", `const r = await cache.get("plain"); ` + post("r.value")},
		{"cache.get of an object", `const r = await cache.get("object"); ` + post("r.value.contact.mail.toUpperCase()")},
		{"a memoised result", `const r = await util.echo({text: "anna.lindqvist@northwind.se"}); ` + post("r.text")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := later.run(tc.code)
			if rec.Status != "error" || rec.Error == nil || rec.Error.Code != "policy_violation" {
				t.Fatalf("the value reached http through %s: %.400s", tc.name, rec.raw)
			}
			if strings.HasPrefix(tc.name, "a memoised") && !strings.Contains(rec.raw, `"cached":1`) {
				t.Errorf("util.echo was not answered from the memo cache: %.400s", rec.raw)
			}
			if strings.Contains(rec.raw, "anna.lindqvist") {
				t.Errorf("the refusal shows the value: %.400s", rec.raw)
			}
		})
	}
	// What was cached from elsewhere passes.
	if rec := later.run(`await cache.set("mine", "a plain value of no source"); const r = await cache.get("mine"); ` + post("r.value")); rec.Status != "ok" {
		t.Fatalf("an innocent cached value was refused: %.400s", rec.raw)
	}
	later.normal()
}
