package upstream

import (
	"encoding/json"
	"fmt"
	"github.com/codecell/codecell/tools"
	"maps"
	"runtime"
	"slices"
	"strings"
)

// Lookup returns the value of an environment variable and whether it is
// set, as os.LookupEnv does. The package never reads the process
// environment itself: the caller decides what a Lookup sees.
type Lookup func(name string) (string, bool)

// inherited are the variables a stdio child gets from codecell's
// environment: those the MCP TypeScript SDK's getDefaultEnvironment passes
// (after sudo's defaults), plus the locale, the time zone and the
// temporary directory, which servers need to behave as they do in a shell.
var inherited = map[string][]string{
	"windows": {"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
		"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"},
	"": {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"},
}

// DefaultEnvironment returns the variables every stdio child inherits
// from lookup: PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, LC_ALL,
// LC_CTYPE, TMPDIR and TZ (on Windows, its own list), those that are set.
// Values that start with "()" (shell functions) are left out, as the MCP
// TypeScript SDK does. Nothing else of codecell's environment reaches a
// child — not its auth tokens, not its embedder key — unless the
// server's env names it.
func DefaultEnvironment(lookup Lookup) map[string]string {
	names := inherited[""]
	if runtime.GOOS == "windows" {
		names = inherited["windows"]
	}
	out := map[string]string{}
	if lookup == nil {
		return out
	}
	for _, n := range names {
		if v, ok := lookup(n); ok && !strings.HasPrefix(v, "()") {
			out[n] = v
		}
	}
	return out
}

// checkExpansion reports a malformed ${...} reference in s.
func checkExpansion(s string) error {
	_, err := expand(s, func(string) (string, bool) { return "", true })
	return err
}

// expand replaces ${NAME} in s with NAME's value, and ${NAME:-default}
// with the value or, when NAME is unset or empty, default. $$ is a
// literal $. An unset NAME without a default is an error that names it
// (never its value).
func expand(s string, lookup Lookup) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$$"):
			b.WriteByte('$')
			s = s[2:]
			continue
		case !strings.HasPrefix(s, "${"):
			b.WriteByte('$')
			s = s[1:]
			continue
		}
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", fmt.Errorf("a ${ without its closing }")
		}
		ref := s[2:end]
		s = s[end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envNameRE.MatchString(name) {
			return "", fmt.Errorf("${%s} does not name a variable; write ${NAME} or ${NAME:-default}", ref)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("${%s} is not set in codecell's environment", name)
		}
		b.WriteString(v)
	}
}

// resolved is a server's configuration with every ${VAR} expanded, and the
// values that must never be shown.
type resolved struct {
	args    []string
	env     []string // NAME=value, sorted: DefaultEnvironment, then Env
	ownEnv  []string // NAME=value, sorted: the server's Env alone
	headers map[string]string
	secrets []string
}

// resolve expands the server's env, headers and args from lookup. Every
// value of env and headers is a secret, and so is every value a ${VAR} in
// args was replaced with.
func resolve(s Server, lookup Lookup) (resolved, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	var r resolved
	env := map[string]string{}
	if s.Command != "" {
		env = DefaultEnvironment(lookup)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v, err := expand(s.Env[k], lookup)
		if err != nil {
			return r, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = v
		r.ownEnv = append(r.ownEnv, k+"="+v)
		r.secrets = append(r.secrets, v)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		r.env = append(r.env, k+"="+env[k])
	}
	if len(s.Headers) > 0 {
		r.headers = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		v, err := expand(s.Headers[k], lookup)
		if err != nil {
			return r, fmt.Errorf("header %s: %w", k, err)
		}
		r.headers[k] = v
		r.secrets = append(r.secrets, v)
		// A bearer token is also a secret without its scheme.
		if scheme, tok, ok := strings.Cut(v, " "); ok && len(scheme) < len(v) && tok != "" {
			r.secrets = append(r.secrets, tok)
		}
	}
	r.secrets = append(r.secrets, tools.URLSecrets(s.URL)...)
	for i, a := range s.Args {
		v, err := expand(a, lookup)
		if err != nil {
			return r, fmt.Errorf("args[%d]: %w", i, err)
		}
		if v != a {
			r.secrets = append(r.secrets, v)
		}
		r.args = append(r.args, v)
	}
	return r, nil
}

// redactor replaces secrets in what codecell shows: log lines, errors,
// reasons, and results. Every value of a server's env and headers counts
// as a secret, since hosts' configurations carry tokens inline; values
// shorter than minSecret bytes are left alone, so that settings such as
// DEBUG=1 or MODE=read do not blank words of logs and data.
type redactor struct {
	text, results *strings.Replacer
	// scrub replaces what a detector finds sensitive in text (Config.Scrub).
	scrub func(string) string
	// sent are the sensitive values programs sent the server lately,
	// each principal's apart, replaced in text too.
	sent *sentByPrincipal
}

const (
	minSecret  = 8
	secretMark = "[secret]"
)

func newRedactor(secrets []string, scrub func(string) string) redactor {
	return redactor{text: replacer(secrets, minSecret, false), results: replacer(secrets, minSecret, true), scrub: scrub, sent: newSentByPrincipal()}
}

// replacer replaces the secrets of at least minLen bytes, and their JSON
// string forms when inJSON, longest first so that a secret containing
// another is replaced whole; nil when there are none.
func replacer(secrets []string, minLen int, inJSON bool) *strings.Replacer {
	var vs []string
	add := func(v string) {
		if len(v) >= minLen && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	for _, s := range secrets {
		add(s)
		if inJSON {
			if b, err := json.Marshal(s); err == nil {
				add(string(b[1 : len(b)-1]))
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vs))
	for _, v := range vs {
		pairs = append(pairs, v, secretMark)
	}
	return strings.NewReplacer(pairs...)
}

// String replaces the secrets in a text, the sensitive values programs
// sent the server lately, and what the scrubber finds.
func (r redactor) String(s string) string {
	if r.text != nil {
		s = r.text.Replace(s)
	}
	s = r.sent.replace(s)
	if r.scrub != nil {
		s = r.scrub(s)
	}
	return s
}

// Result replaces the secrets in a result (JSON), reporting whether any
// was.
func (r redactor) Result(s string) (string, bool) {
	if r.results == nil {
		return s, false
	}
	out := r.results.Replace(s)
	return out, out != s
}
