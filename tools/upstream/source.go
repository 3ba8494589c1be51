package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codecell/codecell/tools"
)

// Catalogue is what a Source needs of the registry it fills.
type Catalogue interface {
	Register(ts ...tools.Tool) error
	Unregister(names ...string) int
	ListCategory(category string) []*tools.Tool
	DescribeCategory(name, summary string) error
	SetCategoryStatus(name string, st tools.CategoryStatus) error
}

var _ Catalogue = (*tools.Registry)(nil)

// Config configures a Source.
type Config struct {
	// Servers are the upstream servers by name, as in mcpServers.
	Servers map[string]Server
	// Registry receives the servers' tools.
	Registry Catalogue
	// Lookup gives the values of ${VAR} references and of the variables
	// every stdio child inherits (DefaultEnvironment). Nil means none.
	Lookup Lookup
	// Blobs keeps binary contents of results; nil drops their bytes (the
	// program still gets a handle with the size).
	Blobs Blobs
	// Shapes keeps, across restarts, the shapes of results learned for
	// tools that declare no output schema (see doc.go); nil keeps them in
	// memory only.
	Shapes Shapes
	// Confine, when set, confines every stdio server whose configuration
	// does not set unconfined: its child process is started through the
	// wrapper Confine returns. Nil starts them as they are.
	Confine Confine
	// Shared says several principals call these servers (codecell serves
	// HTTP with authentication): a server's calls in flight are then
	// shared out, one principal holding at most max_calls_per_principal
	// of them (by default all but a quarter). Otherwise a principal may
	// hold them all unless max_calls_per_principal says less.
	Shared bool
	// ShapeQuorum is how many principals' results must have held a
	// property name before a shape learned of a tool's results (see
	// doc.go) shows it: one principal's data used as keys never reaches
	// another. 0 or 1, on a server with one principal, shows them all.
	ShapeQuorum int
	// Scrub, when set, replaces sensitive values (credentials, personal
	// data) in text that comes from a server before codecell logs or shows
	// it: its stderr, its log notifications, its error messages and the
	// reasons it is unavailable. Values of its configured env and headers
	// are replaced whether or not it is set.
	Scrub func(string) string
	// Logger receives the source's logs and the servers' stderr; nil
	// discards them.
	Logger *slog.Logger
	// Version is the client version codecell reports to the servers.
	Version string
	// HandshakeTimeout bounds starting a server and its initialize
	// (default DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// Grace is how long a child has to exit after SIGTERM before it is
	// killed (default 2s).
	Grace time.Duration
	// PingInterval is how often an idle HTTP server is pinged to notice it
	// is gone (default 30s); negative disables.
	PingInterval time.Duration
	// Backoff is the first delay before connecting again after a failure,
	// doubled at each consecutive failure up to MaxBackoff (defaults
	// 500ms and 30s). A server that stayed connected for a minute is
	// restarted at once when it ends.
	Backoff, MaxBackoff time.Duration
}

// DefaultHandshakeTimeout is Config.HandshakeTimeout's default.
const DefaultHandshakeTimeout = 30 * time.Second

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.Grace <= 0 {
		c.Grace = 2 * time.Second
	}
	if c.PingInterval == 0 {
		c.PingInterval = 30 * time.Second
	}
	if c.Backoff <= 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.MaxBackoff < c.Backoff {
		c.MaxBackoff = max(30*time.Second, c.Backoff)
	}
	if c.Version == "" {
		c.Version = "dev"
	}
}

// ConfigError is a configuration that Start refuses: the problems of each
// server, by name.
type ConfigError struct {
	Problems map[string][]Problem
}

func (e *ConfigError) Error() string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(e.Problems)) {
		for _, p := range e.Problems[name] {
			key := name
			if p.Field != "" {
				key += "." + p.Field
			}
			lines = append(lines, key+": "+p.Message)
		}
	}
	return "upstream configuration: " + strings.Join(lines, "; ")
}

