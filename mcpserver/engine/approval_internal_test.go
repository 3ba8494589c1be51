package engine

import (
	"encoding/json"
	"testing"
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
