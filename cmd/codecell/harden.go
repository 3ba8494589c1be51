package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/tools/upstream"
)

// Process hardening: what keeps codecell's secrets (its auth tokens and
// keys, which arrive in its environment, and its data and configuration
// files) from the processes of its own user, above all the upstream
// servers it starts.
//
//   - hardenProcess, at the start of serve and exec, makes the process
//     non-dumpable (other processes of the user can no longer open its
//     /proc/<pid>/environ, mem or fd/*) and blanks the values of its
//     environment in the block the kernel shows as /proc/<pid>/environ,
//     which Go has copied at start-up and never reads again.
//   - upstreamConfinement starts every stdio upstream server through a
//     shim, this binary's hidden upstream-exec command, which sets
//     no_new_privs and a Landlock domain that denies codecell's data and
//     configuration, then executes the server's command. A process in a
//     Landlock domain cannot ptrace, read the memory or environment of,
//     or signal a process outside it, whatever its capabilities.

// confineCommandName is the hidden command that confines a stdio upstream
// server and executes it. Users never type it.
const confineCommandName = "upstream-exec"

// landlockNetABI is the Landlock ABI that controls TCP connections
// (Linux 6.7).
const landlockNetABI = 4

// confineSpec is what the shim is told: the paths to deny, the paths the
// server was configured with, which it keeps, and the TCP ports it may
// not connect to (codecell's own listeners).
type confineSpec struct {
	Protect     []string `json:"protect"`
	Allow       []string `json:"allow,omitempty"`
	DenyConnect []int    `json:"deny_connect,omitempty"`
	DenyBind    []int    `json:"deny_bind,omitempty"`
}

// loopbackPorts are the TCP ports of the loopback URLs codecell sends
// requests to, with their credentials and data: its HTTP upstream
// servers', its APIs' (documents and base URLs), its model provider's and
// embedder's, its OAuth server's, its trace exporter's and its HTTP
// proxies' (HTTP_PROXY, HTTPS_PROXY); and the
// loopback ports of its PostgreSQL store (pgPorts). A confined server may
// not bind them: while the service behind one is down, it would take what
// codecell sends (attack27 T8: an HTTP upstream's bearer token; attack29
// T3: the store's password).
// boundPorts are the ports a confined server may not listen on: the
// loopback services codecell sends requests to (loopbackPorts), and
// codecell's own listeners — a server's process that outlives codecell
// (setsid escapes its process group) would take the port once codecell
// stops and get the tokens of the clients that reconnect (attack29 T6).
func boundPorts(cfg Config, servers map[string]upstream.Server) []int {
	ports := append(loopbackPorts(cfg, servers), cfg.listening...)
	slices.Sort(ports)
	return slices.Compact(ports)
}

func loopbackPorts(cfg Config, servers map[string]upstream.Server) []int {
	urls := []string{cfg.LLM.ProviderURL, cfg.Memory.EmbedderURL, cfg.Auth.OAuth.Issuer, cfg.Auth.OAuth.JWKSURL, cfg.Auth.OAuth.IntrospectionURL,
		os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")}
	// The proxies its HTTP clients (http.DefaultTransport's) send
	// requests through, an http:// request whole with its headers.
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" && !strings.Contains(v, "://") {
			urls = append(urls, "http://"+v) // as the transport reads it
		} else {
			urls = append(urls, v)
		}
	}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")), "otlp") {
		urls = append(urls, "http://localhost:4318") // the exporter's default
	}
	urls = append(urls, cfg.Auth.OAuth.Issuers...)
	for _, s := range servers {
		urls = append(urls, s.URL)
	}
	for _, o := range cfg.OpenAPI {
		urls = append(urls, o.Spec, o.BaseURL)
	}
	var ports []int
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host == "" || !loopbackHost(u.Hostname()) {
			continue
		}
		port, err := strconv.Atoi(u.Port())
		switch {
		case u.Port() == "" && (u.Scheme == "https" || u.Scheme == "wss"):
			port = 443
		case u.Port() == "" && u.Scheme == "socks5":
			port = 1080
		case u.Port() == "":
			port = 80
		case err != nil || port < 1 || port > 65535:
			continue
		}
		ports = append(ports, port)
	}
	ports = append(ports, pgPorts(cfg.Memory)...)
	slices.Sort(ports)
	return slices.Compact(ports)
}

// pgPorts are the ports of memory.dsn's loopback hosts, the first and
// every fallback (a multi-host DSN, in URL or keyword form), as the
// store's pool parses it; a Unix socket's host has none. With the sqlite
// backend, or a DSN that does not parse (which the configuration
// refuses), there are none.
func pgPorts(m MemoryConfig) []int {
	if m.Backend != backendPostgres || m.DSN == "" {
		return nil
	}
	pc, err := pgx.ParseConfig(m.DSN)
	if err != nil {
		return nil
	}
	var ports []int
	add := func(host string, port uint16) {
		if !strings.HasPrefix(host, "/") && loopbackHost(host) {
			ports = append(ports, int(port))
		}
	}
	add(pc.Host, pc.Port)
	for _, f := range pc.Fallbacks {
		add(f.Host, f.Port)
	}
	return ports
}

