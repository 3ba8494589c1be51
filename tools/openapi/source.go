package openapi

import (
	"context"
	"encoding/json"
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
	// SnapshotDir, when set with Version, keeps what the source makes of
	// its document (see snapshot.go), so that a restart with the same
	// document, configuration and Version reads it rather than parsing
	// the document again.
	SnapshotDir string
	// Version names the build of codecell that makes the snapshots: a
	// snapshot made by another is not used. It must change whenever the
	// code does (a release's version; for a development build, a hash of
	// the executable). Without it, no snapshot is read or written.
	Version string
	// Progress, when set, is told each stage Open reaches, for a caller
	// that shows a source while it loads. It must return quickly.
	Progress func(Progress)
	// Shared says several principals call the source (codecell serves
	// HTTP with authentication): one principal then holds at most all
	// but a quarter of its max_concurrent_calls (tools.DefaultShare), so
	// that its hanging calls cannot hold them all.
	Shared bool
}

// Stage is a step of Open.
type Stage string

// The stages of Open, in order; a source read from its snapshot skips
// parsing and making tools.
const (
	StageFetch    Stage = "fetching"    // reading the file, or fetching the URL
	StageSnapshot Stage = "snapshot"    // reading the source's snapshot
	StageParse    Stage = "parsing"     // parsing the document
	StageBuild    Stage = "making"      // making tools of its operations
	StageRegister Stage = "registering" // adding them to the registry
)

// Progress is how far a source's Open has got.
type Progress struct {
	Stage Stage
	// DocumentBytes is the document's size, once it is read.
	DocumentBytes int
	// Estimate is roughly how long the stages left take on one idle
	// core, from the document's size (parsing and making tools run at
	// about 4 MB/s; reading a snapshot is quick); 0 when not known. A
	// busy machine takes longer.
	Estimate time.Duration
}

// parseBytesPerSecond is roughly how fast a document is parsed and made into
// tools, in bytes per second on one idle core (GitHub's 13 MB in about 3 s
// on the project's development machine).
const parseBytesPerSecond = 4 << 20

func (s *Source) progress(p Progress) {
	if s.opts.Progress != nil {
		s.opts.Progress(p)
	}
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
	Cached bool
	// Snapshot says the tools came from the source's snapshot rather
	// than from parsing the document.
	Snapshot bool
	Duration time.Duration
}

// Open loads the document (reading the file, or fetching the URL through
// the cache) and registers its tools in reg: from the source's snapshot
// when it has one of this document, configuration and version, else
// made from the document (see OpenDocument) and kept as a snapshot. Open
// fails when the document cannot be had or yields no tool; the error
// says why, and never holds a credential.
func (s *Source) Open(ctx context.Context, reg *tools.Registry) (*Report, error) {
	start := time.Now()
	s.progress(Progress{Stage: StageFetch})
	data, cached, err := s.fetchSpec(ctx)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s", s.category, s.redact(err.Error()))
	}
	size := len(data)
	var key [32]byte
	snapshots := s.opts.SnapshotDir != "" && s.opts.Version != ""
	if snapshots {
		s.progress(Progress{Stage: StageSnapshot, DocumentBytes: size})
		key = s.snapshotKey(data)
		b, err := s.readSnapshot(key)
		if err == nil {
			data = nil
			if err = b.link(s); err == nil {
				s.progress(Progress{Stage: StageRegister, DocumentBytes: size})
				rep, err := s.register(reg, b)
				if err != nil {
					return nil, err
				}
				rep.Cached, rep.Snapshot, rep.Duration = cached, true, time.Since(start)
				s.log.Info("openapi source ready", "tools", rep.Tools, "skipped", len(rep.Problems), "version", rep.Version, "cached", cached, "snapshot", true, "ms", rep.Duration.Milliseconds())
				return rep, nil
			}
		}
		if !errors.Is(err, errNoSnapshot) {
			s.log.Warn("openapi snapshot not used; making the tools from the document", "reason", err.Error())
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("openapi %s: %w", s.category, err)
	}
	s.progress(Progress{Stage: StageParse, DocumentBytes: size, Estimate: time.Duration(size) * time.Second / parseBytesPerSecond})
	doc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s: %w", s.category, shownURL(s.cfg.Spec), err)
	}
	data = nil
	s.progress(Progress{Stage: StageBuild, DocumentBytes: size, Estimate: time.Duration(size) * time.Second / parseBytesPerSecond / 4})
	b, err := s.build(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %s: %w", s.category, shownURL(s.cfg.Spec), err)
	}
	doc = nil // what is left of the document is garbage once the tools are made
	s.progress(Progress{Stage: StageRegister, DocumentBytes: size})
	rep, err := s.register(reg, b)
	if err != nil {
		return nil, err
	}
	rep.Cached = cached
	rep.Duration = time.Since(start)
	s.log.Info("openapi source ready", "tools", rep.Tools, "skipped", len(rep.Problems), "version", rep.Version, "cached", cached, "snapshot", false, "ms", rep.Duration.Milliseconds())
	for _, p := range rep.Problems {
		s.log.Debug("openapi operation left out", "operation", p.Operation, "problem", p.Message)
	}
	if snapshots {
		if err := s.writeSnapshot(key, b); err != nil {
			s.log.Warn("could not keep the openapi snapshot; the next start parses the document again", "err", err.Error())
		}
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
		return nil, fmt.Errorf("openapi %s: %s: %w", s.category, shownURL(s.cfg.Spec), err)
	}
	rep, err := s.register(reg, b)
	if err != nil {
		return nil, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// register registers what b holds in reg.
func (s *Source) register(reg *tools.Registry, b *built) (*Report, error) {
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
	if b.credHost != "" {
		creds[b.credHost] = true
	}
	for _, o := range b.ops {
		hosts[strings.ToLower(o.base.Host)] = true
	}
	s.mu.Lock()
	s.ops, s.hosts, s.creds, s.reg = b.ops, hosts, creds, reg
	s.mu.Unlock()
	about := b.title
	if about == "" {
		about = "HTTP API " + s.category
	}
	about = shorten(oneLine(about), 100)
	if b.over > 0 {
		// Where the manifest and the category's index show it.
		about += fmt.Sprintf(" (%d of its operations left out: at most max_operations = %d)", b.over, b.maxOps)
	}
	if err := reg.DescribeCategory(s.category, about); err != nil {
		return nil, fmt.Errorf("openapi %s: %w", s.category, err)
	}
	if err := reg.Register(b.tools...); err != nil {
		return nil, fmt.Errorf("openapi %s: %w", s.category, err)
	}
	names := make([]string, len(b.tools))
	var defs *tools.Definitions
	var roots []json.RawMessage
	for i, t := range b.tools {
		names[i] = t.Name
		if t.InputDefs != nil {
			defs = t.InputDefs
			roots = append(roots, t.InputSchema)
		}
	}
	// The definitions that the largest input schema reaches, which the
	// other large ones share, compile now rather than at a first call.
	if defs != nil {
		start := time.Now()
		if err := defs.Prepare(roots...); err != nil {
			s.log.Debug("openapi definitions not compiled at load; the first call that reaches them reports it", "err", err.Error())
		}
		s.log.Debug("openapi definitions compiled", "ms", time.Since(start).Milliseconds())
	}
	s.mu.Lock()
	s.names = names
	s.mu.Unlock()
	return &Report{Title: b.title, Version: b.version, Tools: len(b.tools), Problems: b.problems}, nil
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
