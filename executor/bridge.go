package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"modernc.org/quickjs"
)

// The host functions below are the whole bridge between a program and Go.
// The VM calls them on the run's goroutine; each checks its input, and
// none panics: a failure becomes a stopped run or a rejected promise.

var logLevels = [...]string{"log", "info", "warn", "error", "debug"}

// hostCall starts a tool call and returns a promise for its result. The
// call runs on its own goroutine; its completion is posted back to the
// run's loop, which settles the promise on the VM's goroutine.
func (in *instance) hostCall(name, args string) quickjs.Value {
	r := in.run
	if r == nil || r.isStopped() {
		return quickjs.UndefinedValue
	}
	max := r.e.cfg.MaxToolCalls
	if len(r.calls) >= max {
		r.stop(limitError(KindToolCalls, "the program made more than %d tool calls, the limit per run. Batch the work into fewer calls, or split it across runs", max))
		in.vm.Interrupt()
		return quickjs.UndefinedValue
	}
	pc, err := in.vm.NewPromiseCapability()
	if err != nil {
		r.stop(limitError(KindMemory, "the program used more than its %s heap limit", formatBytes(r.e.cfg.MemoryLimit)))
		in.vm.Interrupt()
		return quickjs.UndefinedValue
	}
	id := len(r.calls)
	r.calls = append(r.calls, CallRecord{Tool: name, ArgsBytes: len(args)})
	r.pending[id] = pc
	r.e.calls.Add(1)
	go r.dispatch(id, name, json.RawMessage(args))
	return pc.Promise
}

// dispatch runs one tool call and posts its completion to the run.
func (r *run) dispatch(id int, name string, args json.RawMessage) {
	defer r.e.calls.Done()
	select {
	case r.inflight <- struct{}{}:
	case <-r.exited:
		return
	}
	defer func() { <-r.inflight }()

	start := time.Now()
	out, err := callTool(r.ctx, r.req.Dispatcher, name, args)
	c := completion{id: id, result: out, err: err, dur: time.Since(start)}
	select {
	case r.done <- c:
	case <-r.exited:
	}
}

// callTool calls the dispatcher and turns a panic into an error.
func callTool(ctx context.Context, d Dispatcher, name string, args json.RawMessage) (out json.RawMessage, err error) {
	if d == nil {
		return nil, fmt.Errorf("no tools are available to this program (tried %s)", name)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("tool %s crashed; this is a bug in the tool, not in your program", name)
		}
	}()
	out, err = d.Call(ctx, name, args)
	if err == nil && !json.Valid(out) {
		if len(out) == 0 {
			return json.RawMessage("null"), nil
		}
		return nil, fmt.Errorf("tool %s returned a result that is not JSON", name)
	}
	return out, err
}

// rejection is the reason a tool call's promise is rejected with; the
// prelude turns it into a ToolError.
type rejection struct {
	Message  string `json:"message"`
	Code     string `json:"code"`
	Tool     string `json:"tool"`
	Problems any    `json:"problems,omitempty"`
}

// detailedError is an error with structured details for the program, such
// as the argument problems of a validation error.
type detailedError interface {
	ErrorDetails() any
}

// complete settles the promise of a finished tool call.
func (r *run) complete(c completion) {
	pc, ok := r.pending[c.id]
	if !ok {
		return
	}
	delete(r.pending, c.id)
	defer func() {
		pc.Resolve.Free()
		pc.Reject.Free()
	}()
	rec := &r.calls[c.id]
	rec.DurationMS = ms(c.dur)
	if !r.enter() {
		return
	}
	var err error
	if c.err == nil {
		rec.OK = true
		rec.ResultBytes = len(c.result)
		r.bytesFromTools += len(c.result)
		_, err = pc.Resolve.Call(quickjs.UndefinedValue, c.result)
	} else {
		rj := rejection{Message: c.err.Error(), Code: "tool_failed", Tool: rec.Tool}
		var ce CodedError
		if errors.As(c.err, &ce) {
			rj.Code = ce.ErrorCode()
			if t := ce.ErrorTool(); t != "" {
				rj.Tool = t
			}
		}
		var de detailedError
		if errors.As(c.err, &de) {
			rj.Problems = de.ErrorDetails()
		}
		rec.Code = rj.Code
		_, err = pc.Reject.Call(quickjs.UndefinedValue, rj)
	}
	if err != nil {
		r.failWith(err)
		r.stop(r.fail)
	}
}

// hostLog records one console line, and ends the run when the output
// passes its limits.
func (in *instance) hostLog(level int, text string) {
	r := in.run
	if r == nil || r.isStopped() {
		return
	}
	cfg := r.e.cfg
	if len(r.logs) >= cfg.MaxLogLines || r.logBytes+len(text) > cfg.MaxLogBytes {
		r.stop(limitError(KindOutput, "console output passed its limit of %d lines or %s per run. Log less, or return the data as the result instead of printing it", cfg.MaxLogLines, formatBytes(int64(cfg.MaxLogBytes))))
		in.vm.Interrupt()
		return
	}
	if level < 0 || level >= len(logLevels) {
		level = 0
	}
	line := LogLine{Level: logLevels[level], Message: text}
	r.logs = append(r.logs, line)
	r.logBytes += len(text)
	if r.req.OnLog != nil {
		r.req.OnLog(line)
	}
}

// hostProgress forwards progress(message, fraction); a fraction outside
// 0..1 (or none) is reported as -1, meaning unknown.
func (in *instance) hostProgress(message string, fraction any) {
	r := in.run
	if r == nil || r.isStopped() || r.req.OnProgress == nil {
		return
	}
	f := -1.0
	switch v := fraction.(type) {
	case int:
		f = float64(v)
	case float64:
		f = v
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		f = -1
	}
	if len(message) > 1024 {
		message = message[:1024]
	}
	r.req.OnProgress(message, f)
}

// hostDone receives the program's outcome from the prelude: its result as
// JSON, or a description of the exception that ended it.
func (in *instance) hostDone(ok bool, payload string) {
	r := in.run
	if r == nil || r.settled {
		return
	}
	r.settled = true
	if ok {
		if n := len(payload); n > r.e.cfg.MaxResultBytes {
			r.fail = r.exception(exception{Kind: KindResultSize, Size: n}, 0, 0)
			return
		}
		r.value = json.RawMessage(payload)
		return
	}
	var x exception
	if err := json.Unmarshal([]byte(payload), &x); err != nil {
		x = exception{Message: "an exception that cannot be described"}
	}
	r.fail = r.exception(x, 0, 0)
}
