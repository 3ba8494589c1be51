package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// TestToolShapesRoundTrip stores shapes of two sources, replaces one,
// and reads them back, also after the store is opened again.
func TestToolShapesRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "codecell.db")
	s := openTest(t, Config{Path: path})
	ctx := t.Context()
	put := func(source, tool, shape string) {
		t.Helper()
		if err := s.PutToolShape(ctx, source, tool, json.RawMessage(shape)); err != nil {
			t.Fatalf("put %s %s: %v", source, tool, err)
		}
	}
	put("upstream/everything", "get-sum", `{"observed": 1, "schema": {"type": "string"}}`)
	put("upstream/everything", "get-env", `{"observed":1,"schema":{"type":"object"}}`)
	put("upstream/other", "get-sum", `{"observed":9}`)
	put("upstream/everything", "get-sum", `{"observed":2,"schema":{"type":"string"}}`)

	want := map[string]string{
		"get-sum": `{"observed":2,"schema":{"type":"string"}}`,
		"get-env": `{"observed":1,"schema":{"type":"object"}}`,
	}
	check := func(s *Store) {
		t.Helper()
		got, err := s.ToolShapes(ctx, "upstream/everything")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("got %d shapes, want %d: %s", len(got), len(want), got)
		}
		for tool, w := range want {
			if string(got[tool]) != w {
				t.Errorf("%s: got %s, want %s", tool, got[tool], w)
			}
		}
	}
	check(s)
	if none, err := s.ToolShapes(ctx, "upstream/nothing"); err != nil || len(none) != 0 {
		t.Errorf("shapes of an unknown source: %v, %v", none, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openTest(t, Config{Path: path}))
}

func TestToolShapesRefuses(t *testing.T) {
	t.Parallel()
	s := openTest(t, Config{})
	ctx := t.Context()
	for _, tt := range []struct {
		name, source, tool, shape, code string
	}{
		{"no source", "", "t", `{}`, tools.CodeInvalidArguments},
		{"no tool", "s", "", `{}`, tools.CodeInvalidArguments},
		{"a long name", "s", strings.Repeat("t", 300), `{}`, tools.CodeInvalidArguments},
		{"not JSON", "s", "t", `{"a":`, tools.CodeInvalidArguments},
		{"too large", "s", "t", `"` + strings.Repeat("x", memory.MaxToolShapeBytes) + `"`, memory.CodeTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, s.PutToolShape(ctx, tt.source, tt.tool, json.RawMessage(tt.shape)), tt.code)
		})
	}
	if got, err := s.ToolShapes(ctx, "s"); err != nil || len(got) != 0 {
		t.Errorf("a refused shape was stored: %v, %v", got, err)
	}
}

// TestToolShapesBound stores one shape more than a source keeps: the one
// stored least recently goes, other sources keep theirs.
func TestToolShapesBound(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	ctx := t.Context()
	if err := s.PutToolShape(ctx, "other", "t", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	for i := range memory.MaxToolShapes + 1 {
		clock.t = clock.t.Add(time.Second)
		tool := fmt.Sprintf("t%04d", i)
		if i == 500 {
			tool = "t0000" // stored again, so no longer the least recent
		}
		if err := s.PutToolShape(ctx, "src", tool, json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ToolShapes(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	// t0000 was stored twice, so MaxToolShapes distinct tools were stored:
	// all kept. One more drops the least recent, t0001.
	if len(got) != memory.MaxToolShapes || got["t0000"] == nil {
		t.Fatalf("kept %d shapes (t0000: %s), want %d", len(got), got["t0000"], memory.MaxToolShapes)
	}
	clock.t = clock.t.Add(time.Second)
	if err := s.PutToolShape(ctx, "src", "new", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ToolShapes(ctx, "src")
	if len(got) != memory.MaxToolShapes || got["t0001"] != nil || got["new"] == nil || got["t0000"] == nil || got["t0002"] == nil {
		t.Errorf("kept %d shapes; t0001 %s, new %s, t0000 %s, t0002 %s", len(got), got["t0001"], got["new"], got["t0000"], got["t0002"])
	}
	if other, _ := s.ToolShapes(ctx, "other"); len(other) != 1 {
		t.Errorf("another source lost its shapes: %v", other)
	}
}
