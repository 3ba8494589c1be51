package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/codecell/codecell/mcpserver"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	httpAddr := fs.String("http", "", "serve Streamable HTTP (/mcp) and SSE (/sse) on this address instead of stdio, e.g. 127.0.0.1:7410")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long to let requests in progress finish")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: codecell serve [flags]\n\nServe MCP over stdio (for MCP hosts such as Claude Desktop), or over HTTP with -http.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	log, err := o.logger(stderr)
	if err != nil {
		return err
	}
	srv, err := o.newServer(log)
	if err != nil {
		return err
	}
	defer srv.Close()

	if *httpAddr == "" {
		log.Info("serving MCP over stdio", "version", version)
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *httpAddr, err)
	}
	printConnectHelp(stderr, ln.Addr().String())
	log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "version", version)
	err = srv.ServeHTTP(ctx, ln, *grace)
	log.Info("stopped")
	return err
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
	desktop, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{
			"codecell": map[string]any{"command": exe, "args": []string{"serve"}},
		},
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
