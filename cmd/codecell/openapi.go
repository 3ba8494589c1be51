package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// openAPISources are the [openapi.NAME] sources of a server: each loads
// in the background, so that a server starts serving at once, and
// registers its tools when they are ready. close stops the loads still
// running and waits for them.
type openAPISources struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger

	mu      sync.Mutex
	sources []*openapi.Source
}

// startOpenAPI starts loading the enabled sources of cfg into reg, as
// many at once as there are CPUs, the largest documents first (they take
// longest, and the small ones fill the gaps); each is listed as loading,
// with its stage, from the first request on. Each keeps a snapshot of
// what it made under the data directory, so that the next start reads it
// rather than parsing the document; documents fetched from URLs are
// cached there too. Binary responses become stored results; every
// request is logged (method, host, status). A source that cannot load —
// its credential's variable unset, its document missing or unreadable —
// is unavailable with the reason, in the registry and the log, and the
// others serve.
func startOpenAPI(cfg Config, reg *tools.Registry, store resultPutter, log *slog.Logger) *openAPISources {
	ctx, cancel := context.WithCancel(context.Background())
	s := &openAPISources{cancel: cancel, log: log.With("component", "openapi")}
	cache, snapshots := "", ""
	if dir, err := cfg.dataDir(); err == nil {
		cache = filepath.Join(dir, "openapi")
		snapshots = filepath.Join(cache, "snapshots")
	}
	set, _ := cfg.upstreams() // valid: checked at start, where moved categories are logged
	version := sync.OnceValue(func() string { return buildVersion(s.log) })
	var loads []*openAPILoad
	for _, name := range slices.Sorted(maps.Keys(cfg.OpenAPI)) {
		oc := cfg.OpenAPI[name]
		if oc.Disabled {
			continue
		}
		// A name taken by another source or by codecell is served as
		// another category (categories.go).
		category := name
		if pl, ok := set.plan.openAPI[name]; ok {
			category = pl.category
		}
		l := &openAPILoad{name: name, cfg: oc}
		if err := oc.Check(os.Getenv); err != nil {
			// Missing credentials, known at once: the configuration was
			// checked when the server started.
			s.unavailable(reg, name, category, unavailableReason(name, err))
			continue
		}
		if !strings.Contains(oc.Spec, "://") {
			fi, err := os.Stat(oc.Spec)
			if err != nil {
				what := "cannot be read"
				if errors.Is(err, fs.ErrNotExist) {
					what = "not found"
				}
				s.unavailable(reg, name, category, fmt.Sprintf("document %s: %s; fix spec in [openapi.%s] and restart codecell (%v)", what, oc.Spec, name, err))
				continue
			}
			l.size = fi.Size()
		}
		if err := reg.SetCategorySource(category, fmt.Sprintf("the OpenAPI description %q", name)); err != nil {
			s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
			continue
		}
		// Listed as loading from the first request on, until it is done.
		load, err := reg.BeginLoad(category, "loading the OpenAPI description")
		if err != nil {
			s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
			continue
		}
		l.load = load
		l.opts = openapi.Options{Name: category, Getenv: os.Getenv, CacheDir: cache, SnapshotDir: snapshots,
			Recorder: requestLog{s.log}, Logger: log, Shared: sharedByPrincipals(cfg),
			Progress: func(p openapi.Progress) {
				s.log.Debug("openapi source loading", "source", name, "stage", p.Stage, "bytes", p.DocumentBytes, "estimate_ms", p.Estimate.Milliseconds())
				load.Progress(tools.LoadProgress{Stage: loadStages[p.Stage], Left: p.Estimate})
			}}
		if store != nil {
			l.opts.Artifacts = storeBlobs{store}
		}
		loads = append(loads, l)
	}
	slices.SortStableFunc(loads, func(a, b *openAPILoad) int { return cmp.Compare(b.size, a.size) })
	queue := make(chan *openAPILoad, len(loads))
	for _, l := range loads {
		queue <- l
	}
	close(queue)
	workers := min(len(loads), max(1, runtime.GOMAXPROCS(0)))
	var running atomic.Int32
	running.Store(int32(workers))
	var parsed atomic.Bool
	for range workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for l := range queue {
				if ctx.Err() != nil {
					l.load.Fail("the server stopped before the description was loaded")
					continue
				}
				l.opts.Version = version()
				if s.open(ctx, reg, l) {
					parsed.Store(true)
				}
			}
			if running.Add(-1) == 0 && parsed.Load() {
				// Parsing documents leaves hundreds of megabytes of
				// garbage at once; give it back now rather than
				// over minutes, so that the server's memory is what
				// it holds.
				debug.FreeOSMemory()
			}
		}()
	}
	return s
}

// openAPILoad is one source waiting for its turn to load.
type openAPILoad struct {
	name string
	cfg  openapi.Config
	opts openapi.Options
	size int64 // of its document, when a file
	load *tools.Load
}

