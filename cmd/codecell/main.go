// Command codecell is an MCP server that runs agents' JavaScript and
// TypeScript in a sandbox against a catalogue of tools.
//
// Usage:
//
//	codecell serve [flags]        serve MCP over stdio, or HTTP with --http
//	codecell exec [flags] FILE    run a program from a file (- for stdin)
//	codecell memory stats|search  inspect, export, import or reindex the store
//	codecell config init|check    write or validate the configuration file
//	codecell version              print the version
//
// Run "codecell <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/codecell/codecell/tools"
)

// version is set at build time with -ldflags "-X main.version=…"; a
// binary built by `go install …@v1.2.3` reports its module version instead.
var version = "0.1.0-dev"

func init() {
	if info, ok := debug.ReadBuildInfo(); ok && version == "0.1.0-dev" {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts a graceful shutdown, a second one
	// gets the default behaviour: the process exits at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// errExitQuiet asks for exit status 1 without a message: the command has
// already said what went wrong.
var errExitQuiet = errors.New("exit 1")

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errExitQuiet):
		return 1
	}
	var ue usageError
	var cp configProblem
	if errors.As(err, &ue) || errors.As(err, &cp) {
		fmt.Fprintf(stderr, "codecell: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "codecell: %v\n", err)
	return 1
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usage = `codecell — an MCP server that runs agents' code against a tool catalogue

Usage:
  codecell serve [flags]         serve MCP over stdio (default) or HTTP (--http ADDR)
  codecell exec [flags] FILE|-   run a program through the same path as execute_code
  codecell memory stats|search|export|import|reindex|migrate
                                 inspect, back up or move what agents stored
  codecell config init|check|rotate-key
                                 write a commented config file, validate one, or rotate the token key
  codecell version               print the version

Run "codecell <command> --help" for the flags of a command.
`

// commands are the subcommands run dispatches, for suggestions.
var commands = []string{"serve", "exec", "memory", "config", "version", "help"}

// run is the whole program: it dispatches to a subcommand. A command's
// -h or --help prints its usage to stdout and succeeds.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdin, stdout, stderr)
	var help helpRequested
	if errors.As(err, &help) {
		_, err = io.WriteString(stdout, help.text)
		return err
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given; to serve MCP over stdio, run codecell serve"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "exec":
		return runExec(ctx, rest, stdin, stdout, stderr)
	case "config":
		return runConfig(rest, stdout, stderr)
	case "memory":
		return runMemory(ctx, rest, stdin, stdout, stderr)
	case workerCommandName:
		return runWorker(rest, stdin, stdout)
	case confineCommandName:
		return runConfine(rest, stderr)
	case "version", "--version", "-version":
		if len(rest) > 0 {
			return usageError{fmt.Sprintf("version takes no arguments, got %q", rest)}
		}
		fmt.Fprintf(stdout, "codecell %s\n", version)
		return nil
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 && rest[0] != "help" && !strings.HasPrefix(rest[0], "-") {
			// codecell help serve is codecell serve -h.
			return dispatch(ctx, []string{rest[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", cmd)
	if s := closestWord(cmd, commands); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return usageError{msg + " (codecell --help lists the commands)"}
}

// closestWord returns the word of words nearest to w, or "" when none is
// close.
func closestWord(w string, words []string) string {
	best, bestD := "", 3
	for _, c := range words {
		if d := tools.EditDistance(w, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
