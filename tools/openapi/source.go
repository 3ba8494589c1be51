package openapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/codecell/codecell/tools"
)

// Recorder receives one record per HTTP request a source sends, for the
// audit log. The record never holds headers, bodies, query strings or
// credentials.
type Recorder interface {
	RecordRequest(ctx context.Context, r Request)
}

// Request is the audit record of one HTTP request (one attempt of a call).
type Request struct {
	Source string // the source's category
	Tool   string // the tool's qualified name
	Method string
	Host   string // host[:port] of the URL requested
	// Status is the response's status code, 0 when none came.
	Status int
	// Error is a short word when no response came: "unreachable",
	// "timeout", "canceled", "redirect_refused", "rate_limited".
	Error    string
	Attempt  int // 1 for the first
	Duration time.Duration
	Started  time.Time
}

// Artifacts keeps the binary responses of calls, so that a program gets a
// small handle ({type, mimeType, uri, bytes}) rather than the bytes.
type Artifacts interface {
	// PutArtifact stores data and returns the URI a client reads it at.
	PutArtifact(ctx context.Context, mimeType string, data []byte) (uri string, err error)
}

// Options are what a source needs besides its configuration.
type Options struct {
	// Name is the source's name in the configuration; its category is
	// CategoryFor(Name).
	Name string
	// Getenv reads the environment variables the configuration names;
	// nil reads none (a source with auth then fails to start).
	Getenv func(string) string
	// CacheDir, when set, keeps documents fetched from URLs, with their
	// ETags, so that a restart revalidates rather than downloads, and a
	// server that cannot be reached still starts from the copy.
	CacheDir string
	// Transport sends the requests (tests give one that trusts their
	// server); nil means a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Recorder, when set, receives a record of every request.
	Recorder Recorder
	// Artifacts, when set, keeps binary responses; without it a binary
	// response is an error.
	Artifacts Artifacts
	// Logger receives the source's logs; nil discards them.
	Logger *slog.Logger
	// Shared says several principals call the source (codecell serves
	// HTTP with authentication): one principal then holds at most all
	// but a quarter of its max_concurrent_calls (tools.DefaultShare), so
	// that its hanging calls cannot hold them all.
	Shared bool
}

// Source is one OpenAPI document bridged as tools: Open loads the
// document and registers a tool per operation; each call becomes an HTTP
// request, under the source's concurrency bound, rate limit and timeout,
// to the allowed hosts only, with the credentials added on the way out.
type Source struct {
	name     string
	category string
	cfg      Config
	set      *settings
	opts     Options
	log      *slog.Logger
	client   *http.Client
	slots    *tools.Slots
	limiter  *rate.Limiter
	docURL   *url.URL // the document's URL, when fetched
	// pages seals paginate's continuations (paginate.go).
	pages *pageSealer

	mu    sync.RWMutex
	ops   map[string]*operation
	hosts map[string]bool // hosts requests may go to
	creds map[string]bool // hosts the credentials may go to (credentialed)
	names []string        // registered tool names
	reg   *tools.Registry
}

// New checks cfg and reads its secrets; it does not touch the network.
// Every configuration problem is returned at once, each a *ConfigError.
func New(cfg Config, opts Options) (*Source, error) {
	category := CategoryFor(opts.Name)
	if !tools.ValidCategory(category) {
		return nil, &ConfigError{Key: "name", Msg: fmt.Sprintf("%q gives no category name; use letters, digits and underscores", opts.Name)}
	}
	set, err := cfg.settings(opts.Getenv)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{
		name:     opts.Name,
		category: category,
		cfg:      cfg,
		set:      set,
		opts:     opts,
		log:      log.With("component", "openapi", "source", category),
		slots:    tools.NewSlots(set.maxCalls, set.maxCalls),
		hosts:    map[string]bool{},
	}
	if opts.Shared {
		s.slots = tools.NewSlots(set.maxCalls, 0)
	}
	if set.limit != rate.Inf {
		s.limiter = rate.NewLimiter(set.limit, set.burst)
	}
	if s.pages, err = newPageSealer(); err != nil {
		return nil, err
	}
	if set.specIsURL {
		s.docURL, _ = url.Parse(cfg.Spec)
	}
	tr := opts.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = max(set.maxCalls, 2)
		t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr = t
	}
	s.client = &http.Client{Transport: tr, CheckRedirect: s.checkRedirect}
	return s, nil
}

// Category returns the category of the source's tools.
func (s *Source) Category() string { return s.category }

