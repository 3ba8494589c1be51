package executor_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/codecell/codecell/executor"
)

// workerArg makes this test binary a sandbox worker: the executors these
// tests start with process isolation run it so.
const workerArg = "sandbox-worker"

// transformArg, after workerArg, makes this test binary a transform
// process.
const transformArg = "transform"

// workerCommand is the argv that starts this test binary as a worker;
// transformCommand as a transform process.
var workerCommand, transformCommand []string

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == workerArg && os.Args[2] == transformArg {
		if err := executor.ServeTransform(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == workerArg {
		if err := executor.ServeWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerCommand = []string{exe, workerArg}
	transformCommand = []string{exe, workerArg, transformArg}
	// CODECELL_WORKER_BINARY runs the tests and benchmarks against the
	// workers of a built codecell binary, which confine themselves:
	//
	//	CODECELL_WORKER_BINARY=$PWD/bin/codecell go test -tags sqlite_fts5 -run '^$' -bench RunTrivial -benchtime 200x ./executor/
	if bin := os.Getenv("CODECELL_WORKER_BINARY"); bin != "" {
		workerCommand = []string{bin, workerArg}
		transformCommand = []string{bin, workerArg, transformArg}
	}
	os.Exit(m.Run())
}

// modes are the isolation modes every behaviour is tested in.
var modes = []executor.Isolation{executor.IsolationProcess, executor.IsolationInProcess}

// eachMode runs f in a parallel subtest per isolation mode.
func eachMode(t *testing.T, f func(t *testing.T, mode executor.Isolation)) {
	t.Helper()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			f(t, mode)
		})
	}
}

// inMode returns cfg set for mode.
func inMode(mode executor.Isolation, cfg executor.Config) executor.Config {
	cfg.Isolation = mode
	if cfg.TransformCommand == nil {
		cfg.TransformCommand = transformCommand
	}
	if mode == executor.IsolationProcess {
		cfg.WorkerCommand = workerCommand
	}
	return cfg
}
