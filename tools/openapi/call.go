package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Error codes of calls, besides http_<status>.
const (
	CodeUnreachable     = "unreachable"      // no response: connection refused, DNS, reset
	CodeTimeout         = "timeout"          // the request took longer than the source's timeout
	CodeRedirectRefused = "redirect_refused" // the API redirected to a host not allowed
	CodeRateLimited     = "rate_limited"     // the source's rate limit leaves no room before the deadline
	CodeTooLarge        = "response_too_large"
	CodeBinary          = "binary_response" // a binary response and nowhere to keep it
	CodeHostRefused     = "host_refused"    // a pagination link to a host not allowed, or from https to http
)

// maxErrorBody bounds the API's error body quoted in an error message.
const maxErrorBody = 2048

// maxAttempts bounds the attempts of one call: retries are for idempotent
// methods only, after a connection failure or a 429 or 503 with
// Retry-After, and only when the wait ends before the run's deadline.
const maxAttempts = 3

// maxRetryWait bounds how long one retry waits; when the call's context
// has no deadline to measure the wait against, maxBlindRetryWait does.
const (
	maxRetryWait      = 60 * time.Second
	maxBlindRetryWait = 2 * time.Second
)

// HTTPError is a non-2xx response, as the cause (Unwrap) of the
// *tools.Error a call returns with code http_<status>.
type HTTPError struct {
	Status int
	// Body is the API's error body, cut to 2 KB, credentials removed: a
	// JSON value when the API sent JSON, else a string.
	Body json.RawMessage
	// RetryAfter is how long the API asked to wait, when it said (a
	// Retry-After header), else 0.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("; retry after %s", e.RetryAfter)
	}
	return msg
}

// response is what one call got back.
type response struct {
	status  int
	header  http.Header
	body    []byte // credentials removed
	mime    string // the body's media type, lower case, no parameters
	url     *url.URL
	request string // "METHOD host" for messages
}

func (s *Source) handler(o *operation) tools.Handler {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		if p, ok := tools.PageFrom(ctx, s.category+"."+o.name); ok {
			return s.page(ctx, o, args, p) // paginate.go
		}
		resp, err := s.call(ctx, o, args, nil)
		if err != nil {
			return nil, err
		}
		return s.result(ctx, o, resp)
	}
}

// call sends the request of one call of o, or of the page at next when
// it is set, and returns a 2xx response; anything else is a *tools.Error.
func (s *Source) call(ctx context.Context, o *operation, args json.RawMessage, next *url.URL) (*response, error) {
	var req *request
	var err error
	if next != nil {
		// A next page goes where the first did, never from https to
		// http (as a redirect): a link to http:// would send the
		// source's credentials, and the answer, in clear text.
		first, err := s.newRequest(o, args)
		if err != nil {
			return nil, err
		}
		if next.Scheme != "https" && (next.Scheme != "http" || first.url.Scheme == "https") {
			return nil, &tools.Error{Code: CodeHostRefused, Message: fmt.Sprintf("the next page's URL is %s://%s, and the first page's %s://: a next page is fetched over http or https only, and never from https to http", next.Scheme, next.Host, first.url.Scheme)}
		}
		req = &request{method: http.MethodGet, url: next, header: http.Header{}}
		s.prepareHeaders(o, req)
	} else if req, err = s.newRequest(o, args); err != nil {
		return nil, err
	}
	if !s.allowed(req.url.Host) {
		return nil, &tools.Error{Code: CodeHostRefused, Message: fmt.Sprintf("%s is not an allowed host of %s (allowed_hosts lists others)", req.url.Host, s.category)}
	}
	cred := s.credentialed(req.url.Host)
	if cred {
		s.authorize(req)
	}
	resp, err := s.send(ctx, o, req)
	if err != nil {
		return nil, err
	}
	if resp.status < 200 || resp.status > 299 {
		err := s.httpError(o, resp)
		var te *tools.Error
		if !cred && s.set.auth.kind != "" && (resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden) && errors.As(err, &te) {
			te.Message += fmt.Sprintf("; codecell sent no credentials: they go only to the source's own host (base_url, or the document's server) and allowed_hosts, and this request went to %s, which add to allowed_hosts if it is to get them", req.url.Host)
		}
		return nil, err
	}
	return resp, nil
}

