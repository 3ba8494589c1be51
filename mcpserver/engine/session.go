package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// Session state: the vault of tokens and the ledger a caller's runs
// share. It is kept in memory, keyed by principal and MCP session
// together, so a session ID presented by another principal never reaches
// it (the HTTP guard refuses such a request before that). A request of
// the stateless protocol (2026-07-28) has no session: its state is the
// principal's own session-less one. With Config.Shared, the vaults'
// entries are also written, sealed, to the shared store, so that a token
// minted on one instance resolves on every other (shared.go).

// Totals are a session's running totals, readable as a resource.
type Totals struct {
	Runs            int            `json:"runs"`
	Failed          int            `json:"failed"`
	ToolCalls       int            `json:"tool_calls"`
	FromToolsBytes  int            `json:"from_tools_bytes"`
	FromToolsTokens int            `json:"from_tools_tokens"`
	ToModelBytes    int            `json:"to_model_bytes"`
	ToModelTokens   int            `json:"to_model_tokens"`
	Findings        map[string]int `json:"findings"`
	Tokenized       int            `json:"tokenized"`
	Redacted        int            `json:"redacted"`
}

// sessionKey identifies a session's state: its principal and MCP session.
type sessionKey struct {
	principal string
	session   string
}

// Session is the state codecell keeps for one MCP session of one
// principal.
type Session struct {
	key   sessionKey
	vault *filter.Vault

	mu     sync.Mutex
	totals Totals
	used   time.Time // last use, for idle eviction
}

// SessionLimits bound the memory that session state may hold. Zero fields
// take their defaults.
type SessionLimits struct {
	// IdleTTL drops the state of a session unused for this long; its
	// tokens no longer resolve. Default 1 hour.
	IdleTTL time.Duration
	// PerPrincipal caps the sessions one principal holds at once; the
	// least recently used is dropped first. Default 64.
	PerPrincipal int
	// VaultBytes caps the memory of one session's vault. Default 8 MiB.
	VaultBytes int
	// PrincipalVaultBytes caps the memory of one principal's vaults
	// together; that principal's least recently used sessions are dropped
	// to stay below it. Default a quarter of TotalVaultBytes, and never
	// below VaultBytes.
	PrincipalVaultBytes int
	// TotalVaultBytes caps the memory of all vaults together; to stay
	// below it, the least recently used session of the principal whose
	// vaults hold the most is dropped, and again. Default 256 MiB.
	TotalVaultBytes int
}

func (l SessionLimits) withDefaults() SessionLimits {
	if l.IdleTTL <= 0 {
		l.IdleTTL = time.Hour
	}
	if l.PerPrincipal <= 0 {
		l.PerPrincipal = 64
	}
	if l.VaultBytes <= 0 {
		l.VaultBytes = 8 << 20
	}
	if l.TotalVaultBytes <= 0 {
		l.TotalVaultBytes = 256 << 20
	}
	if l.PrincipalVaultBytes <= 0 {
		l.PrincipalVaultBytes = max(l.TotalVaultBytes/4, l.VaultBytes)
	}
	return l
}

// sessions holds the live sessions' state, created on first use and
// dropped when the session ends, sits idle too long, or is the least
// recently used when a cap is reached.
type sessions struct {
	key     filter.Key
	rules   []filter.Rule
	match   filter.NameMatch // the rules' patterns against tool names
	limits  SessionLimits
	evicted func(reason string)
	now     func() time.Time
	// shared keeps the vaults' entries for other instances; nil keeps
	// them in this process only.
	shared *sharedTokens
	log    *slog.Logger

	mu sync.Mutex
	m  map[sessionKey]*Session
}

func newSessions(key filter.Key, rules []filter.Rule, lim SessionLimits, log *slog.Logger, evicted func(reason string)) *sessions {
	if evicted == nil {
		evicted = func(string) {}
	}
	return &sessions{key: key, rules: rules, limits: lim.withDefaults(), log: log, evicted: evicted, now: time.Now, m: map[sessionKey]*Session{}}
}

// get returns the state of the caller's session, creating it on first use.
func (ss *sessions) get(principal, id string) (*Session, error) {
	k := sessionKey{principal, id}
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.m[k]; ok {
		s.mu.Lock()
		s.used = now
		s.mu.Unlock()
		return s, nil
	}
	opts := filter.VaultOptions{Rules: ss.rules, Match: ss.match, MaxBytes: ss.limits.VaultBytes}
	if ss.shared != nil {
		opts.Store, opts.Session, opts.TTL = ss.shared, id, ss.limits.IdleTTL
	}
	v, err := filter.NewVault(ss.key, principal, opts)
	if err != nil {
		return nil, fmt.Errorf("new vault: %w", err)
	}
	s := &Session{key: k, vault: v, used: now, totals: Totals{Findings: map[string]int{}}}
	ss.m[k] = s
	ss.enforceLocked(principal)
	return s, nil
}

// drop forgets every principal's state of session id, when the MCP
// session ends, and its tokens in the shared store.
func (ss *sessions) drop(id string) {
	if id == "" {
		return
	}
	ss.mu.Lock()
	var ended []sessionKey
	for k := range ss.m {
		if k.session == id {
			delete(ss.m, k)
			ended = append(ended, k)
		}
	}
	ss.mu.Unlock()
	for _, k := range ended {
		ss.shared.forget(k.principal, k.session)
	}
}

