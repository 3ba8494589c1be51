package engine

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
)

// A run that asks the client on protocol 2026-07-28 ends with
// input_required and an opaque requestState the client sends back with
// its answers (mrtr.go). The state is sealed with AES-256-GCM under a key
// derived from the installation key (the filter's, which the data
// directory keeps): only this installation opens it, and a changed byte
// fails it. It binds the principal, the digest of the request (code,
// language, mode), an expiry, and the run's journal — held in the store,
// sealed again under the same key and named by the state's id, when the
// server has one; inside the state otherwise. Each state is good for one
// retry: its id is claimed when it is opened (the store's entry deleted,
// or, without a store, the id remembered until it expires), so a state
// sent again is refused.

// stateSealInfo derives the request states' key from the installation key.
const stateSealInfo = "codecell/request state v1"

// statePrefix starts every request state, naming its format.
const statePrefix = "ccrs1."

// journalKind is the store's cache kind of the journals of states.
const journalKind = memory.CacheJournal

// maxInlineJournal bounds a journal carried inside a request state.
const maxInlineJournal = 4 << 20

// DefaultStateTTL is how long a request state may be sent back.
const DefaultStateTTL = 15 * time.Minute

// KindStateRefused is a retry whose requestState codecell refuses:
// altered, expired, sent already, another principal's, another request's,
// or another installation's. The message says which, and to send the
// request again without the state.
const KindStateRefused executor.Kind = "request_state_refused"

// sealedState is what a request state holds.
type sealedState struct {
	ID        string `json:"id"`
	Principal string `json:"p"`
	Digest    string `json:"d"`
	Expires   int64  `json:"x"` // ms since the epoch
	// Journal is the journal itself, when the server has no store;
	// Stored says it is in the store under ID.
	Journal *journal `json:"j,omitempty"`
	Stored  bool     `json:"s,omitempty"`
}

// stateSealer seals and opens request states and stored journals, and
// claims each state once.
type stateSealer struct {
	aead  cipher.AEAD
	store cacheStore // nil: journals in the states, claims in claimed
	ttl   time.Duration

	mu      sync.Mutex
	claimed map[string]time.Time // without a store: the ids sent back, until they expire
}

func newStateSealer(k filter.Key, store cacheStore, ttl time.Duration) (*stateSealer, error) {
	b, err := k.Derive(stateSealInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(b)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	return &stateSealer{aead: a, store: store, ttl: ttl, claimed: map[string]time.Time{}}, nil
}

// requestDigest names what a state may resume: the same program, run the
// same way.
func requestDigest(x Execution) string {
	h := sha256.New()
	for _, s := range []string{x.Code, string(x.Language), x.Mode} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *stateSealer) box(plain []byte, aad string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	return s.aead.Seal(nonce, nonce, plain, []byte(aad))
}

func (s *stateSealer) unbox(box []byte, aad string) ([]byte, bool) {
	n := s.aead.NonceSize()
	if len(box) < n+s.aead.Overhead() {
		return nil, false
	}
	plain, err := s.aead.Open(nil, box[:n], box[n:], []byte(aad))
	return plain, err == nil
}

const (
	stateAAD   = "codecell request state"
	journalAAD = "codecell request journal\x00"
)

// seal returns the state that resumes x's run with j, for principal.
func (s *stateSealer) seal(ctx context.Context, principal string, x Execution, j *journal) (string, error) {
	st := sealedState{ID: newExecutionID(), Principal: principal, Digest: requestDigest(x), Expires: time.Now().Add(s.ttl).UnixMilli()}
	if s.store != nil {
		plain, err := json.Marshal(j)
		if err != nil {
			return "", err
		}
		box := s.box(plain, journalAAD+st.ID+"\x00"+principal)
		if _, err := s.store.CacheSet(asCaller(ctx, principal), memory.CacheSetInput{Kind: journalKind, Key: st.ID, Value: box, TTL: s.ttl}); err != nil {
			return "", fmt.Errorf("keep the run's journal: %w", err)
		}
		st.Stored = true
	} else {
		if b, err := json.Marshal(j); err != nil {
			return "", err
		} else if len(b) > maxInlineJournal {
			return "", fmt.Errorf("the tool results it read before asking, %d bytes, are more than a requestState carries (%d) without a store: configure one (memory.path), or read less before asking the client", len(b), maxInlineJournal)
		}
		st.Journal = j
	}
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return statePrefix + base64.RawURLEncoding.EncodeToString(s.box(plain, stateAAD)), nil
}

// stateError is a refused state: the retry fails with KindStateRefused.
type stateError struct{ msg string }

func (e *stateError) Error() string { return e.msg }

func refusedState(format string, args ...any) error {
	return &stateError{msg: fmt.Sprintf(format, args...) + "; send the request again without requestState and inputResponses to start the program over"}
}

// open checks the state a retry of x by principal sent back, claims it,
// and returns its journal.
func (s *stateSealer) open(ctx context.Context, principal string, x Execution, state string) (*journal, error) {
	raw, ok := strings.CutPrefix(state, statePrefix)
	if !ok {
		return nil, refusedState("the requestState is not one codecell made")
	}
	box, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return nil, refusedState("the requestState is not one codecell made (not base64url)")
	}
	plain, ok := s.unbox(box, stateAAD)
	if !ok {
		return nil, refusedState("the requestState does not open: it was altered, or made by another installation (another key)")
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, refusedState("the requestState does not open: %v", err)
	}
	switch {
	case st.Principal != principal:
		return nil, refusedState("the requestState was made for another principal")
	case st.Digest != requestDigest(x):
		return nil, refusedState("the requestState was made for another request: the retry must send the same code, language and mode")
	case time.Now().UnixMilli() > st.Expires:
		return nil, refusedState("the requestState expired at %s (it is good for %s)", time.UnixMilli(st.Expires).UTC().Format(time.RFC3339), s.ttl)
	}
	if !st.Stored {
		if st.Journal == nil || !s.claim(st.ID, time.UnixMilli(st.Expires)) {
			return nil, refusedState("the requestState was sent back already (each is good for one retry)")
		}
		return st.Journal, nil
	}
	if s.store == nil {
		return nil, refusedState("the requestState names a journal in a store this server does not have")
	}
	ctx = asCaller(ctx, principal)
	e, err := s.store.CacheGet(ctx, journalKind, st.ID)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, refusedState("the requestState was sent back already (each is good for one retry), or its journal expired")
	}
	if err != nil {
		return nil, fmt.Errorf("read the run's journal: %w", err)
	}
	// Deleting claims the state: of two retries with it, one deletes.
	if first, err := s.store.CacheDelete(ctx, journalKind, st.ID); err != nil {
		return nil, fmt.Errorf("claim the run's journal: %w", err)
	} else if !first {
		return nil, refusedState("the requestState was sent back already (each is good for one retry)")
	}
	plain, ok = s.unbox(e.Value, journalAAD+st.ID+"\x00"+principal)
	if !ok {
		return nil, refusedState("the run's journal does not open: it was altered in the store")
	}
	var j journal
	if err := json.Unmarshal(plain, &j); err != nil {
		return nil, refusedState("the run's journal does not open: %v", err)
	}
	return &j, nil
}

// claim reports whether id is claimed for the first time, and forgets the
// claims that expired.
func (s *stateSealer) claim(id string, expires time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, t := range s.claimed {
		if now.After(t) {
			delete(s.claimed, k)
		}
	}
	if _, ok := s.claimed[id]; ok {
		return false
	}
	s.claimed[id] = expires
	return true
}
