package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/codecell/codecell/tools"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fetchTimeout bounds fetching a document.
const fetchTimeout = 60 * time.Second

// cacheMeta is what the cache keeps beside a fetched document.
type cacheMeta struct {
	URL          string    `json:"url"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Fetched      time.Time `json:"fetched"`
}

// fetchSpec returns the document's bytes: the file, or the URL's body.
// A fetched document is kept in the cache directory with its ETag; the
// next fetch asks whether it changed, and when the server cannot be
// reached (or answers with an error) the kept copy is used, with a
// warning. cached says the bytes came from the cache.
func (s *Source) fetchSpec(ctx context.Context) (data []byte, cached bool, err error) {
	if !s.set.specIsURL {
		data, err := os.ReadFile(s.cfg.Spec)
		if err != nil {
			return nil, false, fmt.Errorf("read the document: %w", err)
		}
		return data, false, nil
	}
	var docPath, metaPath string
	var meta cacheMeta
	var have []byte
	if s.opts.CacheDir != "" {
		docPath = filepath.Join(s.opts.CacheDir, s.category+".spec")
		metaPath = filepath.Join(s.opts.CacheDir, s.category+".meta.json")
		if b, err := os.ReadFile(metaPath); err == nil && json.Unmarshal(b, &meta) == nil && meta.URL == s.cfg.Spec {
			if d, err := os.ReadFile(docPath); err == nil {
				have = d
			}
		}
	}
	body, m, status, err := s.download(ctx, meta, have != nil)
	switch {
	case err == nil && status == http.StatusNotModified && have != nil:
		return have, true, nil
	case err == nil && status == http.StatusOK:
		if docPath != "" {
			if werr := writeCache(docPath, metaPath, body, m); werr != nil {
				s.log.Warn("could not cache the document", "err", werr)
			}
		}
		return body, false, nil
	case err == nil:
		err = fmt.Errorf("fetch %s: HTTP %d", shownURL(s.cfg.Spec), status)
	}
	err = hideURL(err, s.cfg.Spec)
	if have != nil {
		s.log.Warn("using the cached document: fetching it failed", "err", err.Error(), "fetched", meta.Fetched)
		return have, true, nil
	}
	return nil, false, err
}

// download GETs the document, conditionally when a copy is kept.
func (s *Source) download(ctx context.Context, meta cacheMeta, conditional bool) ([]byte, cacheMeta, int, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.Spec, nil)
	if err != nil {
		return nil, meta, 0, fmt.Errorf("fetch the document: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	if conditional {
		if meta.ETag != "" {
			req.Header.Set("If-None-Match", meta.ETag)
		}
		if meta.LastModified != "" {
			req.Header.Set("If-Modified-Since", meta.LastModified)
		}
	}
	client := &http.Client{Transport: s.client.Transport, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		if r.URL.Scheme != "https" && !(s.set.specLoopback && isLoopback(r.URL.Hostname())) {
			return fmt.Errorf("redirected to %s, which is not https", r.URL.Redacted())
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, meta, 0, fmt.Errorf("fetch the document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, meta, resp.StatusCode, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, meta, 0, fmt.Errorf("fetch the document: %w", err)
	}
	if len(body) > MaxDocumentBytes {
		return nil, meta, 0, fmt.Errorf("fetch the document: more than %d bytes", MaxDocumentBytes)
	}
	return body, cacheMeta{URL: s.cfg.Spec, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), Fetched: time.Now().UTC()}, http.StatusOK, nil
}

// writeCache replaces the kept document and its metadata, each by a
// rename, the metadata last.
func writeCache(docPath, metaPath string, body []byte, meta cacheMeta) error {
	if err := os.MkdirAll(filepath.Dir(docPath), 0o700); err != nil {
		return err
	}
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{docPath, body}, {metaPath, m}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, f.path); err != nil {
			return err
		}
	}
	return nil
}

// shownURL is a document's URL as errors and logs show it: its scheme
// and host, as its user info, path, query or fragment may hold a key (a
// description served behind a signed URL).
func shownURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw // a file
	}
	return tools.URLOrigin(raw)
}

// hideURL is err with every part of the document's URL that may hold a
// key (tools.URLSecrets: its user info, path, query, fragment) replaced,
// wherever its text holds them: net/http quotes the URL in its errors.
func hideURL(err error, raw string) error {
	if err == nil || !strings.Contains(raw, "://") {
		return err
	}
	r := tools.SecretReplacer(tools.URLSecrets(raw), 4, "…")
	if r == nil {
		return err
	}
	msg := err.Error()
	if shown := r.Replace(msg); shown != msg {
		return errors.New(shown)
	}
	return err
}
