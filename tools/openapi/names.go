package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// maxNameLen bounds a tool's short name; longer ones are cut and given a
// hash of the whole, so that they stay distinct.
const maxNameLen = 64

// ToolName turns an operation's identity into a tool's short name: a
// lower-case identifier of words joined by underscores. An operationId
// gives the words ("issues/list-for-repo" → issues_list_for_repo,
// "listPets" → list_pets); without one, the method and path do
// ("GET /pets/{id}" → get_pets_id).
func ToolName(operationID, method, path string) string {
	src := operationID
	if strings.TrimSpace(src) == "" {
		src = method + " " + path
	}
	name := snake(src)
	if name == "" {
		name = "operation"
	}
	if name[0] >= '0' && name[0] <= '9' {
		name = "op_" + name
	}
	if len(name) > maxNameLen {
		sum := sha256.Sum256([]byte(src))
		name = strings.TrimRight(name[:maxNameLen-9], "_") + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// snake splits s into words — at anything that is not a letter or digit,
// and at lower-to-upper and acronym-to-word boundaries of camel case — and
// joins them lower-cased with underscores. Letters outside ASCII are
// dropped.
func snake(s string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if r >= 128 || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && rs[i+1] < 128 && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return strings.Join(words, "_")
}

// identifier turns a tag or path segment into a lower-case identifier for
// the tree ("code-scanning" → code_scanning); "" when nothing is left.
func identifier(s string) string {
	n := snake(s)
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "n" + n
	}
	if len(n) > 40 {
		n = strings.TrimRight(n[:40], "_")
	}
	return n
}

// CategoryFor turns a source's configured name into a category name: a
// lower-case identifier, or "" when the name has no letters or digits.
func CategoryFor(name string) string {
	n := snake(name)
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "api_" + n
	}
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "_")
	}
	return n
}

// glob reports whether s matches pattern, where * matches any run of
// characters (slashes included) and ? any one character.
func glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	pi, ti := 0, 0
	star, mark := -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// aliasesOf returns the other name an operation's tool answers to: the
// document's own name for it, its operationId, when that is not the
// tool's name ("createUser" beside create_user). Programs may call it by
// that name, and a policy written with it (approval.required_for, a
// data-flow rule, a toolset) means the tool (attack27 T6). An operationId
// no alias may be (empty, over 128 bytes, with control characters) gives
// none.
func aliasesOf(o *operation) []string {
	id := o.id
	if id == "" || id == o.name || len(id) > 128 || strings.IndexFunc(id, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		return nil
	}
	return []string{id}
}
