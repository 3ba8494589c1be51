package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// openAPISources are the [openapi.NAME] sources of a server: each loads
// its document in the background, so that a server starts serving at
// once, and registers its tools when they are ready. close stops the
// loads still running and waits for them.
type openAPISources struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger

	mu      sync.Mutex
	sources []*openapi.Source
}

// startOpenAPI starts loading the enabled sources of cfg into reg.
// Documents fetched from URLs are cached in the data directory; binary
// responses become stored results; every request is logged (method,
// host, status). A source that cannot load is logged as unavailable, with
// the reason, and the server goes on without it.
func startOpenAPI(cfg Config, reg *tools.Registry, store resultPutter, log *slog.Logger) *openAPISources {
	ctx, cancel := context.WithCancel(context.Background())
	s := &openAPISources{cancel: cancel, log: log.With("component", "openapi")}
	cache := ""
	if dir, err := cfg.dataDir(); err == nil {
		cache = filepath.Join(dir, "openapi")
	}
	set, _ := cfg.upstreams() // valid: checked at start, where moved categories are logged
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
		opts := openapi.Options{Name: category, Getenv: os.Getenv, CacheDir: cache, Recorder: requestLog{s.log}, Logger: log, Shared: sharedByPrincipals(cfg)}
		if store != nil {
			opts.Artifacts = storeBlobs{store}
		}
		src, err := openapi.New(oc, opts)
		if err != nil {
			// The configuration was checked at start; the environment may
			// have changed since.
			s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
			continue
		}
		if err := reg.SetCategorySource(src.Category(), fmt.Sprintf("the OpenAPI description %q", name)); err != nil {
			s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
			continue
		}
		// Listed as loading from the first request on, until it is done.
		load, err := reg.BeginLoad(src.Category(), "loading the OpenAPI description")
		if err != nil {
			s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if taken := categoryTaken(reg, src.Category()); taken {
				reason := fmt.Sprintf("category %s already holds other tools; rename [openapi.%s]", src.Category(), name)
				s.log.Error("openapi source unavailable", "source", name, "reason", reason)
				load.Fail(reason)
				return
			}
			if _, err := src.Open(ctx, reg); err != nil {
				s.log.Error("openapi source unavailable", "source", name, "reason", err.Error())
				load.Fail(err.Error())
				return
			}
			load.Done()
			s.mu.Lock()
			s.sources = append(s.sources, src)
			s.mu.Unlock()
		}()
	}
	return s
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
