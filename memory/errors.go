package memory

import (
	"errors"
	"fmt"

	"github.com/codecell/codecell/tools"
)

// Error codes that the store's operations report in a *tools.Error, beside
// tools.CodeInvalidArguments and tools.CodeNotFound.
const (
	// CodeTooLarge: content, a file or a result is over its size limit.
	CodeTooLarge = "too_large"
	// CodeQuotaExceeded: the principal's workspace is full.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeInvalidPath: a workspace path is not a clean relative path.
	CodeInvalidPath = "invalid_path"
	// CodeEmbedderUnavailable: the embedding service could not be reached,
	// timed out or failed.
	CodeEmbedderUnavailable = "embedder_unavailable"
	// CodeEmbedderMismatch: the embedder does not match the vectors in the
	// store, or returned vectors of the wrong dimension.
	CodeEmbedderMismatch = "embedder_mismatch"
	// CodeConflict: the operation conflicts with the stored state.
	CodeConflict = "conflict"
	// CodeBusy: the caller already runs this operation, which runs one
	// at a time per principal.
	CodeBusy = "busy"
)

// Sentinel errors. Errors the store returns wrap them where they apply, so
// callers can branch with errors.Is; those a tool caller can act on are
// also *tools.Error values with one of the codes above.
var (
	ErrNotFound         = errors.New("not found")
	ErrEmbedderMismatch = errors.New("embedder mismatch")
	ErrEmbedder         = errors.New("embedder failed")
	ErrTooLarge         = errors.New("too large")
	ErrQuota            = errors.New("quota exceeded")
	ErrInvalidPath      = errors.New("invalid path")
	ErrInvalid          = errors.New("invalid argument")
	ErrClosed           = errors.New("store closed")
	ErrConflict         = errors.New("conflict")
	ErrBusy             = errors.New("busy")
	ErrNoStore          = errors.New("no store")
	ErrSchema           = errors.New("schema version")
)

// toolErr returns a *tools.Error with code and message that wraps sentinel.
func toolErr(code string, sentinel error, format string, args ...any) *tools.Error {
	return &tools.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: sentinel}
}

// Invalid is a *tools.Error with tools.CodeInvalidArguments wrapping
// ErrInvalid.
func Invalid(format string, args ...any) *tools.Error {
	return toolErr(tools.CodeInvalidArguments, ErrInvalid, format, args...)
}

// NotFound is a *tools.Error with tools.CodeNotFound wrapping ErrNotFound.
func NotFound(format string, args ...any) *tools.Error {
	return toolErr(tools.CodeNotFound, ErrNotFound, format, args...)
}

// TooLarge is a *tools.Error with CodeTooLarge wrapping ErrTooLarge.
func TooLarge(format string, args ...any) *tools.Error {
	return toolErr(CodeTooLarge, ErrTooLarge, format, args...)
}

// PathError is a workspace path that failed validation.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("invalid workspace path %q: %s", e.Path, e.Reason)
}

func (e *PathError) Unwrap() error { return ErrInvalidPath }

// Quota is a *tools.Error with CodeQuotaExceeded wrapping ErrQuota.
func Quota(format string, args ...any) *tools.Error {
	return toolErr(CodeQuotaExceeded, ErrQuota, format, args...)
}

// Conflict is a *tools.Error with CodeConflict wrapping ErrConflict.
func Conflict(format string, args ...any) *tools.Error {
	return toolErr(CodeConflict, ErrConflict, format, args...)
}
