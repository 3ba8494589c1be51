package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// outcomeError turns how a job ended into the run's error, with positions
// in the program as written.
func (r *Run) outcomeError(o outcome) *Error {
	cfg := r.e.cfg
	switch o.status {
	case outThrown:
		var x exception
		if err := json.Unmarshal(o.payload, &x); err != nil {
			x = exception{Message: "an exception that cannot be described"}
		}
		return r.exception(x, 0, 0, o.wrapped)
	case outJSError:
		if o.name == "" && o.raw == "null" {
			// The runtime itself never throws null: the engine does, when
			// the heap has no room left for an error object.
			return r.memoryError(false)
		}
		return r.exception(exception{Name: o.name, Message: o.message, Stack: o.stack, raw: o.raw}, o.line, o.col, o.wrapped)
	case outLimit:
		switch o.kind {
		case KindToolCalls:
			return limitError(KindToolCalls, "the program made more than %d tool calls, the limit per run. Batch the work into fewer calls, or split it across runs", cfg.MaxToolCalls)
		case KindOutput:
			return limitError(KindOutput, "console output passed its limit of %d lines or %s per run. Log less, or return the data as the result instead of printing it", cfg.MaxLogLines, formatBytes(int64(cfg.MaxLogBytes)))
		case KindResultSize:
			return r.exception(exception{Kind: KindResultSize, Size: o.size}, 0, 0, o.wrapped)
		case KindMemory:
			return r.memoryError(false)
		case KindTimeout:
			return r.timeoutError()
		}
		return &Error{Kind: KindInternal, Message: "the sandbox reported an unknown limit " + string(o.kind)}
	case outStopped:
		return r.timeoutError()
	case outUnsettled:
		if o.kind == KindMemory {
			return r.memoryError(true)
		}
		return &Error{Kind: KindUnsettled, Message: "the program is waiting for a promise that can never settle: no tool call is in flight and the sandbox has no timers or I/O. Make sure every promise you await is resolved or rejected"}
	case outLost:
		if o.kind == KindCanceled {
			return &Error{Kind: KindCanceled, Message: "the run was stopped with the run that called it"}
		}
		return &Error{Kind: KindInternal, Message: "the sandbox process exited unexpectedly; the run was abandoned (this is a bug in codecell, not in your program)"}
	case outInternal:
		r.e.log.Error("sandbox failed", "err", o.message)
		return &Error{Kind: KindInternal, Message: "the sandbox failed unexpectedly; the run was abandoned (this is a bug in codecell, not in your program)"}
	}
	return &Error{Kind: KindInternal, Message: fmt.Sprintf("the sandbox ended the run in an unknown way (%d)", o.status)}
}

// memoryError is the error of a run that used up its heap; stalled says
// it then waited for a promise that could never settle, which running
// out inside Promise.all or allSettled leaves behind.
func (r *Run) memoryError(stalled bool) *Error {
	heap := r.heap()
	r.mu.Lock()
	fromTools := int64(r.bytesFromTools)
	r.mu.Unlock()
	msg := fmt.Sprintf("the program used more than its %s heap limit", formatBytes(heap))
	if stalled {
		msg += ", and then waited for a promise that could never settle (running out of memory inside Promise.all or Promise.allSettled leaves its promise unsettled)"
	}
	if fromTools > heap/2 {
		// Tool results are built in the heap as they arrive: a program
		// that awaits many large ones at once holds them all.
		return &Error{Kind: KindMemory, Message: msg + fmt.Sprintf("; its tool calls returned %s. Await fewer large results at once (a few at a time rather than Promise.all over all of them), ask for smaller results, or keep less of each", formatBytes(fromTools))}
	}
	return &Error{Kind: KindMemory, Message: msg + ". Process data in smaller pieces, or keep less of it in memory"}
}

// heap returns the run's heap limit: a nested run's is its root's divided
// among the MaxNestedRuns alive at its depth, and halved at each depth, so
// that a tree holds at most about twice the root's heap.
func (r *Run) heap() int64 {
	cfg := r.e.cfg
	if r.depth == 0 {
		return cfg.MemoryLimit
	}
	return max(cfg.MemoryLimit/int64(cfg.MaxNestedRuns)>>r.depth, 1<<20)
}

// exception is an error as the prelude describes it.
type exception struct {
	Name     string          `json:"name"`
	Message  string          `json:"message"`
	Stack    string          `json:"stack"`
	Code     string          `json:"code"`
	Tool     string          `json:"tool"`
	Problems json.RawMessage `json:"problems"`
	Thrown   string          `json:"thrown"`
	Kind     Kind            `json:"kind"`
	Size     int64           `json:"size"`
	raw      string
}

