package memory

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"time"
)

// ResultInfo describes a stored result. Results are kept zstd-compressed;
// Size is the uncompressed size, StoredSize the compressed one.
type ResultInfo struct {
	ID        string `json:"id"`
	Principal string `json:"principal"`
	// Session is kept for the server (ListResults selects by it), never
	// shown: a session id lets its holder act in the session.
	Session     string    `json:"-"`
	ExecutionID string    `json:"execution_id,omitempty"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	StoredSize  int64     `json:"stored_size"`
	SHA256      string    `json:"sha256"`
	CreatedAt   time.Time `json:"created_at"`
	// Provenance is the tool sources the result's data came from (see
	// WithProvenance); absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// PutResultInput is a result to store, uncompressed: the store compresses
// it. The principal comes from the context; Session defaults to the
// caller's.
type PutResultInput struct {
	Session     string
	ExecutionID string
	ContentType string // default application/json
	Data        []byte
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's.
	Provenance json.RawMessage
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random identifier of 26 lower-case letters and digits
// (128 bits), safe in URIs and file names, as the store gives results,
// memories (their uid) and stores.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return idEncoding.EncodeToString(b[:])
}

// ResultGetter reads a whole stored result: a backend's GetResult.
type ResultGetter interface {
	GetResult(ctx context.Context, id string) (ResultInfo, []byte, error)
}

// ReadResult returns bytes [offset, offset+length) of the caller's result
// id as g stores it, decompressed (fewer at the end; none past it), for
// paging. A negative length means to the end. Both backends' ReadResult
// is this.
func ReadResult(ctx context.Context, g ResultGetter, id string, offset, length int64) (ResultInfo, []byte, error) {
	if offset < 0 {
		return ResultInfo{}, nil, Invalid("offset is %d; it must be 0 or more", offset)
	}
	r, data, err := g.GetResult(ctx, id)
	if err != nil {
		return ResultInfo{}, nil, err
	}
	if offset >= int64(len(data)) {
		return r, []byte{}, nil
	}
	end := int64(len(data))
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return r, data[offset:end], nil
}

// CheckResultQuota refuses a result whose compressed size alone exceeds
// what a principal, or the whole store, may keep: no eviction would make
// room for it.
func CheckResultQuota(storedSize int64, lim Limits) error {
	if storedSize > lim.MaxPrincipalResultsBytes || storedSize > lim.MaxResultsBytes {
		return TooLarge("result is %d bytes compressed; a principal's stored results may take %d bytes (and all together %d): return less from the program",
			storedSize, lim.MaxPrincipalResultsBytes, lim.MaxResultsBytes)
	}
	return nil
}

// LargestHolder is the principal holding the most bytes in held (ties
// by name), or "" when every holding is zero.
func LargestHolder(held map[string]int64) string {
	best := ""
	for p, n := range held {
		if n > 0 && (best == "" || n > held[best] || n == held[best] && p < best) {
			best = p
		}
	}
	return best
}
