package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/evanw/esbuild/pkg/api"
)

// A transform process is a process in which esbuild parses untrusted
// programs, one at a time: a TypeScript program to strip its types, a
// JavaScript one to locate the syntax error QuickJS found, a skill's code
// when it is saved. esbuild cannot be cancelled, its TypeScript parser is
// quadratic in some inputs (a run of "a<") and it parses nesting by
// recursion; in its own process it is bounded by the deadline of the run
// or call it serves (the process is killed then, or when the client gives
// up), by a data and stack limit, and, for runs, by the run's pool slot,
// which it holds meanwhile. Processes are kept warm and reused
// (transformPool).

// transformStack bounds the stack of a transform process's goroutines:
// esbuild recurses once or a few times per level of nesting, and a
// program of 100 KiB of "[" otherwise grows one stack to gigabytes.
// Past it, the process dies and the program is reported as nested too
// deeply.
const transformStack = 64 << 20

// transformMemory bounds a transform process's data (on Linux): its heap
// and stacks.
const transformMemory = 1 << 30

// maxTransformOutput bounds what the server reads from a transform
// process: the JavaScript and its source map, a few times the program.
func maxTransformOutput(code string) int64 { return 32*int64(len(code)) + 1<<20 }

// maxTransformInput bounds the frames a transform process accepts: a
// program, which the executor caps far lower (maxCodeBytes).
const maxTransformInput = 64 << 20

// ServeTransform runs a transform process: it says hello on out, then
// reads programs from in, each in a frame that names its language ('j'
// JavaScript, 't' TypeScript), transforms each with esbuild and answers
// with what came of it, as JSON, and the memory the process holds, until
// in ends. Config.TransformCommand starts a program that calls it, such
// as codecell's hidden "sandbox-worker transform" command.
func ServeTransform(in io.Reader, out io.Writer) error {
	debug.SetMaxStack(transformStack)
	limitTransform(transformMemory)
	r := newFrameReader(in)
	r.max = maxTransformInput
	w := newFrameWriter(out)
	if err := w.write(frameHello, 0, nil, []byte(transformMagic)); err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	for {
		f, err := r.read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("transform: %w", err)
		}
		if f.typ != frameParse || len(f.body) == 0 {
			return fmt.Errorf("transform: unexpected frame of type %d", f.typ)
		}
		loader := api.LoaderJS
		switch f.body[0] {
		case 'j':
		case 't':
			loader = api.LoaderTS
		default:
			return fmt.Errorf("transform: unknown language byte %q", f.body[0])
		}
		b, err := json.Marshal(transformRaw(string(f.body[1:]), loader))
		if err != nil {
			return fmt.Errorf("transform: %w", err)
		}
		if err := w.write(frameParsed, f.job, enc(nil).u64(heldMemory()), b); err != nil {
			return fmt.Errorf("transform: %w", err)
		}
	}
}

// heldMemory is the memory the Go runtime of this process holds from the
// system: mapped and not given back. It stays near the peak of the
// largest parse so far until the scavenger returns it.
func heldMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// transform turns code into JavaScript in a transform process that is
// killed at ctx's end; timeout makes the error of a deadline that passed.
// Without a TransformCommand (a library user whose binary cannot start
// one) esbuild runs in this process, unbounded, as it did before.
func (e *Executor) transform(ctx context.Context, code string, lang Language, timeout func() *Error) (string, *sourceMap, *Error) {
	loader, fail := loaderOf(lang)
	if fail != nil {
		return "", nil, fail
	}
	if e.transforms == nil {
		return transform(code, loader)
	}
	if ctx.Err() != nil {
		return "", nil, transformStopped(ctx, timeout)
	}
	lb := byte('j')
	if loader == api.LoaderTS {
		lb = 't'
	}
	start := time.Now()
	var t *transformProc
	var b []byte
	var held uint64
	var err error
	// A process that died while idle is found when the program cannot be
	// sent to it; the parse is tried once more, in another.
	for try := 0; try < 2; try++ {
		if t, err = e.transforms.get(); err != nil {
			if ctx.Err() != nil {
				return "", nil, transformStopped(ctx, timeout)
			}
			e.log.Error("transform process failed", "err", err, "bytes", len(code))
			return "", nil, &Error{Kind: KindInternal, Message: "could not parse the program: could not start a transform process: " + err.Error()}
		}
		stop := context.AfterFunc(ctx, t.kill)
		b, held, err = t.parse(lb, code, maxTransformOutput(code))
		if !stop() || ctx.Err() != nil {
			e.transforms.discard(t)
			return "", nil, transformStopped(ctx, timeout)
		}
		if !errors.Is(err, errTransformGone) {
			break
		}
		e.transforms.discard(t)
	}
	var out transformed
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		e.transforms.discard(t)
		stderr := t.waitExit(ctx)
		if errors.Is(err, errTransformOutput) || strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "out of memory") {
			e.log.Warn("transform process ran out of room", "bytes", len(code), "ms", time.Since(start).Milliseconds())
			return "", nil, &Error{Kind: KindSyntax, Name: "SyntaxError",
				Message: fmt.Sprintf("SyntaxError: the program nests too deeply, or is too large, to parse within %s of stack and %s of memory; flatten deeply nested brackets, or split the program", formatBytes(transformStack), formatBytes(transformMemory))}
		}
		e.log.Error("transform process failed", "err", err, "bytes", len(code))
		return "", nil, &Error{Kind: KindInternal, Message: "could not parse the program: the transform process failed: " + err.Error()}
	}
	e.transforms.giveBack(t, held)
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
