package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/tools/upstream"
)

// claudeConfigPath is where Claude Desktop keeps its configuration on this
// system, or "" when there is no home directory.
func claudeConfigPath() string {
	switch runtime.GOOS {
	case "darwin":
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
		}
	case "windows":
		if d := os.Getenv("APPDATA"); d != "" {
			return filepath.Join(d, "Claude", "claude_desktop_config.json")
		}
	default:
		if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
			return filepath.Join(d, "Claude", "claude_desktop_config.json")
		}
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
		}
	}
	return ""
}

// runImportClaude reads an MCP host's configuration (Claude Desktop's
// format) and adds its servers to codecell's as [upstream.NAME] tables,
// leaving out the entries that start codecell itself.
func runImportClaude(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("config import-claude", flag.ContinueOnError)
	fset.SetOutput(stderr)
	out := fset.String("out", defaultConfigPath(), "codecell's configuration file to add the servers to (created if missing), or - for stdout")
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "Usage: codecell config import-claude [--out FILE|-] [PATH]\n\n"+
			"Read the MCP servers of an MCP host's configuration in Claude Desktop's format\n"+
			"(default %s) and add them to codecell's configuration as [upstream.NAME] tables,\n"+
			"leaving out codecell's own entry. Servers already in the file are left as they are.\n"+
			"Then point the host at codecell alone: it serves all their tools.\n\nFlags:\n", claudeConfigPath())
		printFlags(fset.Output(), fset, map[string]string{"out": "FILE"})
	}
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	src := claudeConfigPath()
	switch fset.NArg() {
	case 0:
		if src == "" {
			return usageError{"no home directory: name the file, as in codecell config import-claude ./claude_desktop_config.json"}
		}
	case 1:
		src = fset.Arg(0)
	default:
		return usageError{fmt.Sprintf("config import-claude takes one file, got %q", fset.Args())}
	}
	data, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("config import-claude: no file at %s; name the host's configuration file", src)
	}
	if err != nil {
		return fmt.Errorf("config import-claude: %w", err)
	}
	servers, err := upstream.ParseJSON(data)
	if err != nil {
		return fmt.Errorf("config import-claude: %s: %w", src, err)
	}
	var skipped []string
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if isCodecell(name, servers[name]) {
			skipped = append(skipped, name)
			delete(servers, name)
		}
	}
	if probs := upstream.CheckAll(servers); len(probs) > 0 {
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(probs)) {
			for _, p := range probs[name] {
				key := "mcpServers." + name
				if p.Field != "" {
					key += "." + p.Field
				}
				errs = append(errs, configError{src + ": " + key, p.Message})
			}
		}
		return configProblem{errors.Join(errs...)}
	}

	var existing []string
	var prefix string
	var cfg Config
	if *out != "-" {
		if *out == "" {
			return usageError{"no home directory: name codecell's configuration file with --out"}
		}
		cur, err := os.ReadFile(*out)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			prefix = defaultConfigFile // a new file starts as config init's
		case err != nil:
			return fmt.Errorf("config import-claude: %w", err)
		default:
			if errs := decodeFile(*out, &cfg); len(errs) > 0 {
				return fmt.Errorf("config import-claude: fix %s first (codecell config check --config %s): %w", *out, *out, errors.Join(errs...))
			}
			existing = slices.Sorted(maps.Keys(cfg.Upstream))
			for _, name := range existing {
				delete(servers, name)
			}
			if len(cur) > 0 && !bytes.HasSuffix(cur, []byte("\n")) {
				prefix = "\n"
			}
		}
	}
	// A name taken by codecell or another source gets another category,
	// written in its table so that the file says it (categories.go).
	all, from := maps.Clone(servers), map[string]string{}
	for name := range servers {
		from[name] = src + ": mcpServers." + name
	}
	for name, s := range cfg.Upstream {
		all[name], from[name] = s, toml.Key{upstreamSection, name}.String()
	}
	plan, errs := planCategories(all, from, cfg.OpenAPI, catalogueCategories(cfg.Server.Catalog))
	if len(errs) > 0 {
		return configProblem{errors.Join(errs...)}
	}
	var moved []string
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		servers[name] = all[name]
		if pl := plan.upstream[name]; pl.wanted != "" {
			moved = append(moved, fmt.Sprintf("%s is served as the category %s: %s (its table says category = %q; change it to choose another)", name, pl.category, pl.why, pl.category))
		}
	}
	text, err := upstreamTables(servers, src)
	if err != nil {
		return fmt.Errorf("config import-claude: %w", err)
	}
	if *out == "-" {
		for _, m := range moved {
			text = "# " + m + "\n" + text
		}
		_, err := io.WriteString(stdout, text)
		return err
	}
	if len(servers) > 0 {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return fmt.Errorf("config import-claude: %w", err)
		}
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("config import-claude: %w", err)
		}
		_, werr := io.WriteString(f, prefix+text)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("config import-claude: %w", err)
		}
	}
	var lines []string
	if names := slices.Sorted(maps.Keys(servers)); len(names) > 0 {
		lines = append(lines, fmt.Sprintf("added %s to %s", strings.Join(names, ", "), *out))
	} else {
		lines = append(lines, fmt.Sprintf("nothing to add to %s", *out))
	}
	if len(existing) > 0 {
		lines = append(lines, fmt.Sprintf("already there, left as they are: %s", strings.Join(existing, ", ")))
	}
	if len(skipped) > 0 {
		lines = append(lines, fmt.Sprintf("left out, as they start codecell itself: %s", strings.Join(skipped, ", ")))
	}
	lines = append(lines, moved...)
	lines = append(lines, fmt.Sprintf("check it with: codecell config check --config %s", *out))
	fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return nil
}

// upstreamTables writes servers as [upstream.NAME] tables, with a comment
// that says where they came from.
func upstreamTables(servers map[string]upstream.Server, from string) (string, error) {
	if len(servers) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n# MCP servers imported from %s by codecell config import-claude.\n", from)
	if hasInlineSecrets(servers) {
		b.WriteString("# Their env and headers hold values that may be secrets: keep this file private,\n" +
			"# or write them as ${VAR} and set VAR in codecell's environment.\n")
	}
	var tables strings.Builder
	enc := toml.NewEncoder(&tables)
	enc.Indent = ""
	if err := enc.Encode(map[string]map[string]upstream.Server{upstreamSection: servers}); err != nil {
		return "", err
	}
	// A blank line before each server's table, for the eye.
	b.WriteString(strings.ReplaceAll(tables.String(), "\n[upstream.", "\n\n[upstream."))
	return b.String(), nil
}

// hasInlineSecrets reports whether a server's env or headers hold a value
// written out rather than taken from a variable.
func hasInlineSecrets(servers map[string]upstream.Server) bool {
	for _, s := range servers {
		for _, m := range []map[string]string{s.Env, s.Headers} {
			for _, v := range m {
				if !strings.Contains(v, "${") {
					return true
				}
			}
		}
	}
	return false
}
