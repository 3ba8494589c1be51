package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Transport is how codecell talks to an upstream server.
type Transport string

// The transports of upstream servers.
const (
	// Stdio starts the server as a child process and speaks over its
	// standard input and output.
	Stdio Transport = "stdio"
	// StreamableHTTP posts to the server's URL (MCP's Streamable HTTP).
	StreamableHTTP Transport = "http"
	// SSE is MCP's older HTTP+SSE transport: a GET event stream and POSTs
	// to the endpoint it names.
	SSE Transport = "sse"
)

// Server configures one upstream MCP server. Its JSON form is an entry of
// the mcpServers object of Claude Desktop's claude_desktop_config.json
// (command, args, env, cwd; or url, headers and type), to which codecell
// adds its own settings (allow, deny, timeout, max_concurrent_calls,
// max_response_bytes, max_list_bytes, category, disabled,
// trust_annotations). Its TOML form is a [upstream.NAME] table of
// codecell's configuration with the same keys.
type Server struct {
	// Command starts a stdio server: a path, or a name looked up in the
	// PATH the child gets.
	Command string `json:"command,omitempty" toml:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty" toml:"args,omitempty"`
	// Env are variables the child gets on top of DefaultEnvironment.
	Env map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	// Cwd is the child's working directory; empty means codecell's.
	Cwd string `json:"cwd,omitempty" toml:"cwd,omitempty"`

	// URL is an HTTP server's endpoint.
	URL string `json:"url,omitempty" toml:"url,omitempty"`
	// Headers are sent with every HTTP request, such as Authorization.
	Headers map[string]string `json:"headers,omitempty" toml:"headers,omitempty"`
	// Type is "stdio", "http" (Streamable HTTP; "streamable-http" and
	// "streamableHttp" are accepted) or "sse". Empty means stdio for a
	// command and, for a url, Streamable HTTP, falling back to SSE when
	// the server refuses it.
	Type string `json:"type,omitempty" toml:"type,omitempty"`

	// Allow, when not empty, keeps only the tools whose original or
	// registered name matches one of these globs (path.Match syntax).
	Allow []string `json:"allow,omitempty" toml:"allow,omitempty"`
	// Deny drops the tools whose original or registered name matches one
	// of these globs; it wins over Allow.
	Deny []string `json:"deny,omitempty" toml:"deny,omitempty"`
	// Timeout bounds one call, beside the run's own deadline; 0 means
	// DefaultCallTimeout.
	Timeout tools.Duration `json:"timeout,omitempty" toml:"timeout,omitzero"`
	// MaxConcurrentCalls bounds the calls in flight to this server; more
	// wait their turn. 0 means DefaultMaxConcurrentCalls.
	MaxConcurrentCalls int `json:"max_concurrent_calls,omitempty" toml:"max_concurrent_calls,omitzero"`
	// MaxCallsPerPrincipal bounds the calls in flight to this server of
	// one principal, so that one principal's hanging calls cannot take
	// every slot of MaxConcurrentCalls; 0 means all but a quarter of
	// them (tools.DefaultShare) where several principals call
	// (Config.Shared), else all of them.
	MaxCallsPerPrincipal int `json:"max_calls_per_principal,omitempty" toml:"max_calls_per_principal,omitzero"`
	// MaxResponseBytes bounds each message the server sends (a tool's
	// result, a page of its tool list, a notification), read without
	// holding more than that; a call whose result is larger fails with
	// upstream_too_large. A message no call holds, other than a result
	// codecell counts itself (a notification, the answer to initialize,
	// an error), is bounded by what it decodes into too: its bytes and
	// 128 a JSON value. 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty" toml:"max_response_bytes,omitzero"`
	// MaxListBytes bounds each list the server sends — its tools,
	// prompts, resources and resource templates — all its pages
	// together, read without holding more than that; a server whose list
	// is larger is unavailable, and says so. 0 means DefaultMaxListBytes.
	MaxListBytes int64 `json:"max_list_bytes,omitempty" toml:"max_list_bytes,omitzero"`
	// Category is the namespace of the server's tools; empty means the
	// server's name, sanitised (CategoryFor).
	Category string `json:"category,omitempty" toml:"category,omitempty"`
	// Disabled keeps the server configured but not started.
	Disabled bool `json:"disabled,omitempty" toml:"disabled,omitempty"`
	// Unconfined starts a stdio server without the confinement codecell
	// gives its children (Config.Confine), for a server that needs what
	// it denies; see the Security page of the documentation.
	Unconfined bool `json:"unconfined,omitempty" toml:"unconfined,omitempty"`
	// TrustAnnotations lets the server's tool annotations decide what
	// only known read-only tools may do: pass --read-only and read-only
	// toolsets, run for real in a dry run, skip the approval of writes,
	// be memoised. Off by default: MCP's annotations are hints, and a
	// server may call a tool that writes readOnlyHint, so its tools
	// count as tools that may write and destroy, whatever they claim.
	TrustAnnotations bool `json:"trust_annotations,omitempty" toml:"trust_annotations,omitempty"`
}

