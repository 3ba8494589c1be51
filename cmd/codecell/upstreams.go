package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/tools/upstream"
)

// upstreamSection is the table of [upstream.NAME] tables.
const upstreamSection = "upstream"

// upstreamKeys maps the keys of an [upstream.NAME] table to the fields of
// upstream.Server.
func upstreamKeys() map[string]int {
	t := reflect.TypeOf(upstream.Server{})
	out := map[string]int{}
	for i := range t.NumField() {
		out[tomlName(t.Field(i))] = i
	}
	return out
}

// decodeUpstreams decodes the [upstream.NAME] tables into cfg.Upstream one
// key at a time, so that each problem names its key.
func decodeUpstreams(md toml.MetaData, servers map[string]toml.Primitive, cfg *Config, reported map[string]bool) []error {
	var errs []error
	keys := upstreamKeys()
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		at := toml.Key{upstreamSection, name}
		reported[at.String()] = true // what lies below is reported here
		if t := md.Type(at...); t != "Hash" {
			errs = append(errs, configError{at.String(), fmt.Sprintf("want a table ([upstream.%s] with command or url), got %s", at[1:], tomlType(t))})
			continue
		}
		var fields map[string]toml.Primitive
		if err := md.PrimitiveDecode(servers[name], &fields); err != nil {
			errs = append(errs, configError{at.String(), tomlError(err)})
			continue
		}
		var s upstream.Server
		sv := reflect.ValueOf(&s).Elem()
		for _, field := range slices.Sorted(maps.Keys(fields)) {
			kk := append(slices.Clone(at), field)
			j, ok := keys[field]
			if !ok {
				msg := "unknown key"
				if c := closestWord(field, names); c != "" {
					msg += "; did you mean " + c + "?"
				}
				errs = append(errs, configError{kk.String(), msg})
				continue
			}
			v := reflect.New(sv.Field(j).Type())
			if err := md.PrimitiveDecode(fields[field], v.Interface()); err != nil {
				errs = append(errs, configError{kk.String(), typeProblem(md, kk, v.Elem().Type(), err)})
				continue
			}
			sv.Field(j).Set(v.Elem())
		}
		if cfg.Upstream == nil {
			cfg.Upstream = map[string]upstream.Server{}
		}
		cfg.Upstream[name] = s
	}
	return errs
}

// upstreamSet is the upstream servers of a configuration, with where each
// was configured.
type upstreamSet struct {
	servers map[string]upstream.Server
	from    map[string]string // name → "[upstream.NAME]" or the file
	// skipped are entries of the mcp_config file that are codecell itself.
	skipped []string
	// plan is the category of every tool source, the servers' and the
	// OpenAPI sources' (categories.go); servers holds the categories of
	// those whose name was taken.
	plan categoryPlan
}

// upstreams returns the servers of the [upstream.NAME] tables and of the
// server.mcp_config file, leaving out the file's entries that start
// codecell itself, and every problem, each naming its key.
func (c *Config) upstreams() (upstreamSet, []error) {
	set := upstreamSet{servers: map[string]upstream.Server{}, from: map[string]string{}}
	for name, s := range c.Upstream {
		set.servers[name] = s
		set.from[name] = toml.Key{upstreamSection, name}.String()
	}
	var errs []error
	if path := c.Server.MCPConfig; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return set, []error{configError{"server.mcp_config", fmt.Sprintf("read %s: %v", path, errors.Unwrap(err))}}
		}
		file, err := upstream.ParseJSON(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
		for _, name := range slices.Sorted(maps.Keys(file)) {
			s := file[name]
			switch {
			case isCodecell(name, s):
				set.skipped = append(set.skipped, name)
			case set.from[name] != "":
				errs = append(errs, configError{set.from[name], fmt.Sprintf("%s has a server of the same name; keep one, or rename the table", path)})
			default:
				set.servers[name] = s
				set.from[name] = path + ": mcpServers." + name
			}
		}
	}
	plan, perrs := planCategories(set.servers, set.from, c.OpenAPI, catalogueCategories(c.Server.Catalog))
	set.plan = plan
	errs = append(errs, perrs...)
	probs := upstream.CheckAll(set.servers)
	for _, name := range slices.Sorted(maps.Keys(probs)) {
		for _, p := range probs[name] {
			key := set.from[name]
			if p.Field != "" {
				key += "." + p.Field
			}
			errs = append(errs, configError{key, p.Message})
		}
	}
	return set, errs
}

