package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/codecell/codecell/executor"
)

// workerCommandName is the hidden command that runs a sandbox worker: the
// process in which the executor runs programs under process isolation.
// Users never type it; the server starts its workers with it.
const workerCommandName = "sandbox-worker"

// runWorker serves the executor that started this process over stdin and
// stdout until stdin ends. Started by the executor (no argument), on Linux
// it first confines itself and executes itself again inside the confinement
// (confineWorkerAndExec), before it reads any program; it fails, serving
// nothing, when it cannot.
func runWorker(args []string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case len(args) == 1 && args[0] == transformArg && workerConfines:
		return fmt.Errorf("%s: %w", workerCommandName, confineWorkerAndExec(transformArg))
	case len(args) == 1 && args[0] == transformArg,
		len(args) == 2 && args[0] == workerConfinedArg && args[1] == transformArg:
		hardenWorker()
		return executor.ServeTransform(stdin, stdout)
	case len(args) == 0 && workerConfines:
		return fmt.Errorf("%s: %w", workerCommandName, confineWorkerAndExec(""))
	case len(args) == 0:
	case len(args) > 1 || args[0] != workerConfinedArg:
		return usageError{workerCommandName + " is started by codecell for its sandbox"}
	}
	hardenWorker()
	return executor.ServeWorker(stdin, stdout)
}

// transformArg makes the hidden command a transform process: esbuild
// parses one program there (executor.ServeTransform), confined as a
// sandbox worker is.
const transformArg = "transform"

// transformCommand is the argv the executor starts its transform
// processes with, under either isolation.
func transformCommand() []string {
	exe, err := selfExe()
	if err != nil {
		return nil
	}
	return []string{exe, workerCommandName, transformArg}
}

// workerCommand is the argv the executor starts its workers with: this
// binary, with the hidden command. Without it (the path of this binary is
// unknown) the executor runs programs in-process.
func workerCommand() []string {
	exe, err := selfExe()
	if err != nil {
		return nil
	}
	return []string{exe, workerCommandName}
}

// logWorkerConfinement says once how the sandbox workers are confined
// (confineWorkerAndExec): each confines itself, the server only tells.
func logWorkerConfinement(log *slog.Logger) {
	abi, why := landlockABI()
	if abi < 1 {
		log.Warn("sandbox workers run without Landlock: "+why+"; a program that escapes the VM can read the files of codecell's user", "component", "sandbox")
		return
	}
	log.Info("sandbox workers run confined", "component", "sandbox", "landlock_abi", abi)
}