// exception turns a JavaScript exception into a run error of the right
// kind, with its position in the program as written.
func (r *Run) exception(x exception, line, col int, wrapped bool) *Error {
	cfg := r.e.cfg
	switch {
	case x.Kind == KindResultSize:
		return limitError(KindResultSize, "the result is %s of JSON; the limit is %s. Return a summary, filter the data in your program, or return one page at a time", formatBytes(x.Size), formatBytes(int64(cfg.MaxResultBytes)))
	case x.Kind == KindResult:
		return &Error{Kind: KindResult, Name: x.Name, Message: x.Message}
	case x.Name == "InternalError" && x.Message == "out of memory":
		return r.memoryError(false)
	case x.Name == "InternalError" && x.Message == "stack overflow":
		return limitError(KindStack, "the call stack grew past its limit of %d frames; look for unbounded recursion", cfg.MaxStackFrames)
	case x.Name == "InternalError" && x.Message == "interrupted":
		return r.timeoutError()
	case x.Name == "SyntaxError" && line > 0:
		return r.syntaxError(x, line, col, wrapped)
	}
	pm := r.positions(wrapped)
	e := &Error{Kind: KindRuntime, Name: x.Name, Stack: pm.mapStack(x.Stack)}
	e.Line, e.Column = pm.stackPosition(x.Stack)
	switch {
	case x.Name == "ToolError":
		e.Kind = KindTool
		e.Tool, e.Code, e.Problems = x.Tool, x.Code, x.Problems
		e.Message = fmt.Sprintf("uncaught ToolError from %s (%s): %s. Catch it with try/catch to handle the failure in your program", x.Tool, x.Code, x.Message)
	case x.Thrown == "null" && !canThrow.MatchString(r.code):
		// QuickJS throws null for a heap exhausted inside a built-in when
		// it has no room left for the error object. A program that cannot
		// throw or reject a promise by itself did not throw this null.
		return r.memoryError(false)
	case x.Thrown == "null":
		e.Message = fmt.Sprintf("uncaught exception: null: the program threw null, or used up its %s heap inside a built-in (QuickJS reports that as null when no room is left for an error)", formatBytes(r.heap()))
	case x.Thrown != "":
		e.Message = fmt.Sprintf("uncaught exception: the program threw a %s, not an Error: %s", x.Thrown, x.Message)
	case x.Name != "":
		e.Message = x.Name + ": " + x.Message
	case x.raw != "":
		e.Message = "uncaught exception: " + x.raw
	default:
		e.Message = "uncaught exception: " + x.Message
	}
	return e
}

// syntaxError reports a program the engine could not parse. A JavaScript
// program is checked again with esbuild, which reports the problem where
// the user wrote it: QuickJS parses a program with top-level return inside
// a wrapper function, and blames the wrapper's closing brace for an
// unfinished last line.
func (r *Run) syntaxError(x exception, line, col int, wrapped bool) *Error {
	if r.smap == nil {
		// In a transform process bounded by the run's deadline (the run
		// itself may have ended, and its context with it); past it,
		// QuickJS's position stands.
		// At most a pool's worth of lookups at once.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(r.ctx), r.deadline)
		var e *Error
		select {
		case r.e.lookups <- struct{}{}:
			_, _, e = r.e.transform(ctx, r.code, JavaScript, nil)
			<-r.e.lookups
		case <-ctx.Done():
		}
		cancel()
		if e != nil && e.Kind == KindSyntax {
			return e
		}
	}
	pm := r.positions(wrapped)
	e := &Error{Kind: KindSyntax, Name: x.Name, Message: x.Name + ": " + x.Message}
	e.Line, e.Column = pm.position(line, col)
	if last := pm.lines; e.Line > last {
		// The wrapper's own line: the program ended too soon.
		e.Line, e.Column = last, len(lastLine(r.code))+1
	}
	return e
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// positionMap maps positions in the JavaScript evaluated to the program as
// written.
type positionMap struct {
	smap    *sourceMap
	wrapped bool
	lines   int // lines of the JavaScript evaluated, less any wrapper
}

func (r *Run) positions(wrapped bool) positionMap {
	return positionMap{smap: r.smap, wrapped: wrapped, lines: strings.Count(r.src, "\n") + 1}
}

// canThrow matches a program that may throw or reject by itself: one
// with a throw statement, a promise it makes, or a reject it can call.
var canThrow = regexp.MustCompile(`\bthrow\b|\breject\b|\bwithResolvers\b|\bnew\s+Promise\b`)

// stackPos matches a frame of a script. It is the program's own when its
// line is within the program: the prelude's lines start at preludeLine,
// and native frames have no position.
var stackPos = regexp.MustCompile(`<eval>:(\d+):(\d+)`)

// stackPosition returns the program position of the innermost frame of a
// stack trace that lies in the program.
func (pm positionMap) stackPosition(stack string) (int, int) {
	for _, m := range stackPos.FindAllStringSubmatch(stack, -1) {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line < 1 || line > pm.lines {
			continue
		}
		return pm.position(line, col)
	}
	return 0, 0
}

// mapStack rewrites the positions in a stack trace to the program as
// written, and drops the frames that are not the program's: the
// prelude's and the wrapper's.
func (pm positionMap) mapStack(stack string) string {
	if stack == "" {
		return stack
	}
	var kept []string
	for _, l := range strings.SplitAfter(stack, "\n") {
		if m := stackPos.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > pm.lines {
				continue
			}
		}
		kept = append(kept, l)
	}
	stack = strings.Join(kept, "")
	if pm.smap == nil && !pm.wrapped {
		return stack
	}
	return stackPos.ReplaceAllStringFunc(stack, func(s string) string {
		m := stackPos.FindStringSubmatch(s)
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		line, col = pm.position(line, col)
		return fmt.Sprintf("<eval>:%d:%d", line, col)
	})
}

// position maps a 1-based position in the evaluated source to the program
// as written: it removes the wrapper and follows the TypeScript source map.
func (pm positionMap) position(line, col int) (int, int) {
	if pm.wrapped && line == 1 {
		col = max(col-len(wrapPrefix), 1)
	}
	if l, c, ok := pm.smap.original(line, col); ok {
		return l, c
	}
	return line, col
}