// loopbackHost reports whether host names this machine: localhost (and
// its subdomains), a loopback address, or the unspecified one.
func loopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// protectedPaths are what codecell reads at its start and keeps from its
// servers: the data directory (the store, the filter key, stored results)
// and the default ones (that of XDG_DATA_HOME and ~/.local/share/codecell,
// where a start from another environment keeps its store and key),
// the filter key and the store wherever they are configured, the
// configuration file, the default configuration directories (that of
// XDG_CONFIG_HOME and ~/.config/codecell, read at a start given no file),
// the MCP configuration file, which carries the other servers' tokens, the
// OpenAPI documents read from files and the catalogue; and codecell's own
// executable, which it runs outside the confinement. They are returned
// absolute, their symbolic links resolved, sorted and without one below
// another, with every symbolic link on the way to them. A path that does
// not exist yet is returned as the entry that would lead to it in its
// nearest existing ancestor (protectable), so that nothing can create it:
// a server that made ~/.config/codecell/config.toml had codecell run what
// it wrote at the next start (attack27 T2).
func protectedPaths(cfg Config) []string {
	var ps []string
	if dir, err := cfg.dataDir(); err == nil {
		ps = append(ps, dir)
	}
	// The default data directories whatever server.data_dir: another
	// start's store and filter key, which a server could read or plant
	// (attack29 T1), as for the configuration directories below.
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		ps = append(ps, filepath.Join(d, "codecell"))
	}
	if p, err := keyPath(cfg); err == nil {
		ps = append(ps, p)
	}
	if p := cfg.Memory.Path; p != "" {
		ps = append(ps, p, p+"-wal", p+"-shm", p+"-journal")
	}
	if p := defaultConfigPath(); p != "" {
		ps = append(ps, filepath.Dir(p))
	}
	if home, err := os.UserHomeDir(); err == nil {
		// The default when XDG_CONFIG_HOME is not set, as at a start
		// from another environment.
		ps = append(ps, filepath.Join(home, ".config", "codecell"), filepath.Join(home, ".local", "share", "codecell"))
	}
	ps = append(ps, cfg.file, cfg.Server.MCPConfig, cfg.Server.Catalog)
	for _, name := range slices.Sorted(maps.Keys(cfg.OpenAPI)) {
		if spec := cfg.OpenAPI[name].Spec; !strings.Contains(spec, "://") {
			ps = append(ps, spec)
		}
	}
	// This binary, which codecell executes unconfined (through
	// /proc/self/exe, see selfExe): denying it denies creating or
	// removing entries of its directory too, so that nothing can be
	// renamed over it.
	if exe, err := os.Executable(); err == nil {
		ps = append(ps, exe)
	}
	var out []string
	for _, p := range ps {
		if p == "" {
			continue
		}
		r, err := protectable(p)
		if err != nil {
			continue
		}
		out = append(out, r...)
	}
	return outermost(out)
}

// protectable returns what denies p to a server: p with its symbolic
// links resolved, or, for a path that does not exist, the entry of its
// nearest existing ancestor that would lead to it (denying it denies
// creating it, since the confinement grants no new entry in a protected
// path's ancestors; a dangling link is followed to where the path would
// be made); and every symbolic link on the way, as it is, so that the
// server can replace none of them with a path of its own (attack27 T4: a
// server moved the link ~/.config/codecell aside and made a directory in
// its place).
func protectable(p string) ([]string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	var out []string
	dir, rest := "/", strings.Split(p, "/")
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			dir = filepath.Dir(dir)
			continue
		}
		next := filepath.Join(dir, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return append(out, next), nil
		}
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			dir = next
			continue
		}
		if links++; links > 40 { // the kernel's limit
			return nil, fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil, err
		}
		out = append(out, next)
		if filepath.IsAbs(target) {
			dir = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return append(out, dir), nil
}

// resolvePath returns p absolute (relative to dir when it is not "") with
// its symbolic links resolved; a path that does not exist is an error.
func resolvePath(p, dir string) (string, error) {
	if !filepath.IsAbs(p) {
		if dir == "" {
			var err error
			if dir, err = os.Getwd(); err != nil {
				return "", err
			}
		}
		p = filepath.Join(dir, p)
	}
	return filepath.EvalSymlinks(p)
}

