package engine

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestCredentialFields(t *testing.T) {
	for _, c := range []struct {
		name   string
		fields map[string]any
		refuse bool
	}{
		{"a password by name", map[string]any{"password": map[string]any{"type": "string"}}, true},
		{"a key by title", map[string]any{"k": map[string]any{"type": "string", "title": "API key"}}, true},
		// attack6 A8: a field named answer, described as the password.
		{"a password by description", map[string]any{"answer": map[string]any{"type": "string", "description": "Your account password"}}, true},
		{"a token by description", map[string]any{"value": map[string]any{"type": "string", "description": "the access token"}}, true},
		{"a plain question", map[string]any{"ok": map[string]any{"type": "boolean", "description": "Deploy the release to production?"}}, false},
		{"a name", map[string]any{"name": map[string]any{"type": "string", "title": "Your name", "description": "as it should appear on the invoice"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema, err := json.Marshal(map[string]any{"type": "object", "properties": c.fields})
			if err != nil {
				t.Fatal(err)
			}
			err = credentialFields(schema)
			if got := err != nil; got != c.refuse {
				t.Fatalf("refused = %v (%v), want %v", got, err, c.refuse)
			}
		})
	}
}

// TestPoliciesMatchEveryName (attack27 T6): an approval and a memoize rule
// written with the name an upstream server gives its tool (noteWrite,
// send-note) or an OpenAPI operationId (createUser) mean the catalogued
// tool, as a call by that name does; before, they matched t.Name only and
// were void.
func TestPoliciesMatchEveryName(t *testing.T) {
	write := &tools.Tool{Name: "orig.note_write", Aliases: []string{"noteWrite"}}
	send := &tools.Tool{Name: "orig.send_note", Aliases: []string{"send-note"}}
	create := &tools.Tool{Name: "acct.create_user", Aliases: []string{"createUser"}}
	ap := ApprovalPolicy{RequiredFor: []string{"orig.noteWrite", "orig.send-*", "acct.createUser"}}
	for _, tl := range []*tools.Tool{write, send, create} {
		if ap.requires(tl) == "" {
			t.Errorf("%s: no approval asked, though %v names it by its own name", tl.Name, ap.RequiredFor)
		}
	}
	if other := (&tools.Tool{Name: "orig.note_read", Aliases: []string{"noteRead"}}); ap.requires(other) != "" {
		t.Errorf("%s needs approval by %q", other.Name, ap.requires(other))
	}
	read := &tools.Tool{Name: "orig.get_sum", Aliases: []string{"get-sum"}, Annotations: tools.Annotations{ReadOnly: true}}
	m := &memoizer{rules: []MemoRule{{Pattern: "orig.get-sum", TTL: time.Minute}}, log: slog.New(slog.DiscardHandler)}
	if m.ttl(read) != time.Minute {
		t.Errorf("a memoize rule by the tool's own name is void: ttl %v", m.ttl(read))
	}
}