// Defaults of the per-server settings.
const (
	DefaultCallTimeout        = 60 * time.Second
	DefaultMaxConcurrentCalls = 16
)

// Transport returns the transport the server is configured for, and
// whether it is an HTTP server whose transport is detected (Streamable
// HTTP first, then SSE). An invalid Type gives "".
func (s *Server) Transport() (t Transport, detect bool) {
	switch strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(s.Type, "-", ""), "_", "")) {
	case "":
		if s.Command != "" {
			return Stdio, false
		}
		if strings.HasSuffix(strings.TrimRight(s.URL, "/"), "/sse") {
			return SSE, false
		}
		return StreamableHTTP, true
	case "stdio":
		return Stdio, false
	case "http", "streamablehttp":
		return StreamableHTTP, false
	case "sse":
		return SSE, false
	}
	return "", false
}

// Problem is one thing wrong with a server's configuration: Field is the
// key within the server's entry ("" for the entry itself), Message says
// what is wrong and what to write instead.
type Problem struct {
	Field   string
	Message string
}

func (p Problem) Error() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check returns what is wrong with the server's configuration, each
// problem naming its field. It does not look up ${VAR} values: a variable
// that is unset makes the server unavailable when it starts, with the
// variable's name as the reason.
func (s *Server) Check() []Problem {
	var ps []Problem
	bad := func(field, format string, args ...any) {
		ps = append(ps, Problem{field, fmt.Sprintf(format, args...)})
	}
	t, _ := s.Transport()
	switch {
	case t == "":
		bad("type", "%q is not one of stdio, http (Streamable HTTP) or sse", s.Type)
	case s.Command == "" && s.URL == "":
		bad("", "needs a command (a server started over stdio) or a url (a server over HTTP)")
	case s.Command != "" && s.URL != "":
		bad("", "has both a command and a url; keep the command for a stdio server or the url for an HTTP one")
	case t == Stdio && s.Command == "":
		bad("command", "is empty; type stdio needs a command")
	case t != Stdio && s.URL == "":
		bad("url", "is empty; type %s needs a url", s.Type)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "%q is not an http:// or https:// URL", redactURL(s.URL))
		}
		if s.Cwd != "" {
			bad("cwd", "is for stdio servers; an HTTP server has no working directory here")
		}
		if len(s.Env) > 0 {
			bad("env", "is for stdio servers; send values to an HTTP server in headers")
		}
		if len(s.Args) > 0 {
			bad("args", "is for stdio servers")
		}
		if s.Unconfined {
			bad("unconfined", "is for stdio servers; codecell starts no process for an HTTP server")
		}
	}
	if s.Command != "" && len(s.Headers) > 0 {
		bad("headers", "are for HTTP servers; give a stdio server its secrets in env")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !envNameRE.MatchString(k) {
			bad("env."+k, "is not an environment variable name (letters, digits and _)")
		}
		if err := checkExpansion(s.Env[k]); err != nil {
			bad("env."+k, "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			bad("headers", "%q is not an HTTP header name", k)
		}
		if err := checkExpansion(s.Headers[k]); err != nil {
			bad("headers."+k, "%v", err)
		}
	}
	for i, a := range s.Args {
		if err := checkExpansion(a); err != nil {
			bad(fmt.Sprintf("args[%d]", i), "%v", err)
		}
	}
	for _, g := range []struct {
		field string
		globs []string
	}{{"allow", s.Allow}, {"deny", s.Deny}} {
		for i, p := range g.globs {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				bad(fmt.Sprintf("%s[%d]", g.field, i), "%q is not a glob such as read_* or *file*", p)
			}
		}
	}
	if s.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	if s.MaxCallsPerPrincipal < 0 {
		bad("max_calls_per_principal", "must not be negative (0 means all but a quarter of max_concurrent_calls)")
	}
	if s.MaxResponseBytes < 0 {
		bad("max_response_bytes", "must not be negative (0 means %d)", DefaultMaxResponseBytes)
	}
	if s.MaxListBytes < 0 {
		bad("max_list_bytes", "must not be negative (0 means %d)", DefaultMaxListBytes)
	}
	if s.MaxConcurrentCalls < 0 {
		bad("max_concurrent_calls", "must not be negative (0 means %d)", DefaultMaxConcurrentCalls)
	}
	if s.Category != "" && !tools.ValidCategory(s.Category) {
		bad("category", "%q is not a category name: lower-case letters, digits and _, starting with a letter", s.Category)
	}
	return ps
}