// credentialed reports whether the source's credentials may go to host
// (host[:port]): the configured base URL's host, else the document's own
// server's, and allowed_hosts; never a host only an operation's servers
// name.
func (s *Source) credentialed(host string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.creds[strings.ToLower(host)]
}

// stripCredentials removes from a redirected request the credentials the
// source added (Go's client drops Authorization and cookies only between
// host names, not between ports, and keeps every other header).
func (s *Source) stripCredentials(req *http.Request) {
	a := s.set.auth
	req.Header.Del("Authorization")
	if a.kind != "api_key" {
		return
	}
	switch a.in {
	case "header":
		req.Header.Del(a.name)
	case "cookie":
		req.Header.Del("Cookie")
	case "query":
		q := req.URL.Query()
		if q.Has(a.name) {
			q.Del(a.name)
			req.URL.RawQuery = q.Encode()
		}
	}
}

// request is a request being built.
type request struct {
	method string
	url    *url.URL
	header http.Header
	body   []byte
	ctype  string
}

// newRequest writes the arguments into a request: path, query, headers,
// cookies and body.
func (s *Source) newRequest(o *operation, args json.RawMessage) (*request, error) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &fields); err != nil {
			return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: "arguments must be an object: " + err.Error()}
		}
	}
	value := func(name string) (any, bool, error) {
		raw, ok := fields[name]
		if !ok {
			return nil, false, nil
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, false, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s: %v", name, err)}
		}
		return v, true, nil
	}
	path := o.path
	var query strings.Builder
	header := http.Header{}
	var cookies []string
	for _, p := range o.params {
		v, ok, err := value(p.prop)
		if err != nil {
			return nil, err
		}
		if !ok || v == nil {
			if p.in == "path" {
				return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s is required: it is part of the path %s", p.prop, o.path)}
			}
			continue
		}
		switch p.in {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.name+"}", pathValue(p, v))
		case "query":
			queryValue(&query, p, v)
		case "header":
			header.Set(p.name, headerValue(p, v))
		case "cookie":
			cookies = append(cookies, p.name+"="+cookieValue(p, v))
		}
	}
	if err := checkSegments(o, path); err != nil {
		return nil, err
	}
	u := *o.base
	u.RawPath = strings.TrimSuffix(o.base.EscapedPath(), "/") + path
	dec, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("the path %s cannot be written: %v", o.path, err)}
	}
	u.Path = dec
	u.RawQuery = query.String()
	req := &request{method: o.method, url: &u, header: header}
	if len(cookies) > 0 {
		req.header.Set("Cookie", strings.Join(cookies, "; "))
	}
	if b := o.body; b != nil {
		if err := s.writeBody(req, b, fields); err != nil {
			return nil, err
		}
	}
	s.prepareHeaders(o, req)
	return req, nil
}

// checkSegments refuses a path whose parameters made a dot-segment ("."
// or ".."), which would move the request to another resource of the
// API: encoded as %2E it is the same URI (RFC 3986, 6.2.2.2), which
// servers and proxies resolve.
//
// An empty segment the template does not have ("/files//meta", a
// trailing "/") is refused too: servers and proxies that merge slashes
// address another resource with it (issue 19, attack27 L2).
func checkSegments(o *operation, path string) error {
	names := func() string {
		var names []string
		for _, p := range o.params {
			if p.in == "path" {
				names = append(names, p.prop)
			}
		}
		return strings.Join(names, ", ")
	}
	template := map[string]bool{}
	for _, seg := range strings.Split(o.path, "/") {
		template[seg] = true
	}
	for _, seg := range strings.Split(path, "/") {
		if (seg == "." || seg == "..") && !template[seg] {
			return &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("the path parameters (%s) make %q a segment of the path %s, which would address another resource; give a name, not . or ..", names(), seg, o.path)}
		}
	}
	if strings.Count(path, "//") > strings.Count(o.path, "//") || strings.HasSuffix(path, "/") && !strings.HasSuffix(o.path, "/") {
		return &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("the path parameters (%s) make an empty segment of the path %s, which would address another resource; give each a value that is not empty", names(), o.path)}
	}
	return nil
}

