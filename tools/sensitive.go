package tools

import "context"

// Sensitive returns the sensitive values a call's arguments hold, as the
// server's output filter knows them (values a tool returned that it
// hides, and values behind the tokens the arguments held). They are
// secrets: a source keeps them only to scrub them from what it logs.
type Sensitive func() []string

type sensitiveKey struct{}

// WithSensitive returns a context whose tool call's arguments hold the
// values s returns. The server sets it on every call it makes; a source
// whose server may print what it was sent (an upstream MCP server's
// stderr and log notifications) scrubs its logs of them.
func WithSensitive(ctx context.Context, s Sensitive) context.Context {
	return context.WithValue(ctx, sensitiveKey{}, s)
}

// SensitiveFrom returns the sensitive values of the call of ctx (see
// WithSensitive), or nil.
func SensitiveFrom(ctx context.Context) []string {
	s, _ := ctx.Value(sensitiveKey{}).(Sensitive)
	if s == nil {
		return nil
	}
	return s()
}
