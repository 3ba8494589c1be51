package tools

import (
	"context"
	"encoding/json"
)

// CallWith calls the tool name as Call does — resolved for the caller in
// ctx, its arguments validated, a cancelled context refused, a panic
// recovered, every failure an *Error — with h in place of the tool's own
// handler. It is for a caller that answers some tools itself with what
// only it knows of the call: codecell's engine hands its runtime helpers
// the run that calls them as an argument, never through the context.
func (r *Registry) CallWith(ctx context.Context, name string, args json.RawMessage, h Handler) (json.RawMessage, error) {
	c := CallerFrom(ctx)
	e, ok := r.resolve(c, name)
	if !ok {
		v := r.View(c)
		if e, ok = v.entry(name); !ok {
			return nil, v.unknown(name)
		}
	}
	bound, t := *e, *e.tool
	t.Handler = h
	bound.tool = &t
	return call(ctx, &bound, args)
}