// writeBody writes the body from the arguments.
func (s *Source) writeBody(req *request, b *body, fields map[string]json.RawMessage) error {
	var raw json.RawMessage
	var obj map[string]any
	var order []string
	if b.merged != nil {
		wrote := false
		var buf bytes.Buffer
		buf.WriteByte('{')
		for _, k := range b.merged {
			v, ok := fields[k]
			if !ok {
				continue
			}
			if wrote {
				buf.WriteByte(',')
			}
			wrote = true
			writeString(&buf, k)
			buf.WriteByte(':')
			buf.Write(v)
		}
		buf.WriteByte('}')
		if !wrote && !b.required {
			return nil
		}
		raw = buf.Bytes()
		order = b.merged
	} else {
		v, ok := fields[b.prop]
		if !ok {
			return nil
		}
		raw = v
	}
	switch b.kind {
	case bodyJSON:
		req.body, req.ctype = raw, b.mediaType
		return nil
	case bodyText, bodyRaw:
		v, err := decodeValue(raw)
		if err != nil {
			return &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s: %v", b.prop, err)}
		}
		req.body, req.ctype = []byte(scalar(v)), b.mediaType
		return nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("body: %v", err)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s: a %s body is an object of fields", b.prop, b.mediaType)}
	}
	if order == nil {
		order = sortedKeysOf(obj)
	}
	switch b.kind {
	case bodyForm:
		req.body, req.ctype = formBody(obj, order, b), "application/x-www-form-urlencoded"
	case bodyMultipart:
		data, ct, err := multipartBody(obj, order, b)
		if err != nil {
			return fmt.Errorf("write the multipart body: %w", err)
		}
		req.body, req.ctype = data, ct
	}
	return nil
}

// prepareHeaders adds the configured headers (which a parameter of the
// same name overrides), Accept and Content-Type.
func (s *Source) prepareHeaders(o *operation, req *request) {
	for k, vs := range s.set.headers {
		if req.header.Get(k) == "" {
			req.header[k] = vs
		}
	}
	if req.header.Get("Accept") == "" {
		req.header.Set("Accept", "application/json, */*;q=0.5")
	}
	if req.ctype != "" {
		req.header.Set("Content-Type", req.ctype)
	}
	req.header.Set("User-Agent", "codecell-openapi")
}

// authorize adds the credentials, last, so that nothing a program passes
// replaces them.
func (s *Source) authorize(req *request) {
	a := s.set.auth
	switch a.kind {
	case "bearer":
		req.header.Set("Authorization", "Bearer "+a.token)
	case "basic":
		req.header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(a.user+":"+a.pass)))
	case "api_key":
		switch a.in {
		case "header":
			req.header.Set(a.name, a.key)
		case "query":
			q := req.url.Query()
			q.Set(a.name, a.key)
			u := *req.url
			u.RawQuery = q.Encode()
			req.url = &u
		case "cookie":
			c := a.name + "=" + url.QueryEscape(a.key)
			if old := req.header.Get("Cookie"); old != "" {
				c = old + "; " + c
			}
			req.header.Set("Cookie", c)
		}
	}
}

// send sends req, retrying as maxAttempts says, under the source's
// concurrency bound (shared out between principals, Options.Shared) and
// rate limit, and records every attempt.
func (s *Source) send(ctx context.Context, o *operation, req *request) (*response, error) {
	release, _, err := s.slots.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	tool := s.category + "." + o.name
	idempotent := annotationsOf(req.method).Idempotent
	for attempt := 1; ; attempt++ {
		if s.limiter != nil {
			if err := s.limiter.Wait(ctx); err != nil {
				s.record(ctx, tool, req, 0, "rate_limited", attempt, time.Now(), 0)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, &tools.Error{Code: CodeRateLimited, Message: fmt.Sprintf("the rate limit of %s (%s) leaves no room for this request before the run's deadline; make fewer calls or give the run more time", s.category, s.cfg.RateLimit)}
			}
		}
		start := time.Now()
		resp, kind, err := s.attempt(ctx, req)
		status := 0
		if resp != nil {
			status = resp.status
		}
		s.record(ctx, tool, req, status, kind, attempt, start, time.Since(start))
		wait, retry := time.Duration(0), false
		switch {
		case err != nil && kind == "unreachable" && idempotent:
			wait, retry = time.Duration(100<<attempt)*time.Millisecond, true
		case err == nil && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && idempotent:
			if ra := retryAfter(resp.header, time.Now()); ra > 0 {
				wait, retry = ra, true
			}
		}
		if retry && attempt < maxAttempts && wait <= maxRetryWait && fits(ctx, wait) {
			s.log.Debug("retrying", "tool", tool, "attempt", attempt, "wait_ms", wait.Milliseconds())
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			continue
		}
		return resp, err
	}
}

