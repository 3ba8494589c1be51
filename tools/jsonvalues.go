package tools

import (
	"bytes"
	"context"
	"math"
)

// What JSON decodes into is in proportion to its values, not its bytes:
// "{}," is three bytes and a hundred once decoded into a Go map and
// walked by the filter (issue 19, attack9 D5–D7: 15 MB of [{},{},…]
// took about 32 times its bytes in the server). So what the server reads
// from outside — a tool's result, an API's response, an upstream's
// message, an API description — is counted in values before it is
// decoded (JSONValues, or validJSON on a result's path: one scan, no
// allocation), and is held as its bytes plus DecodedValueBytes a value
// (DecodedSize) in the results in flight (HoldDecoded), or refused.

// DecodedValueBytes is what one JSON value of a result is taken to cost
// once decoded, beside its bytes: attack9 measured about 100 bytes a
// value for 15 MB of empty objects (decoded, filtered and re-encoded)
// and 20 for 1 MB of small numbers; this is the former, with room.
const DecodedValueBytes = 128

// ResultCopies is how many copies of a result's bytes the server holds
// while the result is in flight: the result itself, until the program's
// sandbox has it; the text the run's data flow parses as it observes
// it; and the strings that parsing unescapes. Counted once, a text-heavy
// result held three times what its hold said (issue 19).
const ResultCopies = 3

// DecodedSize is the bytes a JSON text of size bytes and values values
// is held as while it is in flight.
func DecodedSize(size int64, values int) int64 {
	return size + int64(values)*DecodedValueBytes
}

// JSONValues counts the values in a JSON text, objects and arrays
// included, without decoding it: one more than its commas, colons aside,
// plus its objects and arrays, less its empty ones, outside strings. It
// stops counting past limit. Malformed text is counted as well as it can
// be; the decoder refuses it later. For valid JSON it is validJSON's
// count.
func JSONValues(b []byte, limit int) int {
	n, inString, escaped, opened := 1, false, false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		case ',', '{', '[':
			if n++; n > limit {
				return n
			}
		case '}', ']':
			if opened {
				n--
			}
		}
		opened = c == '{' || c == '['
	}
	return n
}

// ValueCounter counts the values of a JSON text fed to it in pieces, as
// JSONValues counts a whole one: what reads a message from outside counts
// it as it arrives, before the message is whole.
type ValueCounter struct {
	n                         int
	inString, escaped, opened bool
}

// Write counts b, the next piece of the text. It never fails. Within a
// string it skips to the next quote or backslash at once (IndexByte):
// counting every message an upstream sends, text included, cost a byte
// loop over its every byte.
func (v *ValueCounter) Write(b []byte) (int, error) {
	// The next quote and backslash at or after i, len(b) for none; found
	// again only once passed, so that each byte is searched once.
	q, k := -1, -1
	for i := 0; i < len(b); i++ {
		c := b[i]
		if v.inString {
			if v.escaped {
				v.escaped = false
				continue
			}
			if q < i {
				q = indexFrom(b, i, '"')
			}
			if k < i {
				k = indexFrom(b, i, '\\')
			}
			switch {
			case k < q:
				v.escaped, i = true, k
			case q < len(b):
				v.inString, i = false, q
			default:
				return len(b), nil // the string goes on in the next piece
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			v.inString = true
		case ',', '{', '[':
			v.n++
		case '}', ']':
			if v.opened {
				v.n--
			}
		}
		v.opened = c == '{' || c == '['
	}
	return len(b), nil
}

// indexFrom is the index of the first c in b at or after i, or len(b).
func indexFrom(b []byte, i int, c byte) int {
	if j := bytes.IndexByte(b[i:], c); j >= 0 {
		return i + j
	}
	return len(b)
}

// Values is the count of the text fed so far.
func (v *ValueCounter) Values() int { return v.n + 1 }

// A DecodedHolder holds, for one tool call, n bytes of what its result
// decodes into (DecodedSize) until the call's result is handed on: it
// raises what the call holds to n, waiting within ctx for the bytes,
// and returns a *Error when it cannot (a result larger than the bound,
// or a wait past the run's deadline). The engine installs one for each
// call it makes (WithDecodedHolder).
type DecodedHolder func(ctx context.Context, n int64) error

type decodedHolderKey struct{}

// WithDecodedHolder returns ctx with h, which HoldDecoded calls.
func WithDecodedHolder(ctx context.Context, h DecodedHolder) context.Context {
	return context.WithValue(ctx, decodedHolderKey{}, h)
}

// HoldsDecoded reports whether ctx is a call's that holds what its
// result decodes into (WithDecodedHolder): what reads from outside for it
// then counts as it reads.
func HoldsDecoded(ctx context.Context) bool {
	h, _ := ctx.Value(decodedHolderKey{}).(DecodedHolder)
	return h != nil
}

// HoldDecoded holds the decoded size of a JSON text of size bytes and
// values values for the call of ctx, before it is decoded: a tool calls
// it with what it read from outside, call with every tool's result. It
// does nothing for a call made outside the engine (a test's, a direct
// registry call).
func HoldDecoded(ctx context.Context, size int64, values int) error {
	h, _ := ctx.Value(decodedHolderKey{}).(DecodedHolder)
	if h == nil {
		return nil
	}
	return h(ctx, DecodedSize(size, values))
}

// HoldJSON is HoldDecoded of the JSON text b, its values counted
// (JSONValues): what every path that decodes a text read from outside
// holds first.
func HoldJSON(ctx context.Context, b []byte) error {
	return HoldDecoded(ctx, int64(len(b)), JSONValues(b, math.MaxInt))
}

type argsHolderKey struct{}

// WithArgsHolder returns ctx whose validations of a tool's arguments
// (Registry.Call, View.Call, View.ValidateContext) hold, with h, what the
// arguments decode into before the schema's validator decodes them; h's
// error fails the call as it is. Arguments a schema checks without
// decoding them hold nothing.
func WithArgsHolder(ctx context.Context, h DecodedHolder) context.Context {
	return context.WithValue(ctx, argsHolderKey{}, h)
}
