package executor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/executor"
)

// TestAbsentNamesSayWhy (issue 20): what a sandbox does not have —
// timers, the network, modules, a process — fails with what to use
// instead, and a misspelt namespace with the one meant, where a bare
// ReferenceError said nothing.
func TestAbsentNamesSayWhy(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		for _, tt := range []struct{ code, msg string }{
			{"await new Promise(r => setTimeout(r, 10))", "ReferenceError: 'setTimeout' is not defined: a run has no timers: to wait, await util.sleep({ms})"},
			{"await fetch('https://example.com')", "'fetch' is not defined: a program has no network: HTTP APIs are reached through tool sources"},
			{"const fs = require('fs')", "'require' is not defined: a program has no modules"},
			{"process.env.GITHUB_TOKEN", "'process' is not defined: a program has no process or environment"},
			{"await utl.echo({text: 'hi'})", "'utl' is not defined; did you mean the namespace util?"},
			{"await Workspace.write('a', 'b')", "'Workspace' is not defined; did you mean the namespace workspace?"},
			{"notAThing + 1", "'notAThing' is not defined"},
		} {
			res := run(t, e, tt.code)
			wantKind(t, res, executor.KindRuntime, tt.msg)
		}
		// typeof still says what is there: code that tests for Node works.
		wantOK(t, run(t, e, "typeof process + ' ' + typeof require"), `"undefined undefined"`)
	})
}

// TestEmptyNamespace: a category installed without tools (its source is
// loading or unavailable) is a namespace whose calls reach the
// dispatcher, which says why, instead of a ReferenceError.
func TestEmptyNamespace(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		d := dispatcher(func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			if name == "github.search_issues" {
				return nil, &codedError{code: "loading", tool: name, msg: "github is still loading (ready in about 12 s)"}
			}
			return echo(ctx, name, args)
		})
		l := executor.NewLayout([]executor.Function{{Name: "util.echo"}, {Name: "github"}})
		res := e.Run(context.Background(), executor.Request{Code: "await github.search_issues({q: 'x'})", Dispatcher: d, Functions: l})
		wantKind(t, res, executor.KindTool, "github is still loading")
		if res.Error.Code != "loading" || res.Error.Tool != "github.search_issues" {
			t.Errorf("error %+v: want code loading for github.search_issues", res.Error)
		}
		res = e.Run(context.Background(), executor.Request{Code: "Object.keys(github).length + ' ' + ('search_issues' in github)", Dispatcher: d, Functions: l})
		wantOK(t, res, `"0 false"`)
	})
}
