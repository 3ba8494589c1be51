//go:build !linux

package executor

import (
	"errors"
	"time"
)

// monotonicAt returns 0: workers have no death timer here.
func monotonicAt(time.Time) int64 { return 0 }

// deathTimer is not available here: the executor kills its workers.
type deathTimer struct{}

// newDeathTimer returns none.
func newDeathTimer() (*deathTimer, error) { return nil, nil }

func (*deathTimer) set(int64) {}

// alarm is not available here: the Go runtime's timers give up runs.
type alarm struct{}

// newAlarm returns none.
func newAlarm() (*alarm, error) { return nil, nil }

func (*alarm) set(int64)   {}
func (*alarm) wait() error { return errors.New("no alarm") }
func (*alarm) close()      {}
