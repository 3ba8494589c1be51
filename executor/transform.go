package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/evanw/esbuild/pkg/api"
)

// A transform process is a short-lived process in which esbuild parses
// one untrusted program: a TypeScript program to strip its types, a
// JavaScript one to locate the syntax error QuickJS found, a skill's code
// when it is saved. esbuild cannot be cancelled, its TypeScript parser is
// quadratic in some inputs (a run of "a<") and it parses nesting by
// recursion; in its own process it is bounded by the deadline of the run
// or call it serves (the process is killed then, or when the client gives
// up), by an address-space and stack limit, and, for runs, by the run's
// pool slot, which it holds meanwhile.

// transformStack bounds the stack of a transform process's goroutines:
// esbuild recurses once or a few times per level of nesting, and a
// program of 100 KiB of "[" otherwise grows one stack to gigabytes.
// Past it, the process dies and the program is reported as nested too
// deeply.
const transformStack = 64 << 20

// transformMemory bounds a transform process's address space (on Linux),
// what the Go runtime reserves included.
const transformMemory = 1 << 30

// maxTransformOutput bounds what the server reads from a transform
// process: the JavaScript and its source map, a few times the program.
func maxTransformOutput(code string) int64 { return 32*int64(len(code)) + 1<<20 }

// ServeTransform runs a transform process: it reads a program from in,
// prefixed with one byte naming its language ('j' JavaScript, 't'
// TypeScript), transforms it with esbuild and writes what came of it as
// JSON to out. Config.TransformCommand starts a program that calls it,
// such as codecell's hidden "sandbox-worker transform" command.
func ServeTransform(in io.Reader, out io.Writer) error {
	debug.SetMaxStack(transformStack)
	limitTransform(transformMemory)
	b, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	if len(b) == 0 {
		return errors.New("transform: no program")
	}
	loader := api.LoaderJS
	switch b[0] {
	case 'j':
	case 't':
		loader = api.LoaderTS
	default:
		return fmt.Errorf("transform: unknown language byte %q", b[0])
	}
	return json.NewEncoder(out).Encode(transformRaw(string(b[1:]), loader))
}

// transform turns code into JavaScript in a transform process that ends
// by ctx's deadline; timeout makes the error of a deadline that passed.
// Without a TransformCommand (a library user whose binary cannot start
// one) esbuild runs in this process, unbounded, as it did before.
func (e *Executor) transform(ctx context.Context, code string, lang Language, timeout func() *Error) (string, *sourceMap, *Error) {
	loader, fail := loaderOf(lang)
	if fail != nil {
		return "", nil, fail
	}
	argv := e.cfg.TransformCommand
	if len(argv) == 0 {
		return transform(code, loader)
	}
	if ctx.Err() != nil {
		return "", nil, transformStopped(ctx, timeout)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{} // nothing of the server's: no secrets, no configuration
	cmd.SysProcAttr = workerAttr()
	cmd.WaitDelay = time.Second
	lb := byte('j')
	if loader == api.LoaderTS {
		lb = 't'
	}
	cmd.Stdin = io.MultiReader(bytes.NewReader([]byte{lb}), strings.NewReader(code))
	stdout := &capped{max: maxTransformOutput(code)}
	stderr := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", nil, transformStopped(ctx, timeout)
	}
	var out transformed
	if err == nil && !stdout.over {
		err = json.Unmarshal(stdout.b.Bytes(), &out)
	}
	if err != nil {
		if stdout.over || strings.Contains(stderr.b.String(), "stack exceeds") || strings.Contains(stderr.b.String(), "out of memory") {
			e.cfg.Logger.Warn("transform process ran out of room", "bytes", len(code), "ms", time.Since(start).Milliseconds())
			return "", nil, &Error{Kind: KindSyntax, Name: "SyntaxError",
				Message: fmt.Sprintf("SyntaxError: the program nests too deeply, or is too large, to parse within %s of stack and %s of memory; flatten deeply nested brackets, or split the program", formatBytes(transformStack), formatBytes(transformMemory))}
		}
		e.cfg.Logger.Error("transform process failed", "err", err, "bytes", len(code))
		return "", nil, &Error{Kind: KindInternal, Message: "could not parse the program: the transform process failed: " + err.Error()}
	}
	if out.Err != nil {
		return "", nil, out.Err
	}
	return out.Code, out.sourceMap(), nil
}

// transformStopped is the error of a transform whose context ended.
func transformStopped(ctx context.Context, timeout func() *Error) *Error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) && timeout != nil {
		return timeout()
	}
	return canceledError(ctx)
}

// Check reports the first syntax error of a program, as esbuild parses
// it in a transform process bounded by ctx, without running it; nil
// means it parses. Use it to vet programs that are stored to run later.
func (e *Executor) Check(ctx context.Context, code string, lang Language) *Error {
	_, _, err := e.transform(ctx, code, lang, func() *Error {
		return limitError(KindTimeout, "the program could not be parsed before the call's deadline; send a shorter or simpler program")
	})
	return err
}

// capped keeps the first max bytes written to it and notes the rest.
type capped struct {
	b    bytes.Buffer
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - int64(c.b.Len()); int64(len(p)) > room {
		c.b.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.b.Write(p)
}
