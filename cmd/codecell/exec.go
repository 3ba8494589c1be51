package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools/upstream"
)

func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	hardened := hardenProcess()
	fs := newConfigCommand("exec", "Usage: codecell exec [flags] FILE|-\n\nRun a program through the same path as execute_code and print the run record as JSON.\nExit status 1 when the run fails.", stderr)
	lang := fs.String("lang", "", "language of the program: javascript (js) or typescript (ts); default from the file name (.ts, .mts), else javascript")
	runTimeout := fs.Duration("run-timeout", 0, "deadline of this run; default --timeout")
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"exec takes one argument: a program file, or - to read it from stdin (echo '1+1' | codecell exec -)"}
	}
	path := fs.Arg(0)
	language, err := execLanguage(*lang, path)
	if err != nil {
		return err
	}
	var code []byte
	if path == "-" {
		code, err = io.ReadAll(stdin)
	} else {
		code, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read program: %w", err)
	}

	// One program, run once: it may call any upstream server, so wait for
	// each to be tried, as long as a handshake may take.
	cfg.Server.UpstreamWait = Duration(upstream.DefaultHandshakeTimeout)
	log := newLogger(cfg, stderr)
	hardened.log(log)
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, closeServer, err := newServer(cfg, store, log, nil)
	if err != nil {
		return err
	}
	defer closeServer()
	sources := startOpenAPI(cfg, srv.Registry(), store, log)
	defer sources.close()
	sources.wait(ctx) // the program may call their tools

	res, _ := srv.Execute(ctx, engine.Execution{Code: string(code), Language: language, Timeout: *runTimeout})
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run record: %w", err)
	}
	fmt.Fprintf(stdout, "%s\n", out)
	if res.Status != executor.StatusOK {
		return errExitQuiet
	}
	return nil
}

// execLanguage is the language --lang names (javascript, typescript or
// their extensions js and ts), or, when it is empty, the one the file name
// suggests.
func execLanguage(lang, path string) (executor.Language, error) {
	switch strings.ToLower(lang) {
	case "javascript", "js":
		return executor.JavaScript, nil
	case "typescript", "ts":
		return executor.TypeScript, nil
	case "":
		if ext := filepath.Ext(path); ext == ".ts" || ext == ".mts" {
			return executor.TypeScript, nil
		}
		return executor.JavaScript, nil
	}
	return "", usageError{fmt.Sprintf("--lang %q: want javascript (js) or typescript (ts)", lang)}
}