// checkUpstreams is the part of validate that concerns upstream servers.
func (c *Config) checkUpstreams() []error {
	_, errs := c.upstreams()
	return errs
}

// isCodecell reports whether an entry of a host's configuration starts
// codecell itself, which must not be its own upstream.
func isCodecell(name string, s upstream.Server) bool {
	if strings.EqualFold(name, "codecell") {
		return true
	}
	if s.Command == "" {
		return false
	}
	if strings.TrimSuffix(strings.ToLower(filepath.Base(s.Command)), ".exe") == "codecell" {
		return true
	}
	exe, err := os.Executable()
	return err == nil && filepath.Clean(s.Command) == exe
}

// envLookup is an upstream.Lookup over environ (NAME=value entries).
func envLookup(environ []string) upstream.Lookup {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// startUpstreams starts connecting to the configured upstream servers,
// whose tools join reg; it returns nil when there are none. Binary
// contents of their results are kept in the store.
func startUpstreams(cfg Config, reg *tools.Registry, store blobShapes, log *slog.Logger) (*upstream.Source, error) {
	set, errs := cfg.upstreams()
	if len(errs) > 0 {
		return nil, configProblem{errors.Join(errs...)}
	}
	for _, name := range set.skipped {
		log.Info("left out an upstream that is codecell itself", "upstream", name, "file", cfg.Server.MCPConfig)
	}
	for _, note := range set.plan.movedNotes(func(name string) string { return set.from[name] }) {
		log.Warn("a tool source is served under another category: " + note)
	}
	if len(set.servers) == 0 {
		return nil, nil
	}
	// What the servers say of themselves and their tools is marked as
	// theirs wherever the model reads it.
	for _, name := range slices.Sorted(maps.Keys(set.servers)) {
		if err := reg.SetCategorySource(upstream.CategoryFor(name, set.servers[name]), fmt.Sprintf("the MCP server %q", name)); err != nil {
			return nil, fmt.Errorf("upstream %s: %w", name, err)
		}
	}
	if names := sharedUpstreams(cfg, set.servers); len(names) > 0 {
		log.Warn("upstream servers are one for every principal: what a server keeps of its own (a memory server's graph, a browser's pages, a session it logged in) is the same for all of them; keep per-principal data in codecell's memory, or give such servers to one principal's deployment",
			"component", "upstream", "upstreams", strings.Join(names, ","))
	}
	var confine upstream.Confine
	for _, s := range set.servers {
		if t, _ := s.Transport(); t == upstream.Stdio && !s.Disabled && !s.Unconfined {
			confine = upstreamConfinement(cfg, set.servers, log)
			break
		}
	}
	src, err := upstream.Start(upstream.Config{
		Confine:     confine,
		Shared:      sharedByPrincipals(cfg),
		ShapeQuorum: shapeQuorum(cfg),
		Scrub:       scrubText,
		Servers:     set.servers,
		Registry:    reg,
		Lookup:      envLookup(os.Environ()),
		Blobs:       storeBlobs{store},
		Shapes:      store,
		Logger:      log,
		Version:     version,
	})
	if err != nil {
		return nil, fmt.Errorf("upstream servers: %w", err)
	}
	return src, nil
}

// sharedUpstreams names the enabled upstream servers that several
// principals call through one connection (attack9 D11), sorted; none on a
// server of one principal.
func sharedUpstreams(cfg Config, servers map[string]upstream.Server) []string {
	if !sharedByPrincipals(cfg) {
		return nil
	}
	var names []string
	for name, s := range servers {
		if !s.Disabled {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// sharedByPrincipals reports whether several principals may call the
// tool sources: HTTP with bearer tokens or OAuth. Over stdio, or HTTP
// without authentication, every caller is one principal.
func sharedByPrincipals(cfg Config) bool {
	return cfg.Server.HTTP != "" && (len(cfg.Auth.Tokens) > 0 || cfg.Auth.OAuth.enabled())
}

// shapeQuorum is how many principals' results must hold a property
// name before a learned result shape shows it (upstream.Config's
// ShapeQuorum): one on a server of one principal; else three, or every
// static principal when there are fewer (and no OAuth, whose principals
// are not known in advance). As search's learning from use.
func shapeQuorum(cfg Config) int {
	if !sharedByPrincipals(cfg) {
		return 1
	}
	const quorum = 3
	if cfg.Auth.OAuth.enabled() {
		return quorum
	}
	principals := map[string]bool{}
	for _, t := range cfg.Auth.Tokens {
		principals[t.Principal] = true
	}
	return max(1, min(quorum, len(principals)))
}

// scrubText replaces the sensitive values the filter's detectors find in
// text from an upstream server (its stderr, log notifications and error
// messages) with the filter's redaction markers.
func scrubText(s string) string {
	ms := filter.ScanString(s)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m.Start])
		b.WriteString(filter.RedactionMarker(m.Class))
		last = m.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// waitUpstreams waits up to d for every upstream server to be tried once,
// and logs those that are not ready.
func waitUpstreams(src *upstream.Source, d time.Duration, log *slog.Logger) {
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := src.Wait(ctx); err != nil {
		log.Info("serving before every upstream server is ready; their tools join when they are", "waited", d)
	}
	ready := 0
	for _, st := range src.Status() {
		if st.State == upstream.StateReady {
			ready++
		}
	}
	log.Info("upstream servers", "ready", ready, "configured", len(src.Status()))
}

// resultPutter keeps whole results.
type resultPutter interface {
	PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error)
}

// blobShapes is what the upstream source keeps in the store: binary
// contents and the shapes it learned of its tools' results.
type blobShapes interface {
	resultPutter
	upstream.Shapes
}

// storeBlobs keeps the binary contents of upstream results and OpenAPI
// responses as stored results, readable as codecell://results/{id}.
type storeBlobs struct{ s resultPutter }

func (b storeBlobs) PutBlob(ctx context.Context, mimeType string, data []byte) (string, error) {
	info, err := b.s.PutResult(ctx, memory.PutResultInput{ContentType: mimeType, Data: data})
	if err != nil {
		return "", err
	}
	return mcpserver.ResultsPrefix + info.ID, nil
}

// PutArtifact keeps an OpenAPI source's binary response the same way.
func (b storeBlobs) PutArtifact(ctx context.Context, mimeType string, data []byte) (string, error) {
	return b.PutBlob(ctx, mimeType, data)
}

var (
	_ upstream.Blobs    = storeBlobs{}
	_ openapi.Artifacts = storeBlobs{}
)

// hideUpstreamSecrets returns servers with the values of env and headers
// replaced, for printing.
func hideUpstreamSecrets(servers map[string]upstream.Server) map[string]upstream.Server {
	out := make(map[string]upstream.Server, len(servers))
	for name, s := range servers {
		hide := func(m map[string]string) map[string]string {
			if m == nil {
				return nil
			}
			h := make(map[string]string, len(m))
			for k := range m {
				h[k] = "(hidden)"
			}
			return h
		}
		s.Env, s.Headers = hide(s.Env), hide(s.Headers)
		out[name] = s
	}
	return out
}

// describeUpstreams is config check's note on the upstream servers: those
// of the mcp_config file, which the TOML below does not show, and the
// entries left out because they start codecell.
func describeUpstreams(cfg Config, set upstreamSet) string {
	var b strings.Builder
	var fromFile []string
	for _, name := range slices.Sorted(maps.Keys(set.servers)) {
		if _, inTOML := cfg.Upstream[name]; inTOML {
			continue
		}
		s := set.servers[name]
		t, _ := s.Transport()
		where := filepath.Base(s.Command)
		if t != upstream.Stdio {
			where = s.URL
			if i := strings.IndexAny(where, "?#"); i >= 0 {
				where = where[:i]
			}
		}
		fromFile = append(fromFile, fmt.Sprintf("%s (category %s, %s: %s)", name, upstream.CategoryFor(name, s), t, where))
	}
	if len(fromFile) > 0 {
		fmt.Fprintf(&b, "# Upstream servers from %s: %s.\n", cfg.Server.MCPConfig, strings.Join(fromFile, "; "))
	}
	if len(set.skipped) > 0 {
		fmt.Fprintf(&b, "# Left out of %s, as they start codecell itself: %s.\n", cfg.Server.MCPConfig, strings.Join(set.skipped, ", "))
	}
	for _, note := range set.plan.movedNotes(func(name string) string { return set.from[name] }) {
		fmt.Fprintf(&b, "# Note: %s.\n", note)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
