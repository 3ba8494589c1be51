package upstream

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ToolNames assigns registry names to an upstream's tools, given their
// original names, for the category: a map from original name to the short
// name registered under the category, and for each tool whose name had to
// change because of another, a note saying why.
//
// The short name is the original in snake case (createEntities →
// create_entities, get-sum → get_sum, HTTPGet → http_get), with every run
// of characters other than letters and digits made one underscore, "t_"
// in front of a leading digit, cut so that category.name fits in 128
// bytes. Collisions are resolved deterministically, whatever order the
// upstream lists its tools in: an original that is already a valid short
// name keeps it; the others, in byte order of their original names, take
// their snake-case name if it is free, else the first free of name_2,
// name_3, … The original name stays callable as an alias whenever it
// differs from the short name.
func ToolNames(category string, originals []string) (names map[string]string, notes map[string]string) {
	origs := slices.Clone(originals)
	slices.Sort(origs)
	origs = slices.Compact(origs)
	names = make(map[string]string, len(origs))
	notes = map[string]string{}
	taken := map[string]string{} // short name → original that holds it
	room := max(8, 128-len(category)-1)
	for _, o := range origs {
		if s := snakeName(o, room); s == o {
			names[o] = s
			taken[s] = o
		}
	}
	for _, o := range origs {
		if _, done := names[o]; done {
			continue
		}
		base := snakeName(o, room)
		s := base
		for n := 2; taken[s] != ""; n++ {
			suffix := "_" + strconv.Itoa(n)
			s = base[:min(len(base), room-len(suffix))] + suffix
		}
		if s != base {
			notes[o] = fmt.Sprintf("Registered as %s because %s is the name of the upstream tool %q.", s, base, taken[base])
		}
		names[o] = s
		taken[s] = o
	}
	return names, notes
}

// snakeName is the short name an original name becomes, before collisions
// are resolved, at most room bytes long.
func snakeName(orig string, room int) string {
	var b strings.Builder
	rs := []rune(orig)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(r)
	}
	s := sanitize(b.String())
	switch {
	case s == "":
		s = "tool"
	case s[0] >= '0' && s[0] <= '9':
		s = "t_" + s
	}
	if len(s) > room {
		s = strings.TrimRight(s[:room], "_")
	}
	return s
}

var jsIdentRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// IsIdentifier reports whether name can follow a dot in JavaScript
// (everything.get_sum), as opposed to needing brackets
// (everything["get-sum"]).
func IsIdentifier(name string) bool { return jsIdentRE.MatchString(name) }
