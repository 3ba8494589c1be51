package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codecell/codecell/mcpserver"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	hardened := hardenProcess()
	fs := newConfigCommand("serve", "Usage: codecell serve [flags]\n\nServe MCP over stdio (for MCP hosts such as Claude Desktop), or over Streamable HTTP and SSE with --http ADDR.", stderr)
	stdio := fs.Bool("stdio", false, "serve MCP over stdio even when server.http is set (in the config file or CODECELL_SERVER_HTTP): what an MCP host's entry should say")
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q (flags go before them: codecell serve --http ADDR)", fs.Args())}
	}
	if *stdio {
		if slices.Contains(fs.loaded.flags, "server.http") {
			return usageError{"serve: --stdio and --http contradict each other; give one"}
		}
		cfg.Server.HTTP = ""
	}
	log := newLogger(cfg, stderr)
	hardened.log(log)
	stopProfiles, err := startProfiles(os.Getenv, log)
	if err != nil {
		return err
	}
	defer stopProfiles()
	addr := cfg.Server.HTTP
	if addr != "" && publicBind(addr) && len(cfg.Auth.Tokens) == 0 && !cfg.Auth.OAuth.enabled() {
		return fmt.Errorf("refusing to serve on %s without authentication: anyone who can reach it could run code here. "+
			"Configure bearer tokens ([[auth.tokens]] in the config file, or CODECELL_AUTH_TOKENS=principal=token) or OAuth ([auth.oauth]), or bind a loopback address such as 127.0.0.1:7410", addr)
	}
	var ln net.Listener
	if addr != "" {
		// Before the store opens, so that a port in use fails at once.
		if ln, err = listen(addr); err != nil {
			return err
		}
		defer ln.Close()
		// The stdio upstreams, which start below, may not connect to it
		// (attack27 T1).
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			cfg.listening = []int{a.Port}
		}
	}
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	tp, stopTracing, err := startTracing(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	defer flushTraces(stopTracing, log) // after the server closes
	srv, closeServer, err := newServer(cfg, store, log, tp)
	if err != nil {
		return err
	}
	defer closeServer()
	sources := startOpenAPI(cfg, srv.Registry(), store, log)
	defer sources.close()
	stopPruning := prunePeriodically(ctx, store, time.Hour, log)
	defer stopPruning()

	if addr == "" {
		log.Info("serving MCP over stdio", "version", version)
		if isTerminal(stdin) {
			fmt.Fprintln(stderr, "codecell is waiting for an MCP host on stdin (Ctrl-C to stop). To try it in a browser or the MCP Inspector, run codecell serve --http 127.0.0.1:7410 (or make run).")
		}
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	launch, err := stdioLaunch(cfg, fs.loaded)
	if err != nil {
		return err
	}
	printConnectHelp(stderr, ln.Addr().String(), launch)
	log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "version", version)
	err = srv.ServeHTTP(ctx, ln, cfg.Server.ShutdownGrace.D())
	log.Info("stopped")
	return err
}

// isTerminal reports whether r is a terminal, where a person rather than
// an MCP host would be typing.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// listen listens on addr; when the port is taken, the error says so and
// names another.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		next := "127.0.0.1:7411"
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65535 {
				next = net.JoinHostPort(host, strconv.Itoa(n+1))
			}
		}
		return nil, fmt.Errorf("listen on %s: the address is in use (another codecell?); serve on another with --http %s, or make run ADDR=%s", addr, next, next)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// prunePeriodically applies the store's retention every interval (it was
