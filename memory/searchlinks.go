package memory

import (
	"fmt"
	"slices"
	"strings"
)

// SearchLink is what learning from use keeps for tool search: a word of
// a search query (an index term, as package search stems it), a tool a
// run of the same session called after that search, and how many times
// that happened.
type SearchLink struct {
	Term  string `json:"term"`
	Tool  string `json:"tool"`
	Count int    `json:"count"`
}

// Bounds of learning from use.
const (
	// MaxSearchLinks bounds the links the store keeps: learning one more
	// drops the ones learned least recently.
	MaxSearchLinks = 50000
	// MaxSearchLinkTerms and MaxSearchLinkTools bound one LearnSearch.
	MaxSearchLinkTerms = 32
	MaxSearchLinkTools = 16
	maxSearchLinkKey   = 128
)

// CheckSearchLinks checks the terms and tools of a LearnSearch, for every
// backend: each a short word or tool name of printable characters, within
// the bounds.
func CheckSearchLinks(terms, toolNames []string) error {
	if len(terms) > MaxSearchLinkTerms || len(toolNames) > MaxSearchLinkTools {
		return fmt.Errorf("learn search: %d terms and %d tools; at most %d and %d", len(terms), len(toolNames), MaxSearchLinkTerms, MaxSearchLinkTools)
	}
	for _, k := range slices.Concat(terms, toolNames) {
		if k == "" || len(k) > maxSearchLinkKey || strings.IndexFunc(k, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			return fmt.Errorf("learn search: %q: want 1 to %d printable bytes", k, maxSearchLinkKey)
		}
	}
	return nil
}
