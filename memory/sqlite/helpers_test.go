package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// testClock is a settable clock for tests.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func openTest(tb testing.TB, cfg Config) *Store {
	tb.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(tb.TempDir(), "codecell.db")
	}
	s, err := Open(context.Background(), cfg, nil)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func as(ctx context.Context, principal string) context.Context {
	return tools.WithCaller(ctx, tools.Caller{Principal: principal, Session: "s-" + principal})
}

func mustRemember(tb testing.TB, s *Store, ctx context.Context, in memory.RememberInput) memory.Memory {
	tb.Helper()
	m, err := s.Remember(ctx, in)
	if err != nil {
		tb.Fatalf("remember %q: %v", in.Content, err)
	}
	return m
}

// wantCode checks that err is a *tools.Error with the given code.
func wantCode(tb testing.TB, err error, code string) *tools.Error {
	tb.Helper()
	var te *tools.Error
	if !errors.As(err, &te) {
		tb.Fatalf("error %v (%T): want a *tools.Error with code %s", err, err, code)
	}
	if te.Code != code {
		tb.Fatalf("error code %s (%s): want %s", te.Code, te.Message, code)
	}
	return te
}

func ptr[T any](v T) *T { return &v }

func hitIDs(r memory.RecallResult) []int64 {
	out := make([]int64, len(r.Results))
	for i, h := range r.Results {
		out[i] = h.ID
	}
	return out
}
