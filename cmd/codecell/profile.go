package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// Profiling the server is for its developers, and is off unless one of
// these variables names a file: CODECELL_DEBUG_CPUPROFILE writes a CPU
// profile (go tool pprof), CODECELL_DEBUG_TRACE an execution trace (go
// tool trace), each from the start of serve until it stops. Nothing
// listens for them: a profile is written to the file named, never served.
// The sandbox workers are other processes, with none of the server's
// environment, and are not profiled.
const (
	envCPUProfile = envPrefix + "DEBUG_CPUPROFILE"
	envTrace      = envPrefix + "DEBUG_TRACE"
)

// startProfiles starts what getenv asks for, and returns the function
// that stops it and closes its files.
func startProfiles(getenv func(string) string, log *slog.Logger) (stop func(), err error) {
	var stops []func() error
	stop = func() {
		for _, f := range stops {
			if err := f(); err != nil {
				log.Error("write a debug profile", "err", err)
			}
		}
	}
	if path := getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", envCPUProfile, err), f.Close())
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
		log.Warn("writing a CPU profile, for debugging", "file", path)
	}
	if path := getenv(envTrace); path != "" {
		f, err := os.Create(path)
		if err == nil {
			if err = trace.Start(f); err != nil {
				err = errors.Join(err, f.Close())
			}
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s: %w", envTrace, err)
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
		log.Warn("writing an execution trace, for debugging", "file", path)
	}
	return stop, nil
}
