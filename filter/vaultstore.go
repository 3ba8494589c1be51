package filter

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A vault shared by instances: when several codecell instances serve one
// team behind a load balancer, a token minted by one must resolve on
// another. A Vault with a TokenStore writes the entries it mints through
// to the store (Flush, before the result that shows them leaves the
// server) and reads a token it does not hold from the store (Resolve).
//
// Entries are sealed before they leave the process: AES-256-GCM under a
// key derived from the principal's token key (HKDF-SHA256, info
// sealKeyInfo), with (principal, session, token) as additional data. The
// database, its backups and replicas, and whoever operates them, see
// tokens, expiry times and ciphertext, never a value; a row copied under
// another principal, session or token fails to open. Whoever holds both
// the database and the filter key can open every entry: the key must stay
// out of the database (it is given to each instance, see
// cmd/codecell's cluster.key_env).

// TokenStore keeps sealed vault entries beyond this process. Sealed
// values are opaque to it. Implementations are safe for concurrent use.
type TokenStore interface {
	// PutTokens stores tokens of one session of principal, replacing
	// the sealed value and expiry of those stored under the same token,
	// and adding their Sources to those stored: never removing one.
	PutTokens(ctx context.Context, principal, session string, tokens []SealedToken) error
	// GetToken returns a stored token that has not expired, with every
	// source stored for it, and false when there is none.
	GetToken(ctx context.Context, principal, session, token string) (SealedToken, bool, error)
}

// SealedToken is a vault entry as a TokenStore keeps it.
type SealedToken struct {
	Token   string
	Sealed  []byte
	Expires time.Time
	// Sources are the sources of the value (the tools whose results
	// held it), in clear beside the sealed value, so that the store can
	// add those every instance learns: the sealed copy is the last
	// writer's, and an instance that mints the value again from no
	// source would write it without them. A vault resolving a token,
	// held or not, checks the rules against the stored sources too.
	Sources []string
}

// sealKeyInfo is the HKDF info that derives a principal's sealing key
// from its token key.
const sealKeyInfo = "codecell/filter vault seal v1"

// sharedVault is the part of a Vault that talks to its TokenStore. Its
// dirty set is guarded by the Vault's mutex.
type sharedVault struct {
	store     TokenStore
	principal string
	session   string
	ttl       time.Duration
	aead      cipher.AEAD
	now       func() time.Time

	dirty map[*vaultEntry]struct{} // minted or changed, not yet stored
}