// Source is the tool source for upstream MCP servers: it owns their
// connections and child processes, and their tools in the registry.
// Create it with Start and end it with Close.
type Source struct {
	cfg       Config
	log       *slog.Logger
	reg       Catalogue
	blobs     Blobs
	upstreams []*upstream  // sorted by name
	samples   chan sample  // results waiting to be learned from
	queued    atomic.Int64 // their bytes
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	listenMu sync.Mutex
	listener func(Event) // features.go
}

// Start checks the configuration and starts connecting to every enabled
// server, all at once, in the background: it returns without waiting for
// any (see Wait). Until a server is connected its category is marked
// unavailable in the registry with the reason; once connected, its tools
// are registered. A configuration with problems is a *ConfigError, and
// nothing is started.
func Start(cfg Config) (*Source, error) {
	if cfg.Registry == nil {
		return nil, errors.New("upstream: no registry")
	}
	if ps := CheckAll(cfg.Servers); len(ps) > 0 {
		return nil, &ConfigError{Problems: ps}
	}
	cfg.defaults()
	ctx, stop := context.WithCancel(context.Background())
	s := &Source{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "upstream"),
		reg:     cfg.Registry,
		blobs:   cfg.Blobs,
		samples: make(chan sample, learnQueue),
		stop:    stop,
	}
	s.wg.Go(func() { s.learn(ctx) })
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		u := newUpstream(s, name, cfg.Servers[name])
		s.upstreams = append(s.upstreams, u)
		if u.state == StateDisabled {
			continue
		}
		u.begin()
		s.wg.Go(func() { u.run(ctx) })
	}
	return s, nil
}

// Wait waits until every enabled server has been tried once — connected,
// or failed with a reason — or until ctx ends, whichever is first. It
// returns ctx's error when it stopped waiting for a server.
func (s *Source) Wait(ctx context.Context) error {
	for _, u := range s.upstreams {
		select {
		case <-u.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Status returns the state of every configured server, sorted by name.
func (s *Source) Status() []Status {
	out := make([]Status, len(s.upstreams))
	for i, u := range s.upstreams {
		out[i] = u.status()
	}
	return out
}

// Close disconnects every server, ends every child process (SIGTERM to
// its process group, SIGKILL after the grace) and removes the servers'
// tools and category states from the registry. It waits for all of it.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.wg.Wait()
		for _, u := range s.upstreams {
			u.unregisterAll()
		}
	})
	return nil
}

// State is where a server is in its life.
type State string

// The states of a server.
const (
	// StateConnecting: starting, or reconnecting after the connection
	// ended; calls wait for it.
	StateConnecting State = "connecting"
	// StateReady: connected, its tools registered.
	StateReady State = "ready"
	// StateUnavailable: the last attempt failed; Reason says why and
	// when the next is. Calls fail at once.
	StateUnavailable State = "unavailable"
	// StateDisabled: configured with disabled, never started.
	StateDisabled State = "disabled"
)

// Status is one server's state as codecell sees it.
type Status struct {
	Name      string    `json:"name"`
	Category  string    `json:"category"`
	Transport Transport `json:"transport"`
	State     State     `json:"state"`
	// Reason says why the server is not ready, with secrets replaced.
	Reason string `json:"reason,omitempty"`
	// Tools counts the tools registered for it.
	Tools int `json:"tools"`
	// Restarts counts the connections made after the first.
	Restarts int `json:"restarts"`
	// Server is the name and version the server gave at the handshake.
	Server string `json:"server,omitempty"`
}

func (s Status) String() string {
	out := fmt.Sprintf("%s (%s, %s): %s", s.Name, s.Category, s.Transport, s.State)
	if s.State == StateReady {
		out += fmt.Sprintf(", %d tools", s.Tools)
	}
	if s.Reason != "" {
		out += ": " + s.Reason
	}
	return out
}
