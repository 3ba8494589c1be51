package tools

import (
	"net/url"
	"slices"
	"strings"
)

// URLSecrets are the parts of a configured URL — an upstream server's, an
// OpenAPI description's — that may be its credential, as hosted servers
// hand out URLs that hold a key: the user info, the query and its values,
// the fragment, and the whole path (a key can be any segment of it, of
// any shape), as errors print them (Go's url.Error quotes the URL). A
// caller replaces each wherever a principal or the log would read it,
// longest first (SecretReplacer): what is left of a URL is its scheme and
// host.
func URLSecrets(raw string) []string {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return []string{raw}
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.String(), u.User.Username())
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
		for _, part := range strings.Split(u.RawQuery, "&") {
			if _, v, ok := strings.Cut(part, "="); ok {
				out = append(out, v) // as written, escapes and all
			}
		}
	}
	if u.Fragment != "" {
		out = append(out, u.Fragment, u.EscapedFragment())
	}
	if p := strings.TrimRight(u.EscapedPath(), "/"); p != "" {
		out = append(out, p)
		if v, err := url.PathUnescape(p); err == nil {
			out = append(out, v)
		}
		for _, seg := range strings.Split(p, "/") {
			if len(seg) >= 16 && strings.ContainsAny(seg, "0123456789") {
				out = append(out, seg)
			}
		}
	}
	return out
}

// SecretReplacer replaces each of secrets of at least minLen bytes with
// mark, the longest first; nil when there are none.
func SecretReplacer(secrets []string, minLen int, mark string) *strings.Replacer {
	var vs []string
	for _, s := range secrets {
		if len(s) >= minLen && !slices.Contains(vs, s) {
			vs = append(vs, s)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vs))
	for _, v := range vs {
		pairs = append(pairs, v, mark)
	}
	return strings.NewReplacer(pairs...)
}

// URLOrigin is a configured URL as principals and logs may read it: its
// scheme and host, as everything after them may hold a key (URLSecrets).
func URLOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(a URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