// fits reports whether waiting d still leaves the run some time. Without
// a deadline in ctx, only a short wait (maxBlindRetryWait) does.
func fits(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return d <= maxBlindRetryWait
	}
	return time.Until(dl) > d+50*time.Millisecond
}

// attempt sends req once and reads the response. kind names a failure
// for the audit record.
func (s *Source) attempt(parent context.Context, req *request) (*response, string, error) {
	ctx, cancel := context.WithTimeout(parent, s.set.timeout)
	defer cancel()
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url.String(), body)
	if err != nil {
		return nil, "invalid", &tools.Error{Code: tools.CodeInvalidArguments, Message: "the request cannot be made: " + s.redact(err.Error())}
	}
	hr.Header = req.header.Clone()
	resp, err := s.client.Do(hr)
	if err != nil {
		kind, terr := s.transportError(parent, ctx, req, err)
		return nil, kind, terr
	}
	defer resp.Body.Close()
	data, err := readResponse(resp, s.set.maxResponse)
	if err != nil {
		kind, terr := s.transportError(parent, ctx, req, err)
		return nil, kind, terr
	}
	if int64(len(data)) > s.set.maxResponse {
		return &response{status: resp.StatusCode}, "too_large", &tools.Error{Code: CodeTooLarge, Message: fmt.Sprintf("the response of %s %s is larger than %d bytes (max_response_bytes); ask for less, such as a smaller page", req.method, req.url.Host, s.set.maxResponse)}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	// A JSON body decodes into far more than its bytes when it is dense
	// in values ([{},{},…]): what it decodes into is held in the results
	// in flight before it is decoded, or the call fails naming the bound
	// (issue 19, attack9 D6).
	if strings.Contains(strings.ToLower(mt), "json") || mt == "" {
		if err := tools.HoldJSON(parent, data); err != nil {
			return &response{status: resp.StatusCode}, "too_large", err
		}
	}
	return &response{
		status:  resp.StatusCode,
		header:  resp.Header,
		body:    s.scrub(data),
		mime:    strings.ToLower(mt),
		url:     resp.Request.URL,
		request: req.method + " " + req.url.Host,
	}, "", nil
}

// readResponse reads resp's body, up to max bytes and one more. A body
// whose length is announced is read into a buffer of that size, where
// io.ReadAll's, growing as it reads, held up to twice its bytes at once
// while the call reserved them once (tools.Tool.MaxResultBytes).
func readResponse(resp *http.Response, max int64) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n <= max {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, max+1))
}

// transportError describes a request that got no response, without its
// URL (which may carry a key in its query). parent is the call's context,
// ctx the attempt's, which the source's timeout bounds.
func (s *Source) transportError(parent, ctx context.Context, req *request, err error) (string, error) {
	where := req.method + " " + req.url.Host
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, errRedirectRefused):
		return "redirect_refused", &tools.Error{Code: CodeRedirectRefused, Message: where + ": " + s.redact(err.Error()), Err: errRedirectRefused}
	case parent.Err() != nil:
		return "canceled", parent.Err()
	case ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout", &tools.Error{Code: CodeTimeout, Message: fmt.Sprintf("%s: no response within %s (the source's timeout)", where, s.set.timeout)}
	}
	return "unreachable", &tools.Error{Code: CodeUnreachable, Message: where + ": " + s.redact(err.Error())}
}

// retryAfter reads Retry-After: seconds, or an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

func (s *Source) record(ctx context.Context, tool string, req *request, status int, kind string, attempt int, start time.Time, d time.Duration) {
	s.log.Debug("openapi request", "tool", tool, "method", req.method, "host", req.url.Host, "status", status, "error", kind, "attempt", attempt, "ms", d.Milliseconds())
	if s.opts.Recorder != nil {
		s.opts.Recorder.RecordRequest(ctx, Request{Source: s.category, Tool: tool, Method: req.method, Host: req.url.Host, Status: status, Error: kind, Attempt: attempt, Duration: d, Started: start})
	}
}

