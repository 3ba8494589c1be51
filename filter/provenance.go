package filter

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Provenance is the set of sources (qualified tool names) that stored
// data came from, kept by the store with memories, workspace files and
// stored results, and given back to Flow.Observe when a later run reads
// them. Its JSON form is a sorted array of names; the zero value means
// no known source.
//
// A provenance is bounded: past maxProvenanceSources names it is the one
// name AnySource, data of every source, which every rule's From matches.
// It never keeps some of the names and drops the others: the names
// dropped could be the ones a rule forbids (issue 19, attack21 P1: 64
// made-up names sorting before "crm." cut crm.get_contact off).
type Provenance struct {
	sources []string // sorted, unique; or [AnySource]
}

// AnySource is the name that stands for every source: the provenance of
// data whose sources outnumber what a provenance keeps
// (maxProvenanceSources), and the source of a token whose value's
// sources outnumber what the vault keeps (maxSources). Every rule's From
// matches it, so such data goes nowhere a rule forbids any source to
// go. No tool has this name.
const AnySource = "*"

// maxProvenanceSources bounds a provenance; beyond it, the provenance is
// AnySource.
const maxProvenanceSources = 64

// NewProvenance returns the provenance of the named sources: AnySource
// alone when it is among them or when they are more than a provenance
// keeps.
func NewProvenance(sources ...string) Provenance {
	var s []string
	for _, name := range sources {
		if name == AnySource {
			return anyProvenance()
		}
		if name != "" {
			s = append(s, name)
		}
	}
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) > maxProvenanceSources {
		return anyProvenance()
	}
	return Provenance{sources: s}
}

func anyProvenance() Provenance { return Provenance{sources: []string{AnySource}} }

// Sources returns the sources, sorted.
func (p Provenance) Sources() []string { return slices.Clone(p.sources) }

// IsZero reports whether no source is known.
func (p Provenance) IsZero() bool { return len(p.sources) == 0 }

// IsAny reports whether p is of every source (AnySource).
func (p Provenance) IsAny() bool { return len(p.sources) == 1 && p.sources[0] == AnySource }

// Union returns the sources of p and q.
func (p Provenance) Union(q Provenance) Provenance {
	switch {
	case q.IsZero():
		return p
	case p.IsZero():
		return q
	}
	return NewProvenance(append(slices.Clone(p.sources), q.sources...)...)
}

func (p Provenance) String() string { return strings.Join(p.sources, ",") }

// MarshalJSON encodes p as a sorted array of names.
func (p Provenance) MarshalJSON() ([]byte, error) {
	if p.sources == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(p.sources)
}

// UnmarshalJSON decodes an array of names (or null).
func (p *Provenance) UnmarshalJSON(b []byte) error {
	var s []string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	*p = NewProvenance(s...)
	return nil
}

// ParseProvenance decodes the JSON form of a provenance, as the store
// keeps it; "" is the zero provenance.
func ParseProvenance(text string) (Provenance, error) {
	var p Provenance
	if text == "" {
		return p, nil
	}
	if err := p.UnmarshalJSON([]byte(text)); err != nil {
		return Provenance{}, err
	}
	return p, nil
}

// NameMatch reports whether a rule's pattern (a glob) matches a tool's
// qualified name (see FlowOptions.Match).
type NameMatch func(glob, name string) bool

// name reports whether glob matches the tool name: path.Match when m is
// nil.
func (m NameMatch) name(glob, name string) bool {
	if m != nil {
		return m(glob, name)
	}
	ok, _ := path.Match(glob, name)
	return ok
}

// from reports whether a rule's From matches the source name: AnySource,
// data of every source, is matched by every From.
func (m NameMatch) from(from, name string) bool {
	return name == AnySource || m.name(from, name)
}

// sourceText is how an error names a source: AnySource said in words.
func sourceText(name string) string {
	if name == AnySource {
		return fmt.Sprintf("more sources than the data-flow tracker keeps apart (%d for stored data, %d for a token's value, %d in a run; taken as every source)", maxProvenanceSources, maxSources, maxFlowSources+maxOverflowNames)
	}
	return name
}
