package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// Provenance says which tool sources the data of a memory, a workspace
// file or a stored result came from. Its content is package filter's
// business: the store keeps it as given (any JSON value, compacted, at
// most Limits.MaxMetadataBytes) and returns it on read.
//
// A program cannot set it through the tools' arguments (the input fields
// are not part of their JSON): the server that runs the program states it,
// either in the Provenance field of an input struct or, for writes made
// through the tools, in the context with WithProvenance. The field wins
// over the context.

type provenanceKey struct{}

// WithProvenance returns a context whose writes (Remember, Update,
// WriteFile, PutResult) record provenance p unless their input gives one.
func WithProvenance(ctx context.Context, p json.RawMessage) context.Context {
	return context.WithValue(ctx, provenanceKey{}, p)
}

// WithProvenanceOf is WithProvenance with the provenance computed by of
// when a write first asks for it: finding the sources of a call's
// arguments reads them whole, which a call that stores nothing need not
// pay (issue 19, attack25 F7). of must be safe to call more than once
// and from any goroutine (sync.OnceValue).
func WithProvenanceOf(ctx context.Context, of func() json.RawMessage) context.Context {
	return context.WithValue(ctx, provenanceKey{}, of)
}

// ProvenanceFrom returns the provenance that WithProvenance or
// WithProvenanceOf stored, or nil.
func ProvenanceFrom(ctx context.Context) json.RawMessage {
	switch p := ctx.Value(provenanceKey{}).(type) {
	case json.RawMessage:
		return p
	case func() json.RawMessage:
		return p()
	}
	return nil
}

// AnySource and MaxProvenanceSources are package filter's bound on a
// provenance (filter.AnySource, which every data-flow rule's From
// matches, and the names a provenance keeps before it is AnySource
// alone); a test of package engine, which sees both, keeps them equal.
const (
	AnySource            = "*"
	MaxProvenanceSources = 64
)

// UnionProvenance returns the provenance of data written over data of
// provenance stored: when both are JSON arrays (package filter's form, an
// array of source names), their elements together, sorted and each once
// — or [AnySource] alone when that is among them or they are more than
// MaxProvenanceSources, so that no source is ever dropped to keep the
// bound (issue 19, attack21 P1) —; else the one given, or the stored one
// when none is given. Writes that merge (an entity's properties, a
// relation) record it, so that what they hold keeps the sources of every
// write, not only the last.
func UnionProvenance(stored, given json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(given)) == 0 || string(bytes.TrimSpace(given)) == "null" {
		return stored
	}
	if len(bytes.TrimSpace(stored)) == 0 || string(bytes.TrimSpace(stored)) == "null" {
		return given
	}
	var a, b []json.RawMessage
	if json.Unmarshal(stored, &a) != nil || json.Unmarshal(given, &b) != nil {
		return given
	}
	seen := map[string]bool{}
	var all []string
	for _, e := range append(a, b...) {
		var buf bytes.Buffer
		if json.Compact(&buf, e) != nil {
			continue
		}
		if k := buf.String(); !seen[k] {
			seen[k] = true
			all = append(all, k)
		}
	}
	if anySource := `"` + AnySource + `"`; seen[anySource] || len(all) > MaxProvenanceSources {
		return json.RawMessage("[" + anySource + "]")
	}
	slices.Sort(all)
	return json.RawMessage("[" + strings.Join(all, ",") + "]")
}

// Provenance returns the provenance to record: given, or else the
// context's (WithProvenance), compacted, at most lim.MaxMetadataBytes;
// nil (and a nil column value) when there is none. field prefixes the
// message of an invalid one.
func Provenance(ctx context.Context, given json.RawMessage, field string, lim Limits) (json.RawMessage, error) {
	p := given
	if len(bytes.TrimSpace(p)) == 0 {
		p = ProvenanceFrom(ctx)
	}
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, p); err != nil {
		return nil, Invalid("%sprovenance is not valid JSON: %v", field, err)
	}
	if limit := lim.Defaults().MaxMetadataBytes; buf.Len() > limit {
		return nil, TooLarge("%sprovenance is %d bytes as JSON; the limit is %d bytes", field, buf.Len(), limit)
	}
	return json.RawMessage(buf.Bytes()), nil
}
