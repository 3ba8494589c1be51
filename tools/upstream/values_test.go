package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	result := tools.DecodedSize(tools.ResultCopies*int64(len(`{"temperature":21.5}`)), 2)
	held, err := call(1 << 30)
	if err != nil || len(held) != 2 || held[0] <= result || held[1] != result {
		t.Fatalf("held %v, %v; want the message's size, then %d", held, err, result)
	}
	if _, err := call(result); !errors.Is(err, errRefused) {
		t.Fatalf("a result the holder refuses: %v", err)
	}
}

var errRefused = errors.New("refused")

// TestMessagesHeldAsRead (issue 19, attack9 D7): an HTTP upstream's
// response is held as it is read — three times its bytes so far (the
// reader's buffer, the transport's decoder's, the decoded result) and
// what its values decode into — before it is whole: a message the
// holder refuses is dropped as it arrives, the call fails with the
// holder's error, and the connection serves the next call. A stdio
// server's messages, read one at a time for every call, are bounded by
// max_response_bytes alone.
func TestMessagesHeldAsRead(t *testing.T) {
	t.Parallel()
	auth := map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}
	e := start(t, map[string]upstream.Server{
		"streamable": {URL: httpFake(t, false, false, nil).URL + "/mcp", Headers: auth},
		"stdio":      fake(t, "serve"),
	})
	const n = 4 << 20 // a text of 4 MiB
	refusal := &tools.Error{Code: "result_bytes_limit", Message: "refused"}
	call := func(t *testing.T, name string, size int, limit int64) (most int64, err error) {
		ctx := tools.WithDecodedHolder(t.Context(), func(_ context.Context, h int64) error {
			most = max(most, h)
			if h > limit {
				return refusal
			}
			return nil
		})
		_, err = e.reg.Call(ctx, name+".big", json.RawMessage(fmt.Sprintf(`{"n": %d}`, size)))
		return most, err
	}
	t.Run("streamable", func(t *testing.T) {
		if st := e.status("streamable"); st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		most, err := call(t, "streamable", n, 1<<40)
		if err != nil || most < 3*n {
			t.Fatalf("a 4 MiB result held at most %d bytes (%v), want three times its bytes", most, err)
		}
		most, err = call(t, "streamable", n, 2<<20)
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != "result_bytes_limit" || !strings.Contains(te.Message, "refused") {
			t.Fatalf("a 4 MiB result the holder refuses past 2 MiB: %v", err)
		}
		if most > 3<<20 {
			t.Errorf("the holder was asked for %d bytes: the message was read whole before it was held", most)
		}
		if out, err := e.call(t, "streamable.big", `{"n": 10}`); err != nil || string(out) != `"aaaaaaaaaa"` {
			t.Errorf("the next call: %s, %v", out, err)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		if st := e.status("stdio"); st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		// Held once the message arrives (TestResultValuesHeld): at
		// most what the registry holds of the result.
		most, err := call(t, "stdio", n, 1<<40)
		if want := tools.DecodedSize(tools.ResultCopies*int64(n+2), 1); err != nil || most != want {
			t.Fatalf("a 4 MiB result over stdio held at most %d bytes (%v), want %d", most, err, want)
		}
	})
}
