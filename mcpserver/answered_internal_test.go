package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestHoldsUntilAnswered: a hold given with untilAnswered lasts until the
// outermost handler of its request returns — after a writer around
// mcp-go's has written the answer it held back — not until mcp-go's
// handler returns (attack16 J2: 32 unread answers of a 13 MiB image kept
// 1.3 GiB outside every hold). Outside a Streamable HTTP request, the
// caller's deferred function gives it back.
func TestHoldsUntilAnswered(t *testing.T) {
	t.Parallel()
	var released atomic.Bool
	releasedCh := make(chan struct{})
	var releasedBeforeWrite bool
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// mcp-go's handler: it holds, answers and returns.
		defer untilAnswered(r.Context(), func() { released.Store(true); close(releasedCh) })()
		w.Write([]byte(`{"result":"…"}`))
	})
	holdingBack := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// taskResultWriter: the answer is written after inner returns.
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		releasedBeforeWrite = released.Load()
		w.Write(rec.Body.Bytes())
	})
	answeredOnReturn(holdingBack).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if releasedBeforeWrite {
		t.Error("the hold was given back before the answer was written")
	}
	select { // context.AfterFunc gives it back on a goroutine of its own
	case <-releasedCh:
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not given back once the request ended")
	}
	var plain atomic.Bool
	deferred := untilAnswered(context.Background(), func() { plain.Store(true) })
	if plain.Load() {
		t.Error("outside a Streamable HTTP request, the hold went before its deferred function")
	}
	deferred()
	if !plain.Load() {
		t.Error("the deferred function did not give the hold back")
	}
}
