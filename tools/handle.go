package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// Handle adapts a typed function to a Handler, the one way to declare a
// tool's handler in Go: it decodes the arguments into In (unknown fields
// rejected; empty arguments leave In zero), calls fn, and encodes its
// result as JSON. A decoding failure is an *Error with code
// CodeInvalidArguments whose message names the field and the JSON type it
// wants ("limit: got a JSON string, want a number"); errors from fn reach
// the caller as they are (return an *Error to choose the code).
//
// The registry has already checked the arguments against the tool's input
// schema, so decoding fails only where In and the schema disagree.
func Handle[In, Out any](fn func(context.Context, In) (Out, error)) Handler {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		var in In
		if len(bytes.TrimSpace(args)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return nil, DecodeError(err)
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// DecodeError turns an error from decoding arguments with encoding/json
// into an *Error with code CodeInvalidArguments that names the offending
// field in words an agent can act on. It wraps err.
func DecodeError(err error) *Error {
	invalid := func(format string, args ...any) *Error {
		return &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf(format, args...), Err: err}
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		field := ute.Field
		if field == "" {
			field = "arguments"
		}
		return invalid("%s: got a JSON %s, want %s", field, ute.Value, jsonKind(ute.Type))
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return invalid("a time value %q is not RFC 3339, such as 2025-01-31T09:00:00Z", pe.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalid("arguments are not valid JSON: %s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("arguments are not valid JSON: they end too early")
	}
	return invalid("arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "a string (an RFC 3339 time)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Interface:
		return "any JSON value"
	}
	return "an object"
}
