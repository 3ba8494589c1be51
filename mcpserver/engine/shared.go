package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
)

// Several instances behind one load balancer, on one store.
//
// What they share through Config.Shared: the token vaults' entries
// (sealed by the filter, written through when a result that shows them
// leaves the server, read through when a token is not held here) and the
// per-principal rate limits (ratelimit.go). Skills and the catalogue reach
// every instance through the store already (memory's skill watch). MCP
// sessions stay in each instance's memory: a balancer keeps a session on
// the instance that opened it (affinity on Mcp-Session-Id), or clients
// use the stateless protocol, whose requests any instance serves.

// SharedStore is the state instances behind one load balancer share
// through their store. Both backends implement it (checked in
// cmd/codecell).
type SharedStore interface {
	PutVaultTokens(ctx context.Context, tokens ...memory.VaultToken) error
	GetVaultToken(ctx context.Context, principal, session, token string) (memory.VaultToken, error)
	DeleteVaultTokens(ctx context.Context, principal, session string) error
	ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error)
	PruneShared(ctx context.Context, windowsBefore time.Time) (int64, error)
}

// sharedTimeout bounds a shared-state operation that no request waits
// for, or that must finish although its request ended.
const sharedTimeout = 5 * time.Second

// sharedTokens gives the vaults the store's token table.
type sharedTokens struct {
	st      SharedStore
	log     *slog.Logger
	observe func(op string, d time.Duration)
}

var _ filter.TokenStore = (*sharedTokens)(nil)

func (t *sharedTokens) PutTokens(ctx context.Context, principal, session string, tokens []filter.SealedToken) error {
	defer t.timed("vault_put", time.Now())
	rows := make([]memory.VaultToken, len(tokens))
	for i, tk := range tokens {
		rows[i] = memory.VaultToken{Principal: principal, Session: session, Token: tk.Token, Sealed: tk.Sealed, Expires: tk.Expires, Sources: tk.Sources}
	}
	return t.st.PutVaultTokens(ctx, rows...)
}

func (t *sharedTokens) GetToken(ctx context.Context, principal, session, token string) (filter.SealedToken, bool, error) {
	defer t.timed("vault_get", time.Now())
	row, err := t.st.GetVaultToken(ctx, principal, session, token)
	if errors.Is(err, memory.ErrNotFound) {
		return filter.SealedToken{}, false, nil
	}
	if err != nil {
		return filter.SealedToken{}, false, err
	}
	return filter.SealedToken{Token: row.Token, Sealed: row.Sealed, Expires: row.Expires, Sources: row.Sources}, true, nil
}

func (t *sharedTokens) timed(op string, start time.Time) { t.observe(op, time.Since(start)) }

// forget deletes the tokens of principal's session that ended. A nil
// *sharedTokens has none.
func (t *sharedTokens) forget(principal, session string) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := t.st.DeleteVaultTokens(ctx, principal, session); err != nil {
		t.log.Warn("forget the tokens of an ended session", "session_hash", SessionHash(session), "err", err)
	}
}

// longestWindow is the longest of the shared rate limits' windows.
func (l *Limiter) longestWindow() time.Duration {
	a, _ := sharedWindow(l.lim.ExecutionsPerMinute, l.lim.ExecutionBurst)
	b, _ := sharedWindow(l.lim.ToolCallsPerMinute, l.lim.ToolCallBurst)
	return max(a, b)
}
