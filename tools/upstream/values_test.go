package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// TestResultValuesHeld (issue 19, attack9 D6): an upstream's result is
// held as what it decodes into — the whole CallToolResult, content and
// structuredContent, its bytes and DecodedValueBytes a value — before it
// is converted, and a result the holder refuses fails the call with the
// holder's error.
func TestResultValuesHeld(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	call := func(limit int64) (held []int64, err error) {
		ctx := tools.WithDecodedHolder(t.Context(), func(_ context.Context, n int64) error {
			held = append(held, n)
			if n > limit {
				return errRefused
			}
			return nil
		})
		_, err = e.reg.Call(ctx, "fake.structured", json.RawMessage(`{}`))
		return held, err
	}
	// What the tool hands on, {"temperature":21.5}, is two values; what
	// the server sent, its text content beside it, more.
	result := tools.DecodedSize(int64(len(`{"temperature":21.5}`)), 2)
	held, err := call(1 << 30)
	if err != nil || len(held) != 2 || held[0] <= result || held[1] != result {
		t.Fatalf("held %v, %v; want the message's size, then %d", held, err, result)
	}
	if _, err := call(result); !errors.Is(err, errRefused) {
		t.Fatalf("a result the holder refuses: %v", err)
	}
}

var errRefused = errors.New("refused")
