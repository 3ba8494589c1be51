package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// handler is the registry handler of the upstream tool orig, registered
// as name.
func (u *upstream) handler(orig, name string) tools.Handler {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		return u.call(ctx, orig, name, args)
	}
}

// call forwards one call. It waits for a free slot of the server's
// concurrency limit (of which one principal holds at most its share), and
// for a server that is connecting, within the
// call's deadline (the run's, and the server's timeout); a transport
// failure is retried once for tools annotated read-only, nothing else is.
// Progress the server reports reaches the caller's tools.Reporter.
func (u *upstream) call(ctx context.Context, orig, name string, args json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, u.timeout, errCallTimeout)
	defer cancel()
	release, atShare, err := u.slots.Acquire(ctx)
	if te := (*tools.Error)(nil); errors.As(err, &te) {
		return nil, err // the bytes it gave back while it waited (tools.SlotWait)
	}
	if err != nil {
		while := fmt.Sprintf("while waiting for one of the %d calls in flight to it to finish", u.slots.Total())
		if atShare {
			while = fmt.Sprintf("while waiting for one of your %d calls in flight to it to finish (one principal may have %d of its %d at once: max_calls_per_principal)",
				u.slots.Share(), u.slots.Share(), u.slots.Total())
		}
		return nil, u.ended(ctx, name, while)
	}
	defer release()
	// What the server may print of its arguments is scrubbed from its
	// logs (sent.go).
	u.red.sent.add(tools.CallerFrom(ctx).Principal, tools.SensitiveFrom(ctx))
	progress := func(p, total float64, message string) {
		f := -1.0
		if total > 0 {
			f = min(max(p/total, 0), 1)
		}
		tools.ReportProgress(ctx, message, f)
	}
	for attempt := 0; ; attempt++ {
		c, err := u.connection(ctx, name)
		if err != nil {
			return nil, err
		}
		raw, err := c.callTool(ctx, orig, args, progress)
		if err == nil {
			// What the result decodes into (structuredContent, content
			// parsed as JSON, then the filter) is held before it is
			// decoded (issue 19, attack9 D6).
			if err := tools.HoldJSON(ctx, raw); err != nil {
				return nil, err
			}
			out, err := u.convert(ctx, name, raw)
			if err == nil {
				out, err = u.redactResult(name, out)
			}
			if err == nil {
				u.observe(tools.CallerFrom(ctx).Principal, orig, out)
			}
			return out, err
		}
		if ctx.Err() != nil {
			return nil, u.ended(ctx, name, "")
		}
		var refused *refusedError
		if errors.As(err, &refused) {
			// The result could not be held as it was read (holdCopies):
			// the holder's error says which bound, and what to change.
			return nil, refused.err
		}
		var big *tooLargeError
		if errors.As(err, &big) {
			return nil, &tools.Error{Code: CodeUpstreamTooLarge, Tool: name,
				Message: fmt.Sprintf("upstream %q sent %s, more than its max_response_bytes (%s); ask for less, such as a smaller page or range, or raise max_response_bytes for it", u.name, big.what("a result"), sizeText(big.max))}
		}
		var rpc *rpcError
		if errors.As(err, &rpc) {
			return nil, &tools.Error{Code: CodeUpstreamError, Tool: name,
				Message: fmt.Sprintf("upstream %q answered with an error: %s", u.name, u.red.String(rpc.Error()))}
		}
		// The transport failed: the connection is gone, or going. A child
		// that exited says why; an HTTP server is reconnected.
		why := c.lostReason(500 * time.Millisecond)
		if why == "" {
			why = describe(err, u.red)
			c.markLost(why)
		}
		if attempt == 0 && u.readOnly(orig) {
			u.log.Info("retrying a read-only call after a transport failure", "tool", name, "reason", why)
			continue
		}
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: name,
			Message: fmt.Sprintf("upstream %q failed during the call: %s; it is being restarted", u.name, why)}
	}
}

// errCallTimeout is the cause of a call that outlasted the server's
// timeout setting.
var errCallTimeout = errors.New("upstream timeout")

// ended is the error of a call whose context ended: the server's timeout,
// or the run's deadline or cancellation.
func (u *upstream) ended(ctx context.Context, name, while string) error {
	if while != "" {
		while = " " + while
	}
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return &tools.Error{Code: CodeUpstreamTimeout, Tool: name,
			Message: fmt.Sprintf("upstream %q did not answer within %s%s (its timeout setting)", u.name, u.timeout, while)}
	}
	return &tools.Error{Code: tools.CodeCanceled, Tool: name, Message: "call cancelled" + while, Err: ctx.Err()}
}

// connection returns the live connection, waiting while the server is
// connecting; an unavailable server is an error at once.
func (u *upstream) connection(ctx context.Context, name string) (*conn, error) {
	for {
		u.mu.Lock()
		st, c, reason, changed := u.state, u.conn, u.reason, u.changed
		u.mu.Unlock()
		live := c != nil
		if live {
			select {
			case <-c.lost: // the state changes in a moment
				live = false
			default:
			}
		}
		switch {
		case st == StateReady && live:
			return c, nil
		case st == StateConnecting || st == StateReady:
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil, u.ended(ctx, name, "while waiting for the server to connect")
			}
		}
		return nil, &tools.Error{Code: CodeUpstreamUnavailable, Tool: name,
			Message: fmt.Sprintf("upstream %q is unavailable: %s", u.name, reason)}
	}
}

// readOnly reports whether the server annotates the tool read-only.
func (u *upstream) readOnly(orig string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.tools[orig]
	return t != nil && t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}

// redactResult replaces configured secrets in a result; a result that
// would no longer be JSON is refused rather than shown.
func (u *upstream) redactResult(name string, out json.RawMessage) (json.RawMessage, error) {
	r, changed := u.red.Result(string(out))
	if !changed {
		return out, nil
	}
	if !json.Valid([]byte(r)) {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: name,
			Message: fmt.Sprintf("upstream %q returned a value of its configured env or headers, which codecell does not pass on", u.name)}
	}
	u.log.Warn("replaced configured secrets in a result", "tool", name)
	return json.RawMessage(r), nil
}
