package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/codecell/codecell/tools"
)

// DefaultDimensions is the vector size of HashEmbedder by default (the
// hash part of WordsEmbedder, the offline default).
const DefaultDimensions = 384

// Embedder turns texts into vectors. Implementations must be safe for
// concurrent use and return, for the same text, the same vector every time
// (the store's search is reproducible only if they do).
type Embedder interface {
	// Name identifies the model and its version. The store records it with
	// the vectors and refuses to mix vectors of different names.
	Name() string
	// Dimensions is the length of every vector Embed returns.
	Dimensions() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Remote is implemented by an embedder that sends texts out of codecell's
// process (OpenAIEmbedder): another party, which Embed gives a text only
// as the output filter shows it (see WithShown). An embedder that does
// not implement it, or reports false, computes in the process and is
// given the text as stored.
type Remote interface {
	Remote() bool
}

// IsRemote reports whether e sends what it embeds to another party.
func IsRemote(e Embedder) bool {
	r, ok := e.(Remote)
	return ok && r.Remote()
}

// Shown turns a text into what another party may be shown of it: the
// text as the output filter shows it to the model, tokens for the values
// it hides (under the principal's key, so that one value is one token),
// no token resolved.
type Shown func(text string) (string, error)

type shownKey struct{}

// WithShown returns a context whose embedding by a remote embedder
// (Embed) sends each text as show makes it. The server that runs a
// program sets it on every tool call (the run's tokens and the values it
// received), and a command of the store's for what it re-embeds.
func WithShown(ctx context.Context, show Shown) context.Context {
	return context.WithValue(ctx, shownKey{}, show)
}

// ShownFrom returns the Shown that WithShown stored, or nil.
func ShownFrom(ctx context.Context) Shown {
	s, _ := ctx.Value(shownKey{}).(Shown)
	return s
}

// CheckEmbedder says whether e can serve a store: a name, and dimensions
// a multiple of 8 between 8 and 8192.
func CheckEmbedder(e Embedder) error {
	if e.Name() == "" {
		return fmt.Errorf("embedder has no name")
	}
	if d := e.Dimensions(); d < 8 || d > 8192 || d%8 != 0 {
		return fmt.Errorf("embedder %s: dimensions %d: want a multiple of 8 between 8 and 8192", e.Name(), d)
	}
	return nil
}

// Embed calls e and checks what it returned: one vector per text, each of
// e.Dimensions() finite values. It returns the vectors normalized to unit
// length. Failures are *tools.Error values, as Remember reports them:
// CodeEmbedderUnavailable when the embedder failed, CodeEmbedderMismatch
// when it returned vectors of the wrong size.
//
// A remote embedder (IsRemote) is sent each text as the context's Shown
// makes it, never as stored; without one it is sent nothing and Embed
// fails (issue 19, attack27 T5).
func Embed(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if IsRemote(e) {
		var err error
		if texts, err = shownTexts(ctx, e, texts); err != nil {
			return nil, err
		}
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return nil, te
		}
		if ctx.Err() != nil {
			return nil, &tools.Error{Code: tools.CodeCanceled, Message: "embedding cancelled: " + ctx.Err().Error(), Err: err}
		}
		code := CodeEmbedderUnavailable
		if errors.Is(err, ErrEmbedderMismatch) {
			code = CodeEmbedderMismatch
		}
		return nil, &tools.Error{Code: code, Message: fmt.Sprintf("embedder %s failed: %v; nothing was stored or changed", e.Name(), err), Err: err}
	}
	if len(vs) != len(texts) {
		return nil, &tools.Error{Code: CodeEmbedderMismatch, Err: ErrEmbedderMismatch,
			Message: fmt.Sprintf("embedder %s returned %d vectors for %d texts; nothing was stored or changed", e.Name(), len(vs), len(texts))}
	}
	want := e.Dimensions()
	for i, v := range vs {
		if len(v) != want {
			return nil, &tools.Error{Code: CodeEmbedderMismatch, Err: ErrEmbedderMismatch,
				Message: fmt.Sprintf("embedder %s returned a vector of %d dimensions, want %d (its configured dimensions); check the model and the dimensions setting; nothing was stored or changed", e.Name(), len(v), want)}
		}
		if !normalize(v) {
			// A zero vector (text with no features, or a bad
			// response) cannot be compared by angle; keep it as is
			// but make sure it holds no NaN or Inf.
			for j := range v {
				if math.IsNaN(float64(v[j])) || math.IsInf(float64(v[j]), 0) {
					return nil, &tools.Error{Code: CodeEmbedderMismatch, Err: ErrEmbedderMismatch,
						Message: fmt.Sprintf("embedder %s returned a vector with NaN or infinite values (text %d)", e.Name(), i)}
				}
			}
		}
	}
	return vs, nil
}

// shownTexts is texts as the context's Shown makes them, for the remote
// embedder e.
func shownTexts(ctx context.Context, e Embedder, texts []string) ([]string, error) {
	show := ShownFrom(ctx)
	if show == nil {
		return nil, &tools.Error{Code: CodeEmbedderUnavailable, Err: ErrEmbedder,
			Message: fmt.Sprintf("embedder %s is another party, sent a text only as the output filter shows it, and this call has no filter to show it; nothing was stored or changed", e.Name())}
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		s, err := show(t)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// normalize scales v to unit length in place. It reports false, leaving v
// unchanged, when v is zero or not finite.
func normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return true
}

// Dot is the inner product of two vectors of the same length; for unit
// vectors it is their cosine similarity.
func Dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// EncodeVector is the stored form of a vector: float32 little-endian, the
// form sqlite-vec reads.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reads the stored form of a vector into dst (reused when
// large enough).
func DecodeVector(b []byte, dst []float32) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not float32", len(b))
	}
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst, nil
}