// CategoryFor returns the category of the server configured under name:
// its Category, else name in lower case with every run of characters
// other than letters and digits made one underscore ("GitHub Issues" →
// "github_issues"); a name that does not start with a letter gets "mcp_"
// in front. It returns "" when name has no letter or digit.
func CategoryFor(name string, s Server) string {
	if s.Category != "" {
		return s.Category
	}
	c := sanitize(name)
	if c == "" {
		return ""
	}
	if c[0] < 'a' || c[0] > 'z' {
		c = "mcp_" + c
	}
	if len(c) > 64 {
		c = strings.TrimRight(c[:64], "_")
	}
	return c
}

// sanitize lower-cases s and turns every run of other characters than
// letters and digits into one underscore, trimmed at both ends.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
			continue
		}
		under = true
	}
	return b.String()
}

// CheckAll checks every server and that no two share a category, and
// returns the problems by server name (the field "" meaning the entry).
func CheckAll(servers map[string]Server) map[string][]Problem {
	out := map[string][]Problem{}
	byCategory := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		ps := s.Check()
		c := CategoryFor(name, s)
		switch {
		case c == "":
			ps = append(ps, Problem{"category", fmt.Sprintf("the name %q gives no category (it has no letter or digit); set category", name)})
		case byCategory[c] != "":
			ps = append(ps, Problem{"category", fmt.Sprintf("%q is also the category of upstream %q; set category on one of them", c, byCategory[c])})
		default:
			byCategory[c] = name
		}
		if len(ps) > 0 {
			out[name] = ps
		}
	}
	return out
}

// File is a configuration file in Claude Desktop's format.
type File struct {
	MCPServers map[string]Server `json:"mcpServers"`
}

// ParseJSON reads a configuration in Claude Desktop's format:
// {"mcpServers": {"NAME": {...}, ...}}, other top-level keys being
// ignored. Unknown keys inside an entry are ignored too (hosts add their
// own, such as autoApprove); a value of the wrong type is an error that
// names its key, as mcpServers.NAME.args. It does not Check the servers.
func ParseJSON(data []byte) (map[string]Server, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError("", data, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, errors.New(`no "mcpServers" object; want {"mcpServers": {"name": {"command": ...}}}`)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, errors.New(`mcpServers: want an object of servers by name`)
	}
	out := make(map[string]Server, len(entries))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		var s Server
		if err := json.Unmarshal(entries[name], &s); err != nil {
			errs = append(errs, jsonError("mcpServers."+name, entries[name], err))
			continue
		}
		out[name] = s
	}
	return out, errors.Join(errs...)
}

// jsonError names the key of a JSON decoding error.
func jsonError(at string, data []byte, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		key := at
		if te.Field != "" {
			if key != "" {
				key += "."
			}
			key += te.Field + mapKeyOf(data, te.Field)
		}
		if key == "" {
			key = "(top level)"
		}
		return fmt.Errorf("%s: want %s, got a JSON %s", key, jsonKind(te.Type.String()), te.Value)
	case errors.As(err, &se):
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		if at != "" {
			return fmt.Errorf("%s: %v", at, err)
		}
		return fmt.Errorf("line %d: %v", line, err)
	}
	if at == "" {
		return err
	}
	return fmt.Errorf("%s: %v", at, err)
}

// mapKeyOf finds, for a type error inside the object field of data, the
// key whose value is not a string: ".KEY", or "".
func mapKeyOf(data []byte, field string) string {
	var entry map[string]json.RawMessage
	if json.Unmarshal(data, &entry) != nil {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(entry[field], &m) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if v := bytes.TrimSpace(m[k]); len(v) == 0 || v[0] != '"' {
			return "." + k
		}
	}
	return ""
}

func jsonKind(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return `an object of strings such as {"NAME": "value"}`
	case "int":
		return "a whole number"
	case "bool":
		return "true or false"
	case "upstream.Server":
		return "an object with command or url"
	}
	return goType
}

// redactURL drops what a URL may carry besides where it points: user
// information, query and fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}
