package openapi

import (
	"fmt"
	"strings"

	yaml3 "github.com/oasdiff/yaml3"
)

// A YAML alias is one value in the document's text and a whole copy of
// its anchor's value in the JSON the document becomes: 1 MB of YAML
// holding a 1 MiB string and a hundred aliases of it (4 bytes each)
// became 100 MiB of JSON, and took the server's memory to 479 MiB
// (issue 19, attack15 I1). yaml.v3's guard against "excessive aliasing"
// counts nodes, and a string is one node whatever its length. So the
// bytes aliases add are counted before the document is converted, and
// bounded: at most maxAliasBytes(len(data)), and the whole JSON at most
// MaxDocumentBytes, as a JSON document's bytes are.

// aliasFactor and aliasFloor bound the bytes a YAML document's aliases
// may add to the JSON it becomes: aliasFactor times the document's own
// bytes, at least aliasFloor. A description that shares its repeated
// parts through anchors (responses, parameters) stays far below.
const (
	aliasFactor = 4
	aliasFloor  = 4 << 20
)

func maxAliasBytes(docBytes int) int64 {
	return max(int64(docBytes)*aliasFactor, aliasFloor)
}

// mayHaveAnchors reports whether YAML text can hold an anchor: a '&'
// followed by a name, that does not continue a word. An anchor starts a
// token: at the start, after a space or a line break — yaml.v3 breaks
// lines at NEL and U+2028/U+2029 too —, after a flow indicator, or right
// after the colon of a JSON-like key ({"k":&a v}, which attack17 K4 used
// to get past a check that did not know it). So only a '&' after an
// ASCII byte that can be none of these is left out: text without an
// anchor has no aliases either (an alias of an unknown anchor is an
// error), and need not be parsed twice. What else is let through is
// parsed once more, no harm done.
func mayHaveAnchors(data []byte) bool {
	for i, c := range data {
		if c != '&' || i+1 >= len(data) {
			continue
		}
		if i > 0 {
			switch p := data[i-1]; {
			case p >= 0x80: // the last byte of a line break, or of anything
			case p == ' ', p == '\t', p == '\n', p == '\r', p == '[', p == '{', p == ',', p == ':':
			default:
				continue
			}
		}
		switch data[i+1] {
		case ' ', '\t', '\n', '\r', ',', '[', ']', '{', '}':
			continue
		}
		return true
	}
	return false
}

// checkAliases parses YAML text and fails when its aliases would add more
// than maxAliasBytes(len(data)) bytes to the JSON it becomes, or make
// that JSON larger than MaxDocumentBytes. It fails too on an alias of a
// value that holds it, which has no JSON form. A document the parser
// refuses is refused as the conversion would refuse it: left to the
// conversion, a parser that read it otherwise would expand it unchecked.
func checkAliases(data []byte) error {
	var root yaml3.Node
	if err := yaml3.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("%w: neither JSON nor YAML: %s", ErrDocument, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	m := &aliasMeter{sizes: map[*yaml3.Node]int64{}, visiting: map[*yaml3.Node]bool{}}
	whole := m.size(&root)
	switch {
	case m.cycle != "":
		return fmt.Errorf("%w: YAML anchor %q holds an alias of itself, which has no JSON form", ErrDocument, m.cycle)
	case m.added > maxAliasBytes(len(data)):
		return fmt.Errorf("%w: its YAML aliases (%d of them) would add more than %d bytes to the JSON it becomes (%d times the document's %d bytes, at least %d): each alias is a whole copy of its anchor's value; write what they repeat once, under components, and refer to it with $ref", ErrDocument, m.aliases, maxAliasBytes(len(data)), aliasFactor, len(data), aliasFloor)
	case whole > MaxDocumentBytes:
		return fmt.Errorf("%w: as JSON it is more than %d bytes, more than the %d this reads", ErrDocument, whole, MaxDocumentBytes)
	}
	return nil
}

// aliasMeter sizes the JSON a YAML node tree becomes, each anchor's value
// once, and counts what aliases add.
type aliasMeter struct {
	sizes    map[*yaml3.Node]int64 // JSON bytes of each anchored node
	visiting map[*yaml3.Node]bool  // anchored nodes being sized
	added    int64                 // bytes aliases add
	aliases  int
	cycle    string // the anchor of a value that holds an alias of itself
}

// meterCap is where sizes stop growing: past it every bound has failed,
// and sums stay far from overflowing.
const meterCap = 1 << 50

func (m *aliasMeter) size(n *yaml3.Node) int64 {
	if n == nil || m.cycle != "" {
		return 0
	}
	if n.Anchor != "" {
		if s, ok := m.sizes[n]; ok {
			return s
		}
		if m.visiting[n] {
			m.cycle = n.Anchor
			return 0
		}
		m.visiting[n] = true
		defer delete(m.visiting, n)
	}
	var s int64
	switch n.Kind {
	case yaml3.AliasNode:
		m.aliases++
		s = m.size(n.Alias)
		m.added = min(m.added+s, meterCap)
	case yaml3.ScalarNode:
		s = 2 + escapedLen(n.Value)
	default: // documents, mappings and sequences
		s = 2
		for _, c := range n.Content {
			s = min(s+1+m.size(c), meterCap)
		}
	}
	if n.Anchor != "" {
		m.sizes[n] = s
	}
	return s
}

// escapedLen is the length of s as a JSON string's content as
// encoding/json writes it, HTML characters escaped (but not invalid
// UTF-8 or U+2028, rare enough not to matter to a bound).
func escapedLen(s string) int64 {
	n := int64(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n', '\r', '\t', '\b', '\f':
			n++
		case '<', '>', '&':
			n += 5
		default:
			if c < 0x20 {
				n += 5
			}
		}
	}
	return n
}
