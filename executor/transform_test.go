package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// TestTypeScriptParseBounded: esbuild's TypeScript parser is quadratic in
// a run of "a<" (50,000 of them took minutes in the server, past every
// deadline, and could not be stopped). The parse now runs in a transform
// process that the run's deadline kills: the run fails with a timeout,
// and the pool's one slot is free for the next run.
func TestTypeScriptParseBounded(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, QueueWait: time.Minute})
		res := e.Run(t.Context(), executor.Request{Code: strings.Repeat("a<", 50000), Language: executor.TypeScript, Timeout: 500 * time.Millisecond})
		if res.Error == nil || res.Error.Kind != executor.KindTimeout {
			t.Fatalf("a run of a<: %+v, want a timeout", res.Error)
		}
		wantOK(t, e.Run(t.Context(), executor.Request{Code: "const x: number = 1 + 1; return x", Language: executor.TypeScript}), "2")
	})
}

// TestTypeScriptDeepNesting: esbuild parses nesting by recursion, and a
// program of 100 KiB of "[" grew the server by hundreds of MiB. In the
// transform process it overflows a bounded stack and is reported as a
// syntax error that says what to change.
func TestTypeScriptDeepNesting(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationInProcess, executor.Config{PoolSize: 1})
	for _, lang := range []executor.Language{executor.TypeScript, executor.JavaScript} {
		err := e.Check(t.Context(), strings.Repeat("[", 100<<10), lang)
		if err == nil || err.Kind != executor.KindSyntax {
			t.Errorf("%s: %+v, want a syntax error", lang, err)
		}
	}
	res := e.Run(t.Context(), executor.Request{Code: strings.Repeat("[", 100<<10), Language: executor.TypeScript})
	if res.Error == nil || res.Error.Kind != executor.KindSyntax || !strings.Contains(res.Error.Message, "nests too deeply") {
		t.Errorf("run: %+v, want a syntax error about nesting", res.Error)
	}
}

// TestCheckDeadline: Check gives up at its context's deadline.
func TestCheckDeadline(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationInProcess, executor.Config{PoolSize: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := e.Check(ctx, strings.Repeat("a<", 50000), executor.TypeScript); err == nil || err.Kind != executor.KindTimeout {
		t.Fatalf("%+v, want a timeout", err)
	}
}