// enforceLocked drops the least recently used sessions of principal
// beyond the per-principal cap, then while its vaults together hold more
// than its share, so that no principal's sessions crowd out another's.
func (ss *sessions) enforceLocked(principal string) {
	var mine []*Session
	held := 0
	for k, s := range ss.m {
		if k.principal == principal {
			mine = append(mine, s)
			held += s.vault.Stats().Bytes
		}
	}
	for len(mine) > ss.limits.PerPrincipal {
		i := oldest(mine)
		held -= mine[i].vault.Stats().Bytes
		delete(ss.m, mine[i].key)
		ss.evicted("per_principal")
		mine = append(mine[:i], mine[i+1:]...)
	}
	ss.trimLocked(mine, held, ss.limits.PrincipalVaultBytes, "principal_vault_bytes")
}

// trimLocked drops the least recently used of list, whose vaults hold
// held bytes, until they hold at most limit, and returns what is left.
func (ss *sessions) trimLocked(list []*Session, held, limit int, reason string) ([]*Session, int) {
	for held > limit && len(list) > 0 {
		i := oldest(list)
		held -= list[i].vault.Stats().Bytes
		delete(ss.m, list[i].key)
		ss.evicted(reason)
		list = append(list[:i], list[i+1:]...)
	}
	return list, held
}

// sweep drops idle sessions, then bounds every principal's vaults to its
// share, then, while all vaults together hold more than the cap, the
// least recently used session of the principal whose vaults hold the
// most: a principal within its share loses nothing to another's sessions
// while one holds more than it. It returns the sessions kept and the
// bytes their vaults hold.
func (ss *sessions) sweep() (count, vaultBytes int) {
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	type holder struct {
		list []*Session
		held int
	}
	by := map[string]*holder{}
	for k, s := range ss.m {
		s.mu.Lock()
		idle := now.Sub(s.used)
		s.mu.Unlock()
		if idle > ss.limits.IdleTTL {
			delete(ss.m, k)
			ss.evicted("idle")
			continue
		}
		h := by[k.principal]
		if h == nil {
			h = &holder{}
			by[k.principal] = h
		}
		h.list = append(h.list, s)
		h.held += s.vault.Stats().Bytes
	}
	for _, h := range by {
		h.list, h.held = ss.trimLocked(h.list, h.held, ss.limits.PrincipalVaultBytes, "principal_vault_bytes")
		count += len(h.list)
		vaultBytes += h.held
	}
	for vaultBytes > ss.limits.TotalVaultBytes && count > 0 {
		var top *holder
		for _, h := range by {
			if len(h.list) > 0 && (top == nil || h.held > top.held) {
				top = h
			}
		}
		i := oldest(top.list)
		n := top.list[i].vault.Stats().Bytes
		top.held -= n
		vaultBytes -= n
		count--
		delete(ss.m, top.list[i].key)
		ss.evicted("total_vault_bytes")
		top.list = append(top.list[:i], top.list[i+1:]...)
	}
	return count, vaultBytes
}

func oldest(list []*Session) int {
	i := 0
	for j, s := range list {
		if s.lastUsed().Before(list[i].lastUsed()) {
			i = j
		}
	}
	return i
}

func (s *Session) lastUsed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// sweepEvery runs sweep every interval until ctx ends, reporting what it
// keeps to observe.
func (ss *sessions) sweepEvery(ctx context.Context, every time.Duration, observe func(count, vaultBytes int)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			observe(ss.sweep())
		}
	}
}

// flush writes the tokens the session's vault minted to the shared store,
// before the result that shows them leaves the server, so that the client
// may pass them to any instance. It finishes even if ctx was cancelled.
// Without a shared store it does nothing.
func (ss *sessions) flush(ctx context.Context, sess *Session) {
	if sess == nil || ss.shared == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	if err := sess.vault.Flush(ctx); err != nil {
		// The tokens still resolve here; the next flush retries.
		ss.log.Warn("write tokens to the shared store", "principal", sess.key.principal, "session_hash", SessionHash(sess.key.session), "err", err)
	}
}

// add counts a finished run into the session's totals.
func (s *Session) add(rec *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.totals
	t.Runs++
	if rec.Error != nil {
		t.Failed++
	}
	t.ToolCalls += rec.Stats.ToolCalls
	t.FromToolsBytes += rec.Stats.FromToolsBytes
	t.FromToolsTokens = tools.EstimateTokens(t.FromToolsBytes)
	t.ToModelBytes += rec.Stats.ToModelBytes
	t.ToModelTokens = tools.EstimateTokens(t.ToModelBytes)
	if f := rec.Filter; f != nil {
		for c, n := range f.Findings {
			t.Findings[string(c)] += n
		}
		t.Tokenized += f.Tokenized
		t.Redacted += f.Redacted
	}
}

// Vault holds the session's tokens.
func (s *Session) Vault() *filter.Vault { return s.vault }

// Totals returns a copy of the session's running totals.
func (s *Session) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.totals
	t.Findings = map[string]int{}
	for k, v := range s.totals.Findings {
		t.Findings[k] = v
	}
	return t
}
