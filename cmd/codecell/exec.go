package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
)

func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newConfigCommand("exec", "Usage: codecell exec [flags] FILE|-\n\nRun a program through the same path as execute_code and print the run record as JSON.\nExit status 1 when the run fails.", stderr)
	lang := fs.String("lang", "", "language of the program: javascript or typescript (default from the file name, else javascript)")
	runTimeout := fs.Duration("run-timeout", 0, "deadline of this run (default -timeout)")
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"exec takes one argument: a program file, or - for stdin"}
	}
	path := fs.Arg(0)
	var code []byte
	if path == "-" {
		code, err = io.ReadAll(stdin)
	} else {
		code, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read program: %w", err)
	}
	language := executor.Language(*lang)
	if language != "" && language != executor.JavaScript && language != executor.TypeScript {
		return usageError{fmt.Sprintf("-lang %q: want javascript or typescript", *lang)}
	}
	if language == "" {
		language = executor.JavaScript
		if ext := filepath.Ext(path); ext == ".ts" || ext == ".mts" {
			language = executor.TypeScript
		}
	}

	log := newLogger(cfg, stderr)
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, closeServer, err := newServer(cfg, store, log)
	if err != nil {
		return err
	}
	defer closeServer()

	res, _ := srv.Execute(ctx, mcpserver.Execution{Code: string(code), Language: language, Timeout: *runTimeout})
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