// Report describes what Open made of the document.
type Report struct {
	Title    string
	Version  string // the document's OpenAPI version
	Tools    int    // tools registered, the paginate tool included
	Problems []Problem
	// Cached says the document came from the cache: the server answered
	// 304 Not Modified, or could not be reached.
	Cached   bool
	Duration time.Duration
}

// Open loads the document (reading the file, or fetching the URL through
// the cache) and registers its tools in reg (see OpenDocument). Open
// fails when the document cannot be had or yields no tool; the error says
// why, and never holds a credential.
func (s *Source) Open(ctx context.Context, reg *tools.Registry) (*Report, error) {
	start := time.Now()
	data, cached, err := s.fetchSpec(ctx)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s", s.category, s.redact(err.Error()))
	}
	doc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s: %w", s.category, s.cfg.Spec, err)
	}
	rep, err := s.OpenDocument(reg, doc)
	if err != nil {
		return nil, err
	}
	rep.Cached = cached
	rep.Duration = time.Since(start)
	s.log.Info("openapi source ready", "tools", rep.Tools, "skipped", len(rep.Problems), "version", rep.Version, "cached", cached, "ms", rep.Duration.Milliseconds())
	for _, p := range rep.Problems {
		s.log.Debug("openapi operation left out", "operation", p.Operation, "problem", p.Message)
	}
	return rep, nil
}

// OpenDocument makes a tool per operation of a parsed document and
// registers them in reg under the source's category, with the document's
// title as the category's description. Operations that cannot be called
// are left out and listed in the report; a document that yields no tool
// is an error.
func (s *Source) OpenDocument(reg *tools.Registry, doc *Document) (*Report, error) {
	start := time.Now()
	b, err := s.build(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s: %w", s.category, s.cfg.Spec, err)
	}
	hosts := map[string]bool{}
	for h := range s.set.hosts {
		hosts[h] = true
	}
	// Credentials go to the configured hosts only: base_url's, else the
	// document's own server (not an operation's), and allowed_hosts.
	creds := map[string]bool{}
	for h := range s.set.hosts {
		creds[h] = true
	}
	if s.set.base == nil {
		if u, err := s.baseFor(doc, &operation{}); err == nil {
			creds[strings.ToLower(u.Host)] = true
		}
	}
	for _, o := range b.ops {
		hosts[strings.ToLower(o.base.Host)] = true
	}
	s.mu.Lock()
	s.ops, s.hosts, s.creds, s.reg = b.ops, hosts, creds, reg
	s.mu.Unlock()
	about := doc.Title
	if about == "" {
		about = "HTTP API " + s.category
	}
	about = shorten(oneLine(about), 100)
	if err := reg.DescribeCategory(s.category, about); err != nil {
		return nil, fmt.Errorf("openapi %s: %w", s.category, err)
	}
	if err := reg.Register(b.tools...); err != nil {
		// Some schema the registry refuses: leave those tools out.
		b.checkSchemas()
		s.mu.Lock()
		s.ops = b.ops
		s.mu.Unlock()
		if err := reg.Register(b.tools...); err != nil {
			return nil, fmt.Errorf("openapi %s: %w", s.category, err)
		}
	}
	names := make([]string, len(b.tools))
	for i, t := range b.tools {
		names[i] = t.Name
	}
	s.mu.Lock()
	s.names = names
	s.mu.Unlock()
	return &Report{Title: doc.Title, Version: doc.Version, Tools: len(b.tools), Problems: b.problems, Duration: time.Since(start)}, nil
}

// Close ends the source's idle connections. Its tools stay registered:
// Names lists them for a caller that unregisters them.
func (s *Source) Close() {
	s.client.CloseIdleConnections()
}

// allowed reports whether requests may go to host (host[:port]).
func (s *Source) allowed(host string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hosts[strings.ToLower(host)]
}

// errRedirectRefused is the error of a redirect the source refuses.
var errRedirectRefused = errors.New("redirect refused")

// checkRedirect follows a redirect only to an allowed host, never from
// https to http, at most 10 times.
func (s *Source) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: more than 10 redirects", errRedirectRefused)
	}
	if !s.allowed(req.URL.Host) {
		return fmt.Errorf("%w: the API redirected to %s, which is not an allowed host (add it to allowed_hosts to trust it)", errRedirectRefused, req.URL.Host)
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: the API redirected from https to %s", errRedirectRefused, req.URL.Scheme)
	}
	if !s.credentialed(req.URL.Host) {
		s.stripCredentials(req)
	}
	return nil
}

// redact replaces every credential in text.
func (s *Source) redact(text string) string {
	for _, v := range s.set.secretForms {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// Names returns the qualified names of the tools Open registered.
func (s *Source) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.names)
}
