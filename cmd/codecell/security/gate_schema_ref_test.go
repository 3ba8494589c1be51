package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaReadsNothingLocal (issue 19, a7 and a7b): the schema
// compiler's default loader read file:// URLs, so a program's skill
// schema could read a local file (and show it through validation
// messages), probe which files exist, or open /proc/self/fd/N and read
// codecell's own pipes to its upstream servers and workers. A schema is
// one document: every reference out of it is refused at once, the same
// way whether the target exists or not, and nothing is read.
func TestSchemaReadsNothingLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const secret = "ZZsecretTOKEN-0123456789"
	secretFile := filepath.Join(dir, "mcp.json")
	os.WriteFile(secretFile, []byte(`{"env":{"GITHUB_TOKEN":"`+secret+`"}}`), 0o600)
	s := start(t)
	bob := s.open(t, bobToken)
	refs := []string{
		"file://" + secretFile,
		"file://" + secretFile + "#/env",
		"file://" + filepath.Join(dir, "nonexistent.json"),
		"file:///etc/hosts",
	}
	for n := range 12 {
		refs = append(refs, fmt.Sprintf("file:///proc/self/fd/%d", n))
	}
	var answers []string
	for i, ref := range refs {
		rec := bob.run(fmt.Sprintf(`try { await skills.save({name: "s%d", description: "x", code: "return 1", inputSchema: {type: "object", properties: {a: {$ref: %q}}}}); return "saved" } catch (e) { return e.message }`, i, ref), "timeout_ms", 10000)
		if rec.Status != "ok" || !strings.Contains(string(rec.Result), "references to other documents are not followed") {
			t.Errorf("$ref %s: %.400s", ref, rec.raw)
		}
		if strings.Contains(rec.raw, secret) {
			t.Errorf("$ref %s: the file's content reached the program: %.400s", ref, rec.raw)
		}
		// The answer says the same whether the file exists or not.
		doc, _, _ := strings.Cut(ref, "#")
		answers = append(answers, strings.ReplaceAll(string(rec.Result), doc, "REF"))
	}
	for i, a := range answers {
		if a != answers[0] {
			t.Errorf("$ref %s answers differently from %s: %s vs %s", refs[i], refs[0], a, answers[0])
		}
	}
	bob.normal()
}