// outermost sorts paths and drops those below another.
func outermost(paths []string) []string {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 && within(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// configuredPaths are the files and directories a server's configuration
// names: its arguments (and the values of --flag=value arguments), the
// values of its env and its working directory, when they are absolute or
// start with "."; for a path that does not exist yet (a file the server
// will create), the directory that would hold it. The confinement leaves
// them to it.
func configuredPaths(l upstream.Launch) []string {
	var cands []string
	for _, a := range l.Args {
		cands = append(cands, a)
		if _, v, ok := strings.Cut(a, "="); ok {
			cands = append(cands, v)
		}
	}
	for _, kv := range l.ConfigEnv {
		if _, v, ok := strings.Cut(kv, "="); ok {
			cands = append(cands, v)
		}
	}
	if l.Dir != "" {
		cands = append(cands, l.Dir)
	}
	var out []string
	for _, c := range cands {
		if c == "" || strings.ContainsRune(c, 0) || (!filepath.IsAbs(c) && !strings.HasPrefix(c, ".")) {
			continue // not a path; a bare word is a package name or a value more often than a file
		}
		r, err := resolvePath(c, l.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			// A file the server will create: the directory it goes in.
			if !filepath.IsAbs(c) && l.Dir != "" {
				c = filepath.Join(l.Dir, c)
			}
			r, err = resolvePath(filepath.Dir(c), l.Dir)
		}
		if err == nil {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// upstreamConfinement returns the upstream.Confine that starts stdio
// servers through the shim, or nil, with a log line saying why, where
// they cannot be confined.
func upstreamConfinement(cfg Config, servers map[string]upstream.Server, log *slog.Logger) upstream.Confine {
	abi, why := landlockABI()
	if abi < 1 {
		log.Warn("stdio upstream servers run unconfined: "+why+"; they can read codecell's data directory and configuration", "component", "upstream")
		return nil
	}
	exe, err := selfExe()
	if err != nil {
		log.Warn("stdio upstream servers run unconfined: the path of this binary is unknown, so it cannot start them through its shim", "component", "upstream", "err", err)
		return nil
	}
	protect := protectedPaths(cfg)
	bind := boundPorts(cfg, servers)
	log.Info("stdio upstream servers run confined", "component", "upstream", "landlock_abi", abi, "protected", len(protect), "deny_connect", cfg.listening, "deny_bind", bind)
	if len(cfg.listening) > 0 && abi < landlockNetABI {
		msg := fmt.Sprintf("stdio upstream servers can connect to codecell's own HTTP listener: this kernel's Landlock (ABI %d) cannot deny TCP connections (ABI 4, Linux 6.7, can)", abi)
		if len(cfg.Auth.Tokens) == 0 && !cfg.Auth.OAuth.enabled() {
			msg += "; without tokens it serves them as you (your memories, workspace and other servers' tools): configure [[auth.tokens]], or serve over stdio"
		}
		log.Warn(msg, "component", "upstream", "ports", cfg.listening)
	}
	if len(bind) > 0 && abi < landlockNetABI {
		log.Warn(fmt.Sprintf("stdio upstream servers can listen on the loopback ports codecell sends requests to, and take what it sends there while the service is down: this kernel's Landlock (ABI %d) cannot deny binding them (ABI 4, Linux 6.7, can)", abi),
			"component", "upstream", "ports", bind)
	}
	var mu sync.Mutex
	warned := map[string]bool{}
	return func(l upstream.Launch) (upstream.Launch, error) {
		spec := confineSpec{Protect: protect, Allow: configuredPaths(l), DenyConnect: cfg.listening, DenyBind: bind}
		for _, a := range spec.Allow {
			for _, p := range protect {
				if !within(a, p) && !within(p, a) {
					continue
				}
				mu.Lock()
				first := !warned[l.Name+"\x00"+a]
				warned[l.Name+"\x00"+a] = true
				mu.Unlock()
				if first {
					log.Warn("an upstream server's configuration gives it a path that holds codecell's data or configuration, which it can therefore read; give it a narrower one, or move codecell's data (server.data_dir)",
						"component", "upstream", "upstream", l.Name, "path", a, "protected", p)
				}
			}
		}
		b, err := json.Marshal(spec)
		if err != nil {
			return l, err
		}
		args := append([]string{confineCommandName, string(b), "--", l.Path}, l.Args...)
		return upstream.Launch{Name: l.Name, Path: exe, Args: args, Dir: l.Dir, Env: l.Env}, nil
	}
}

// runConfine is the upstream-exec command: codecell upstream-exec SPEC --
// PATH ARGS... confines this process as SPEC says and executes PATH. It
// fails, without starting PATH, when it cannot confine.
func runConfine(args []string, stderr io.Writer) error {
	if len(args) < 3 || args[1] != "--" {
		return usageError{confineCommandName + " is started by codecell for its upstream servers"}
	}
	var spec confineSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("%s: %w", confineCommandName, err)
	}
	err := confineAndExec(spec, args[2], args[3:])
	// Only a failure returns.
	fmt.Fprintf(stderr, "codecell %s: %v\n", confineCommandName, err)
	return errors.Join(errExitQuiet, err)
}

// log says what hardenProcess did.
func (h hardening) log(log *slog.Logger) {
	if h.err != nil {
		log.Warn("process hardening incomplete", "non_dumpable", h.nonDumpable, "environment_values_blanked", h.blanked, "err", h.err)
		return
	}
	log.Debug("process hardened", "non_dumpable", h.nonDumpable, "environment_values_blanked", h.blanked)
}
