package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newConfigCommand("serve", "Usage: codecell serve [flags]\n\nServe MCP over stdio (for MCP hosts such as Claude Desktop), or over Streamable HTTP and SSE with --http ADDR.", stderr)
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	log := newLogger(cfg, stderr)
	addr := cfg.Server.HTTP
	if addr != "" && publicBind(addr) && len(cfg.Auth.Tokens) == 0 {
		return fmt.Errorf("refusing to serve on %s without authentication: anyone who can reach it could run code here. "+
			"Configure bearer tokens ([[auth.tokens]] in the config file, or CODECELL_AUTH_TOKENS=principal=token), or bind a loopback address such as 127.0.0.1:7410", addr)
	}
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, err := newServer(cfg, store, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	stopPruning := prunePeriodically(ctx, store, time.Hour, log)
	defer stopPruning()

	if addr == "" {
		log.Info("serving MCP over stdio", "version", version)
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	printConnectHelp(stderr, ln.Addr().String())
	log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "version", version)
	err = srv.ServeHTTP(ctx, ln, cfg.Server.ShutdownGrace.D())
	log.Info("stopped")
	return err
}

// prunePeriodically applies the store's retention every interval (it was
// applied at open) until the returned function is called.
func prunePeriodically(ctx context.Context, store *memory.Store, every time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rep, err := store.Prune(ctx)
				if err != nil {
					log.Error("prune store", "err", err)
					continue
				}
				log.Info("pruned store", "report", rep)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// printConnectHelp tells a person at the terminal how to connect.
func printConnectHelp(w io.Writer, addr string) {
	base := "http://" + addr
	exe, err := os.Executable()
	if err != nil {
		exe = "codecell"
	} else if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	desktop, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]server{"codecell": {Command: exe, Args: []string{"serve"}}},
	}, "  ", "  ")
	fmt.Fprintf(w, `
codecell %s is listening.

  Streamable HTTP   %s%s
  SSE               %s%s   (messages to %s%s)
  Health            %s%s

  MCP Inspector     npx @modelcontextprotocol/inspector
                    then choose "Streamable HTTP" and connect to %s%s
                    (or over stdio: npx @modelcontextprotocol/inspector %s serve)

  Claude Desktop    add to claude_desktop_config.json (stdio):
  %s

Press Ctrl-C to stop.

`, version, base, mcpserver.PathStreamable, base, mcpserver.PathSSE, base, mcpserver.PathMessage,
		base, mcpserver.PathHealth, base, mcpserver.PathStreamable, exe, desktop)
}
