package engine

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
)

// A plan's steps are kept in the store sealed: each step's arguments, and
// what the dry run knew of the secrets in them (filter.Known), are
// encrypted with AES-256-GCM under a key made of the installation key
// (filter.key, which the store never holds) and a secret of the plan's
// own that only its id holds: the id the client gets is the store's id, a
// dot, and that secret. Whoever reads the store reads no argument; whoever
// writes it cannot change, reorder, drop or swap a step without the
// commit refusing the plan (plan_altered); and a commit needs the whole id.
// The tool and the sources of each step stay in the clear, bound to the
// sealed arguments.

// plannedStep is a recorded write, with what the run knew of the secrets
// in its arguments: the commit's outputs hide them as the run's would
// have (filter.Flow.KnownIn).
type plannedStep struct {
	memory.PlanStep
	known []filter.Known
}

// planSealInfo derives the plans' key from the installation key.
const planSealInfo = "codecell/plan steps v1"

// planSecretBytes is the size of a plan's own secret.
const planSecretBytes = 16

// sealedPrefix starts a sealed step's arguments as the store keeps them:
// a JSON string.
const sealedPrefix = "sealed:v1:"

// planSealer seals and opens plans' steps.
type planSealer struct {
	key []byte // derived from the installation key; per plan, with its secret
}

func newPlanSealer(k filter.Key) (*planSealer, error) {
	b, err := k.Derive(planSealInfo, 32)
	if err != nil {
		return nil, err
	}
	return &planSealer{key: b}, nil
}

// sealedStep is what a step's sealed arguments hold.
type sealedStep struct {
	Args  json.RawMessage `json:"a"`
	Known []filter.Known  `json:"k,omitempty"`
}

// errPlanSeal is a step that does not open: altered, or sealed under
// another installation key or another plan's secret.
var errPlanSeal = errors.New("the plan's steps do not open")

func (p *planSealer) aead(secret []byte) (cipher.AEAD, error) {
	k, err := hkdf.Expand(sha256.New, p.key, "plan\x00"+string(secret), 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// stepAAD binds a step's sealed arguments to its place in the plan, its
// tool and its sources.
func stepAAD(seq, n int, tool string, provenance json.RawMessage) []byte {
	return []byte("codecell plan step\x00" + strconv.Itoa(seq) + "\x00" + strconv.Itoa(n) + "\x00" + tool + "\x00" + string(provenance))
}

// seal returns the steps as the store keeps them, and the secret that
// opens them.
func (p *planSealer) seal(steps []plannedStep) ([]memory.PlanStep, []byte, error) {
	secret := make([]byte, planSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	a, err := p.aead(secret)
	if err != nil {
		return nil, nil, err
	}
	out := make([]memory.PlanStep, len(steps))
	for i, st := range steps {
		plain, err := json.Marshal(sealedStep{Args: st.Args, Known: st.known})
		if err != nil {
			return nil, nil, err
		}
		nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, nil, err
		}
		box := a.Seal(nonce, nonce, plain, stepAAD(i+1, len(steps), st.Tool, st.Provenance))
		args, _ := json.Marshal(sealedPrefix + base64.RawURLEncoding.EncodeToString(box))
		out[i] = memory.PlanStep{Tool: st.Tool, Args: args, Provenance: st.Provenance}
	}
	return out, secret, nil
}

// open returns the steps of a claimed plan with their arguments opened.
func (p *planSealer) open(steps []memory.PlanStep, secret []byte) ([]plannedStep, error) {
	if len(steps) == 0 {
		return nil, errPlanSeal // a plan is saved with one step at least
	}
	a, err := p.aead(secret)
	if err != nil {
		return nil, err
	}
	out := make([]plannedStep, len(steps))
	for i, st := range steps {
		var s string
		if err := json.Unmarshal(st.Args, &s); err != nil || !strings.HasPrefix(s, sealedPrefix) {
			return nil, errPlanSeal
		}
		box, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, sealedPrefix))
		if err != nil || len(box) < a.NonceSize() {
			return nil, errPlanSeal
		}
		plain, err := a.Open(nil, box[:a.NonceSize()], box[a.NonceSize():], stepAAD(st.Seq, len(steps), st.Tool, st.Provenance))
		if err != nil || st.Seq != i+1 {
			return nil, errPlanSeal
		}
		var ss sealedStep
		if err := json.Unmarshal(plain, &ss); err != nil {
			return nil, errPlanSeal
		}
		st.Args = ss.Args
		out[i] = plannedStep{PlanStep: st, known: ss.Known}
	}
	return out, nil
}

// planClientID is the plan id the client gets: the store's, a dot, and
// the plan's secret.
func planClientID(storeID string, secret []byte) string {
	return storeID + "." + base64.RawURLEncoding.EncodeToString(secret)
}

// splitPlanID splits a plan id the client sent into the store's id and
// the plan's secret; ok is false when it holds no secret.
func splitPlanID(id string) (storeID string, secret []byte, ok bool) {
	storeID, enc, found := strings.Cut(id, ".")
	if !found {
		return id, nil, false
	}
	secret, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(secret) != planSecretBytes {
		return storeID, nil, false
	}
	return storeID, secret, true
}

// planSealError says why a claimed plan's steps do not open.
func planSealError(storeID string) string {
	return fmt.Sprintf("plan %s was altered in the store since it was made, or made by a server with another filter key (instances committing each other's plans need one key: cluster.key_env); it will not run", storeID)
}