// applied at open) until the returned function is called.
func prunePeriodically(ctx context.Context, store pruner, every time.Duration, log *slog.Logger) (stop func()) {
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

// launch is how to start an stdio server like this one: the executable,
// its arguments and the environment variables it needs.
type launch struct {
	exe  string
	args []string
	env  []string // NAME=value, sorted
}

// stdioLaunch is the command line of an stdio server with this server's
// configuration: its file, and every key set by a flag or the environment
// (as a flag where there is one, else as a variable), paths made absolute
// and the data directory always named, so that a host that starts it from
// another directory or environment gets the same catalogue and store.
func stdioLaunch(cfg Config, pv provenance) (launch, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = "codecell"
	}
	// --stdio: an entry that copies a configuration file serving HTTP
	// must still answer its host on stdio.
	l := launch{exe: exe, args: []string{"serve", "--stdio"}}
	if pv.file != "" {
		abs, err := filepath.Abs(pv.file)
		if err != nil {
			return l, err
		}
		l.args = append(l.args, "--config", abs)
	}
	dir, err := cfg.dataDir()
	if err != nil {
		return l, err
	}
	cfg.Server.DataDir = dir
	set := map[string]bool{"server.data_dir": true}
	for _, k := range pv.flags {
		set[k] = true
	}
	for _, f := range configFields() {
		if slices.Contains(pv.env, envName(f.key)) {
			set[f.key] = true
		}
	}
	for _, f := range configFields() {
		if !set[f.key] || f.key == "server.http" {
			continue
		}
		v := reflect.ValueOf(cfg).FieldByIndex(f.path).Interface()
		var text string
		switch v := v.(type) {
		case Duration:
			text = v.D().String()
		case []string:
			text = strings.Join(v, ",")
		default:
			text = fmt.Sprint(v)
		}
		if f.key == "memory.dsn" {
			// Named, its password never printed: the operator adds it.
			text = hideDSNPassword(text)
		}
		if pathKey(f.key) && text != "" {
			if text, err = filepath.Abs(text); err != nil {
				return l, err
			}
		}
		if name := flagName(f.key); name != "" {
			l.args = append(l.args, "--"+name, text)
		} else {
			l.env = append(l.env, envName(f.key)+"="+text)
		}
	}
	return l, nil
}

// pathKey reports whether the key holds a file or directory path.
func pathKey(key string) bool {
	switch key {
	case "server.catalog", "server.data_dir", "memory.path", "filter.key_file", "server.mcp_config":
		return true
	}
	return false
}

// flagName is the flag that sets key, or "".
func flagName(key string) string {
	for _, spec := range flagSpecs {
		if spec.key == key {
			return spec.name
		}
	}
	return ""
}

// printConnectHelp tells a person at the terminal how to connect: the
// HTTP endpoints, and an MCP Inspector command and a Claude Desktop entry
// that start an stdio server with this server's configuration.
func printConnectHelp(w io.Writer, addr string, l launch) {
	base := "http://" + addr
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	desktopServer := server{Command: l.exe, Args: l.args}
	inspector := []string{"npx", "@modelcontextprotocol/inspector"}
	for _, kv := range l.env {
		k, v, _ := strings.Cut(kv, "=")
		if desktopServer.Env == nil {
			desktopServer.Env = map[string]string{}
		}
		desktopServer.Env[k] = v
		inspector = append(inspector, "-e", kv)
	}
	// The Inspector takes --config and -e as its own flags; after --,
	// everything is the server's command line.
	inspector = append(inspector, "--", l.exe)
	inspector = append(inspector, l.args...)
	desktop, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]server{"codecell": desktopServer},
	}, "  ", "  ")
	fmt.Fprintf(w, `
codecell %s is listening.

  Streamable HTTP   %s%s
  SSE               %s%s   (messages to %s%s)
  Health            %s%s   (ready: %s%s)
  Metrics           %s%s

  MCP Inspector     npx @modelcontextprotocol/inspector
                    then choose "Streamable HTTP" and connect to %s%s
                    or over stdio, with this server's settings:
                    %s

  Claude Desktop    add to claude_desktop_config.json (stdio, this server's settings):
  %s

Press Ctrl-C to stop.

`, version, base, mcpserver.PathStreamable, base, mcpserver.PathSSE, base, mcpserver.PathMessage,
		base, mcpserver.PathHealth, base, mcpserver.PathReady, base, mcpserver.PathMetrics, base, mcpserver.PathStreamable, shellJoin(inspector), desktop)
}

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
		}) < 0 {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