// loadStages say what a loading source does, as the tree and search show it.
var loadStages = map[openapi.Stage]string{
	openapi.StageFetch:    "loading the OpenAPI description",
	openapi.StageSnapshot: "reading its snapshot",
	openapi.StageParse:    "parsing the OpenAPI description",
	openapi.StageBuild:    "making its tools",
	openapi.StageRegister: "registering its tools",
}

// open makes the source and registers its tools, or records why it is
// unavailable. It reports whether it parsed the source's document (there
// was no snapshot to read).
func (s *openAPISources) open(ctx context.Context, reg *tools.Registry, l *openAPILoad) (parsed bool) {
	fail := func(reason string) {
		s.log.Error("openapi source unavailable", "source", l.name, "reason", reason)
		l.load.Fail(reason)
	}
	src, err := openapi.New(l.cfg, l.opts)
	if err != nil {
		fail(unavailableReason(l.name, err))
		return false
	}
	if taken := categoryTaken(reg, src.Category()); taken {
		fail(fmt.Sprintf("category %s already holds other tools; rename [openapi.%s]", src.Category(), l.name))
		return false
	}
	rep, err := src.Open(ctx, reg)
	if err != nil {
		if ctx.Err() == nil {
			fail(strings.TrimPrefix(err.Error(), "openapi "+src.Category()+": ") + "; fix it and restart codecell")
		} else {
			l.load.Fail("the server stopped before the description was loaded")
		}
		return true
	}
	l.load.Done()
	s.mu.Lock()
	s.sources = append(s.sources, src)
	s.mu.Unlock()
	return !rep.Snapshot
}

// unavailable records that the source name, served as category, cannot be
// used, and why: in the registry, where the manifest and the tree show
// it, and in the log.
func (s *openAPISources) unavailable(reg *tools.Registry, name, category, reason string) {
	s.log.Error("openapi source unavailable", "source", name, "reason", reason)
	if err := reg.SetCategoryStatus(category, tools.CategoryStatus{Unavailable: true, Reason: reason}); err != nil {
		s.log.Error("openapi source status", "source", name, "err", err.Error())
	}
}

// unavailableReason says why a source's configuration cannot be used in
// this environment, and what to do: for a credential whose variable is
// unset, which variable and where to set it.
func unavailableReason(name string, err error) string {
	if vars, only := openapi.MissingEnv(err); only {
		return fmt.Sprintf("credential unset: %s; set the environment variable where codecell runs (for a host such as Claude Desktop, in the \"env\" of codecell's entry) and restart codecell, or disable [openapi.%s]",
			strings.Join(vars, " and "), name)
	}
	return fmt.Sprintf("[openapi.%s]: %v", name, err)
}

// buildVersion names this build of codecell for the snapshots it makes,
// so that a snapshot made by another build is never read: the release
// version, else the commit of an unmodified checkout, else (a
// development build) a hash of the executable.
func buildVersion(log *slog.Logger) string {
	if !strings.Contains(version, "dev") && !strings.Contains(version, "dirty") {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				modified = kv.Value
			}
		}
		if rev != "" && modified == "false" {
			return "vcs-" + rev
		}
	}
	start := time.Now()
	sum, err := executableHash()
	if err != nil {
		log.Warn("cannot name this build for its snapshots; sources are made from their documents at each start", "err", err.Error())
		return fmt.Sprintf("unknown-%d", time.Now().UnixNano())
	}
	log.Debug("build named by the executable's hash", "ms", time.Since(start).Milliseconds())
	return "exe-" + sum
}

// executableHash is the SHA-256 of the running executable.
func executableHash() (string, error) {
	exe, err := selfExe()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// categoryTaken reports whether reg already has tools in category.
func categoryTaken(reg *tools.Registry, category string) bool {
	return slices.Contains(reg.Categories(), category)
}

// wait waits until every source has loaded or failed, or ctx ends: for
// a one-shot run (exec) that may call their tools.
func (s *openAPISources) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// close stops the loads still running, waits for them, and closes the
// sources' connections.
func (s *openAPISources) close() {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, src := range s.sources {
		src.Close()
	}
}

// requestLog records every request of the OpenAPI sources in the log:
// who made it, the tool, method, host and status, never headers, bodies
// or query strings.
type requestLog struct{ log *slog.Logger }

func (r requestLog) RecordRequest(ctx context.Context, q openapi.Request) {
	// In a run, the request joins the run's audit record.
	tools.ReportRequest(ctx, tools.Request{Tool: q.Tool, Method: q.Method, Host: q.Host, Status: q.Status, Error: q.Error,
		Attempt: q.Attempt, Duration: q.Duration, Started: q.Started})
	r.log.Info("http request", "principal", tools.CallerFrom(ctx).Principal, "tool", q.Tool, "method", q.Method, "host", q.Host,
		"status", q.Status, "error", q.Error, "attempt", q.Attempt, "ms", q.Duration.Milliseconds())
}
