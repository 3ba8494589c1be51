package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestArtifactReadsBounded (issue 19, attack10 "not finished"): a hostile
// API answers 15 MB of distinct e-mail addresses as
// application/octet-stream, kept as an artifact, which bob reads from 16
// resources/read requests at once. Each read filtered the whole artifact
// as text with his vault, outside any run and holding nothing: the reads
// did not end in 300 s. A read now holds what it takes of the results in
// flight, and an artifact's text past filter.max_budget_bytes is read by
// pages, each filtered alone: every read is answered with a page and
// where the next begins, no address shows, and alice's runs go on.
func TestArtifactReadsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < 15<<20; i++ {
		fmt.Fprintf(&b, "u%07d@x%d.example.com\n", i, i%89)
	}
	mails := b.String()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/image" {
			// Bytes that are not text (one NUL), read whole as a blob.
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x00" + mails))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte(mails))
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	spec := filepath.Join(dir, "dump.json")
	os.WriteFile(spec, []byte(`{"openapi": "3.0.3", "info": {"title": "dump", "version": "1"}, "paths": {
		"/dump": {"get": {"operationId": "get_dump", "responses": {"200": {"description": "a dump", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}}},
		"/image": {"get": {"operationId": "get_image", "responses": {"200": {"description": "an image", "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}}}}}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("[openapi.dump]\nspec = \""+spec+"\"\nbase_url = \""+api.URL+"\"\n"), 0o600)
	s := start(t, "--config", cfg)
	bob, alice := s.open(t, bobToken), s.open(t, aliceToken)
	keep := func(tool string) string {
		t.Helper()
		var uri string
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			rec := bob.run(`(await dump.`+tool+`({})).uri`, "timeout_ms", 60000)
			if rec.Status == "ok" && json.Unmarshal(rec.Result, &uri) == nil && strings.HasPrefix(uri, "codecell://results/") {
				return uri
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %.600s", tool, rec.raw)
			}
		}
	}
	uri := keep("get_dump")
	read := func(ctx context.Context, uri string) string {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": map[string]any{"uri": uri}})
		code, out, err := post(ctx, bob.url, bob.header(), string(body))
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d %s", code, lastMessage(out))
	}
	address := regexp.MustCompile(`u\d{7}@x\d+\.example\.com`)
	page := func(got string) (next int, more bool) {
		var r struct {
			Result struct {
				Contents []struct {
					Text string `json:"text"`
				} `json:"contents"`
			} `json:"result"`
		}
		var p struct {
			Next int    `json:"next"`
			More bool   `json:"more"`
			Data string `json:"data"`
		}
		if !strings.HasPrefix(got, "200 ") || json.Unmarshal([]byte(strings.TrimPrefix(got, "200 ")), &r) != nil || len(r.Result.Contents) != 1 ||
			json.Unmarshal([]byte(r.Result.Contents[0].Text), &p) != nil || p.Data == "" {
			t.Fatalf("a read of the artifact: %.600s", got)
		}
		if a := address.FindString(p.Data); a != "" {
			t.Fatalf("a page of the artifact shows %s: %.300s", a, p.Data)
		}
		return p.Next, p.More
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	at := time.Now()
	var wg sync.WaitGroup
	answers := make([]string, 16)
	for i := range answers {
		wg.Go(func() { answers[i] = read(ctx, uri) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var slowest time.Duration
	runs := 0
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
			at := time.Now()
			if rec := alice.run(`1+1`); rec.Status != "ok" || string(rec.Result) != "2" {
				t.Errorf("alice's run while bob read the artifact: %.400s", rec.raw)
			}
			slowest = max(slowest, time.Since(at))
			runs++
			time.Sleep(100 * time.Millisecond) // within alice's rate limit
		}
	}
	took := time.Since(at)
	t.Logf("16 reads at once of a 15 MB artifact of e-mail addresses: %v; peak RSS %d → %d MiB; alice's %d runs of 1+1 meanwhile, the slowest %v (load %s)",
		took.Round(time.Millisecond), before>>20, peakRSS(pid)>>20, runs, slowest.Round(time.Millisecond), loadAverage())
	for _, got := range answers {
		if next, more := page(got); !more || next <= 0 {
			t.Fatalf("a whole read of the artifact answered the page up to %d (more: %v)", next, more)
		}
	}
	first := answers[0]
	// The same bytes with a NUL, as an image: each read masks the whole
	// blob, one principal's few at a time.
	image := keep("get_image")
	at = time.Now()
	for i := range answers {
		wg.Go(func() { answers[i] = read(ctx, image) })
	}
	wg.Wait()
	took = time.Since(at)
	blobs := 0
	for _, got := range answers {
		var r struct {
			Result struct {
				Contents []struct {
					Blob []byte `json:"blob"`
				} `json:"contents"`
			} `json:"result"`
		}
		if strings.Contains(got, `"error"`) && strings.Contains(got, "while waiting to reserve") && strings.Contains(got, "ask again") {
			continue // waited for its bytes past sandbox.max_timeout
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(got, "200 ")), &r) != nil || len(r.Result.Contents) != 1 || len(r.Result.Contents[0].Blob) != len(mails)+1 {
			t.Fatalf("a read of the image: %.600s", got)
		}
		blobs++
		if a := address.Find(r.Result.Contents[0].Blob); a != nil {
			t.Fatalf("the image shows %s", a)
		}
	}
	t.Logf("16 reads at once of a 15 MB image of e-mail addresses: %v, %d answered the blob, the others waited too long; peak RSS %d MiB (load %s)",
		took.Round(time.Millisecond), blobs, peakRSS(pid)>>20, loadAverage())
	if blobs == 0 {
		t.Error("no read of the image was answered")
	}
	// The reader pages on from where a page said the next begins, up to
	// the largest budget at a time.
	next, _ := page(first)
	next, more := page(read(t.Context(), fmt.Sprintf("%s?offset=%d&length=%d", uri, next, 256<<10)))
	if !more || next < 200<<10 {
		t.Fatalf("a page of 256 KiB ended at %d (more: %v)", next, more)
	}
	// A large artifact's items would filter it whole: refused, saying
	// how to read it.
	if got := read(t.Context(), uri+"/items"); !strings.Contains(got, `"error"`) || !strings.Contains(got, "filter.max_budget_bytes") || !strings.Contains(got, "?offset=0") {
		t.Errorf("the items of a 15 MB artifact: %.600s", got)
	}
	bob.normal()
}