// httpError is the *tools.Error of a non-2xx response: code
// http_<status>, the API's error body (cut, credentials removed) and the
// wait it asked for.
func (s *Source) httpError(o *operation, r *response) error {
	he := &HTTPError{Status: r.status, RetryAfter: retryAfter(r.header, time.Now())}
	var text string
	switch {
	case len(r.body) == 0:
	case isJSON(r.mime) && json.Valid(r.body):
		he.Body = compactJSON(r.body, maxErrorBody)
		text = string(he.Body)
	case isText(r.mime) || (r.mime == "" && isPrintable(r.body)):
		t := cutText(string(r.body), maxErrorBody)
		he.Body, _ = json.Marshal(t)
		text = t
	default:
		text = fmt.Sprintf("(%d bytes of %s)", len(r.body), r.mime)
	}
	msg := fmt.Sprintf("%s %s: HTTP %d %s", o.method, o.path, r.status, http.StatusText(r.status))
	if he.RetryAfter > 0 {
		msg += fmt.Sprintf("; the API asks to retry after %s", he.RetryAfter)
	}
	if text != "" {
		msg += ": " + text
	}
	return &tools.Error{Code: fmt.Sprintf("http_%d", r.status), Message: s.redact(msg), Err: he}
}

// compactJSON compacts a JSON body; one longer than limit is cut to a
// JSON string of its first limit bytes.
func compactJSON(b []byte, limit int) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		buf.Reset()
		buf.Write(b)
	}
	if buf.Len() <= limit {
		return buf.Bytes()
	}
	t, _ := json.Marshal(cutText(buf.String(), limit))
	return t
}

func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := s[:limit]
	for len(cut) > 0 && cut[len(cut)-1]&0xc0 == 0x80 {
		cut = cut[:len(cut)-1]
	}
	return fmt.Sprintf("%s… (%d bytes in all)", cut, len(s))
}

func isJSON(mt string) bool {
	return mt != "" && mediaKind(mt) == bodyJSON
}

func isText(mt string) bool {
	return strings.HasPrefix(mt, "text/") || (mt != "" && mediaKind(mt) == bodyText)
}

func isPrintable(b []byte) bool {
	if len(b) > 512 {
		b = b[:512]
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

// result turns a 2xx response into the program's value: JSON as it is,
// text as a string, no body as null, anything else as an artifact handle.
func (s *Source) result(ctx context.Context, o *operation, r *response) (json.RawMessage, error) {
	switch {
	case len(r.body) == 0 || o.method == http.MethodHead:
		return json.RawMessage("null"), nil
	case isJSON(r.mime) || (r.mime == "" && json.Valid(r.body)):
		if json.Valid(r.body) {
			return r.body, nil
		}
		return tools.TextJSON(ctx, r.body)
	case isText(r.mime) || r.mime == "application/x-www-form-urlencoded":
		return tools.TextJSON(ctx, r.body)
	}
	if s.opts.Artifacts == nil {
		return nil, &tools.Error{Code: CodeBinary, Message: fmt.Sprintf("%s %s answered with %d bytes of %s, and this server keeps no artifacts", o.method, o.path, len(r.body), r.mime)}
	}
	mt := r.mime
	if mt == "" {
		mt = "application/octet-stream"
	}
	uri, err := s.opts.Artifacts.PutArtifact(ctx, mt, r.body)
	if err != nil {
		return nil, fmt.Errorf("keep the %s response: %w", mt, err)
	}
	kind := "resource"
	switch {
	case strings.HasPrefix(mt, "image/"):
		kind = "image"
	case strings.HasPrefix(mt, "audio/"):
		kind = "audio"
	}
	return json.Marshal(struct {
		Type     string `json:"type"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Bytes    int    `json:"bytes"`
	}{kind, mt, uri, len(r.body)})
}

// scrub replaces every credential in a response body, as written and in
// the forms an API echoing a request would write it (JSON-escaped,
// URL-encoded, base64 of basic auth's user:pass), so that no credential
// reaches a program even through an API that echoes requests.
func (s *Source) scrub(b []byte) []byte {
	for _, v := range s.set.secretForms {
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[redacted]"))
		}
	}
	return b
}
