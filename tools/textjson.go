package tools

import (
	"context"
	"encoding/json"

	"github.com/codecell/codecell/tools/jsonstr"
)

// TextJSON returns text as a JSON string, for a tool whose result is text
// read from outside (an API's text/plain body, an upstream's text
// content, a file). The string's size is worked out first and held in
// the call's results in flight (HoldDecoded) before it is built, in one
// allocation of that size: json.Marshal of a string grows a buffer as it
// escapes — six bytes for each of < > & and control characters — and
// copies it out, about ten times the text at once for eight 15 MiB texts
// of one run, which the results in flight counted once (issue 19).
//
// It escapes what JSON requires, as encoding/json does (invalid UTF-8
// becomes U+FFFD; U+2028 and U+2029 are escaped), but not HTML's < > &:
// the result is a program's value, never HTML — package jsonstr, the
// output filter's encoder too.
func TextJSON[T ~string | ~[]byte](ctx context.Context, text T) (json.RawMessage, error) {
	n := jsonstr.Size(text)
	if err := HoldDecoded(ctx, int64(n)*ResultCopies, 1); err != nil {
		return nil, err
	}
	return jsonstr.Append(make([]byte, 0, n), text), nil
}
