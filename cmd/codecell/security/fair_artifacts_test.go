package security

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArtifactsPassTheFilter (issue 19, low): binary content a tool
// returned was kept as an artifact and read back as a resource byte for
// byte: an "image" whose bytes were secrets bypassed the filter. Content
// that decodes as text is now filtered as text; other content has the
// sensitive values in its text masked in place.
func TestArtifactsPassTheFilter(t *testing.T) {
	t.Parallel()
	const key, mail = "AKIAIOSFODNN7EXAMPLE", "ada.lovelace@northwind.se"
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x2ctEXtComment\x00deployed with "+key+" by "+mail), 0x00, 0xff, 'I', 'D', 'A', 'T', 0x78, 0x9c)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/badge.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(png)
		case "/notes":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte("release notes: rotate " + key + ", ask " + mail + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	spec := filepath.Join(dir, "pics.json")
	os.WriteFile(spec, []byte(`{"openapi": "3.0.3", "info": {"title": "pics", "version": "1"}, "paths": {
		"/badge.png": {"get": {"operationId": "get_badge", "responses": {"200": {"description": "a badge", "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}}},
		"/notes": {"get": {"operationId": "get_notes", "responses": {"200": {"description": "notes", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}}}}}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("[openapi.pics]\nspec = \""+spec+"\"\nbase_url = \""+api.URL+"\"\n"), 0o600)
	s := start(t, "--config", cfg)
	alice := s.open(t, aliceToken)

	uri := func(tool string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			rec := alice.run(`(await pics.` + tool + `({})).uri`)
			var u string
			if rec.Status == "ok" && json.Unmarshal(rec.Result, &u) == nil && strings.HasPrefix(u, "codecell://results/") {
				return u
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %.400s", tool, rec.raw)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	read := func(uri string) (text string, blob []byte, meta json.RawMessage) {
		t.Helper()
		var r struct {
			Contents []struct {
				Text string          `json:"text"`
				Blob string          `json:"blob"`
				Meta json.RawMessage `json:"_meta"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(alice.rpc("resources/read", map[string]any{"uri": uri}), &r); err != nil || len(r.Contents) != 1 {
			t.Fatalf("read %s: %v %+v", uri, err, r)
		}
		b, _ := base64.StdEncoding.DecodeString(r.Contents[0].Blob)
		return r.Contents[0].Text, b, r.Contents[0].Meta
	}

	t.Run("an image whose text holds secrets", func(t *testing.T) {
		_, blob, meta := read(uri("get_badge"))
		if bytes.Contains(blob, []byte(key)) || bytes.Contains(blob, []byte(mail)) {
			t.Fatalf("the image's bytes show the secrets: %q", blob)
		}
		if len(blob) != len(png) || !bytes.HasPrefix(blob, []byte("\x89PNG")) || !strings.Contains(string(meta), "masked") {
			t.Fatalf("the image was not kept with the values masked: %q, meta %s", blob, meta)
		}
	})
	t.Run("bytes that are text", func(t *testing.T) {
		text, blob, _ := read(uri("get_notes"))
		if strings.Contains(text+string(blob), key) || strings.Contains(text+string(blob), mail) || !strings.Contains(text, "release notes") {
			t.Fatalf("the notes read as %q / %q", text, blob)
		}
	})
	alice.normal()
}