func newSharedVault(pk Key, principal string, opts VaultOptions) (*sharedVault, error) {
	sk, err := hkdf.Expand(sha256.New, pk.b[:], sealKeyInfo, KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive sealing key: %w", err)
	}
	block, err := aes.NewCipher(sk)
	if err != nil {
		return nil, fmt.Errorf("sealing key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealing key: %w", err)
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	return &sharedVault{store: opts.Store, principal: principal, session: opts.Session, ttl: ttl, aead: aead, now: time.Now,
		dirty: map[*vaultEntry]struct{}{}}, nil
}

// markLocked notes that e must be written to the store. It does nothing
// for a vault without a store.
func (sv *sharedVault) markLocked(e *vaultEntry) {
	if sv != nil {
		sv.dirty[e] = struct{}{}
	}
}

// sealedEntry is what a sealed value holds.
type sealedEntry struct {
	Class   Class    `json:"c"`
	Value   string   `json:"v"`
	Raw     bool     `json:"r,omitempty"`
	Sources []string `json:"s,omitempty"`
}

// aad binds a sealed value to its principal, session and token.
func (sv *sharedVault) aad(token string) []byte {
	return []byte(sv.principal + "\x00" + sv.session + "\x00" + token)
}

func (sv *sharedVault) seal(e sealedEntry, token string) ([]byte, error) {
	plain, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, sv.aead.NonceSize(), sv.aead.NonceSize()+len(plain)+sv.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return sv.aead.Seal(nonce, nonce, plain, sv.aad(token)), nil
}

// errSealed is a stored entry that does not open under this vault's key
// and binding: another key, or a row moved to another token.
var errSealed = errors.New("stored token does not open under this vault's key")

func (sv *sharedVault) open(sealed []byte, token string) (sealedEntry, error) {
	n := sv.aead.NonceSize()
	if len(sealed) < n {
		return sealedEntry{}, errSealed
	}
	plain, err := sv.aead.Open(nil, sealed[:n], sealed[n:], sv.aad(token))
	if err != nil {
		return sealedEntry{}, errSealed
	}
	var e sealedEntry
	if err := json.Unmarshal(plain, &e); err != nil {
		return sealedEntry{}, errSealed
	}
	return e, nil
}

// Flush writes the entries minted or changed since the last Flush to the
// vault's TokenStore, sealed, in one call. The server calls it before the
// result that shows their tokens leaves it, so that a client can pass them
// to any instance. A vault without a store has nothing to flush. On error
// the entries stay to be written by the next Flush.
func (v *Vault) Flush(ctx context.Context) error {
	sv := v.shared
	if sv == nil {
		return nil
	}
	v.mu.Lock()
	if len(sv.dirty) == 0 {
		v.mu.Unlock()
		return nil
	}
	type pending struct {
		e     *vaultEntry
		token string
		entry sealedEntry
	}
	list := make([]pending, 0, len(sv.dirty))
	for e := range sv.dirty {
		list = append(list, pending{e, e.token, sealedEntry{Class: e.class, Value: e.value, Raw: e.raw, Sources: slices.Clone(e.sources)}})
	}
	clear(sv.dirty)
	v.mu.Unlock()

	expires := sv.now().Add(sv.ttl)
	out := make([]SealedToken, 0, len(list))
	var err error
	for _, p := range list {
		var b []byte
		if b, err = sv.seal(p.entry, p.token); err != nil {
			break
		}
		out = append(out, SealedToken{Token: p.token, Sealed: b, Expires: expires, Sources: p.entry.Sources})
	}
	if err == nil {
		err = sv.store.PutTokens(ctx, sv.principal, sv.session, out)
	}
	if err != nil {
		v.mu.Lock()
		for _, p := range list {
			sv.dirty[p.e] = struct{}{}
		}
		v.mu.Unlock()
		return fmt.Errorf("flush vault: %w", err)
	}
	return nil
}

// load reads token from the store and keeps it, for a vault that does not
// hold it: minted on another instance, or evicted here. It returns a copy
// of the entry, and false when the store has no such token.
func (v *Vault) load(ctx context.Context, token string) (vaultEntry, bool, error) {
	sv := v.shared
	st, ok, err := sv.store.GetToken(ctx, sv.principal, sv.session, token)
	if err != nil {
		return vaultEntry{}, false, fmt.Errorf("read token %s from the store: %w", token, err)
	}
	if !ok {
		return vaultEntry{}, false, nil
	}
	se, err := sv.open(st.Sealed, token)
	if err != nil {
		return vaultEntry{}, false, fmt.Errorf("read token %s from the store: %w", token, err)
	}
	sources := addSources(addSources(nil, se.Sources), st.Sources)
	v.mu.Lock()
	defer v.mu.Unlock()
	e, held := v.byToken[token] // loaded meanwhile
	if held {
		v.learnSourcesLocked(e, sources)
	} else {
		e = &vaultEntry{token: token, class: se.Class, value: se.Value, raw: se.Raw, sources: sources}
		if _, taken := v.byValue[valueKey{e.class, e.value}]; taken || e.cost() > v.maxBytes {
			// The value is held under another token (a collision), or
			// too large to keep: resolve it this once.
			return *e, true, nil
		}
		v.insertLocked(e)
		v.evictLocked()
	}
	return vaultEntry{token: e.token, class: e.class, value: e.value, raw: e.raw, sources: slices.Clone(e.sources)}, true, nil
}

// storedSources returns the sources the store holds for token, for a
// token this vault holds: other instances may have learned more of them
// since (a value this one minted from no source, which another read
// from a tool), and the rules must see them all. It returns nil when the
// store has no such token (minted here and not flushed yet).
func (v *Vault) storedSources(ctx context.Context, token string) ([]string, error) {
	sv := v.shared
	st, ok, err := sv.store.GetToken(ctx, sv.principal, sv.session, token)
	if err != nil {
		return nil, fmt.Errorf("read token %s from the store: %w", token, err)
	}
	if !ok {
		return nil, nil
	}
	return st.Sources, nil
}

// learnSourcesLocked adds to a held entry sources the store holds for
// it, without marking it to be written back: the store has them.
func (v *Vault) learnSourcesLocked(e *vaultEntry, sources []string) {
	before := e.cost()
	e.sources = addSources(e.sources, sources)
	v.bytes += e.cost() - before
}
