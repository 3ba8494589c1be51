package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/filter"
)

const configUsage = `Usage: codecell config <command> [flags]

Write, check and maintain the configuration.

Commands:
  init [--force] [FILE|-]  write the commented default configuration
  check [flags]            validate the configuration in effect and print it
  rotate-key [flags]       replace the key that derives the filter's tokens
  import-claude [PATH]     add the MCP servers of Claude Desktop's configuration

Run "codecell config <command> --help" for the flags of a command.
`

func runConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"config needs a command: init, check, rotate-key or import-claude (codecell config --help says what each does)"}
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		return helpRequested{configUsage}
	case "init":
		return runConfigInit(args[1:], stdout, stderr)
	case "check":
		return runConfigCheck(args[1:], stdout, stderr)
	case "rotate-key":
		return runRotateKey(args[1:], stdout, stderr)
	case "import-claude":
		return runImportClaude(args[1:], stdout, stderr)
	}
	msg := fmt.Sprintf("unknown config command %q", args[0])
	if s := closestWord(args[0], []string{"init", "check", "rotate-key", "import-claude"}); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return usageError{msg + " (want init, check, rotate-key or import-claude)"}
}

// runConfigInit writes the commented default configuration to a file, or
// to stdout with "-".
func runConfigInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("config init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "overwrite an existing file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: codecell config init [--force] [FILE|-]\n\nWrite the commented default configuration to FILE (default %s), or to stdout with -.\n\nFlags:\n", defaultConfigPath())
		printFlags(fs.Output(), fs, nil)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := defaultConfigPath()
	switch fs.NArg() {
	case 0:
	case 1:
		path = fs.Arg(0)
	default:
		return usageError{fmt.Sprintf("config init takes one file, got %q", fs.Args())}
	}
	if path == "-" {
		_, err := io.WriteString(stdout, defaultConfigFile)
		return err
	}
	if path == "" {
		return usageError{"no home directory: name the file, as in codecell config init ./codecell.toml"}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("config init: %s exists; pass --force to overwrite it", path)
	}
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	if _, err := io.WriteString(f, defaultConfigFile); err != nil {
		f.Close()
		return fmt.Errorf("config init: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	return nil
}

// runConfigCheck validates the configuration the server would use — file,
// environment and flags — and prints it, secrets hidden and paths resolved,
// after a header that says what contributed. An unknown CODECELL_*
// variable is an error here (serve only warns).
func runConfigCheck(args []string, stdout, stderr io.Writer) error {
	fs := newConfigCommand("config check", "Usage: codecell config check [flags]\n\nValidate the configuration (file, then CODECELL_* environment, then flags), say where it came from, and print it.", stderr)
	fs.strict = true
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("config check takes no arguments, got %q; to check a file, pass --config FILE", fs.Args())}
	}
	if err := resolvePaths(&cfg); err != nil {
		return err
	}
	for i := range cfg.Auth.Tokens {
		cfg.Auth.Tokens[i].Token = "(hidden)"
	}
	set, _ := cfg.upstreams() // valid: parse checked it
	cfg.Upstream = hideUpstreamSecrets(cfg.Upstream)
	cfg.Memory.DSN = hideDSNPassword(cfg.Memory.DSN)
	fmt.Fprint(stdout, describeProvenance(fs.loaded))
	fmt.Fprint(stdout, describeUpstreams(cfg, set))
	if ws := openAPIWarnings(cfg, os.Getenv); len(ws) > 0 {
		for _, w := range ws {
			fmt.Fprintf(stdout, "# Warning: %s.\n", w)
		}
		fmt.Fprintln(stdout)
	}
	return toml.NewEncoder(stdout).Encode(cfg)
}

// resolvePaths replaces the empty paths of cfg by those the server uses,
// made absolute: the data directory, the database and the filter key.
func resolvePaths(cfg *Config) error {
	dir, err := cfg.dataDir()
	if err != nil {
		return err
	}
	cfg.Server.DataDir = dir
	if cfg.Memory.Path, err = storePath(*cfg); err != nil {
		return err
	}
	if cfg.Filter.KeyFile, err = keyPath(*cfg); err != nil {
		return err
	}
	for _, p := range []*string{&cfg.Server.DataDir, &cfg.Memory.Path, &cfg.Filter.KeyFile, &cfg.Server.Catalog, &cfg.Server.MCPConfig} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	return nil
}

// describeProvenance is config check's header, TOML comments that say
// which file, environment variables and flags made the configuration.
func describeProvenance(pv provenance) string {
	var b strings.Builder
	b.WriteString("# The configuration is valid. It comes from:\n")
	switch {
	case pv.file != "":
		abs, err := filepath.Abs(pv.file)
		if err != nil {
			abs = pv.file
		}
		fmt.Fprintf(&b, "#   file         %s (from %s)\n", abs, pv.fileFrom)
	case pv.searched != "":
		fmt.Fprintf(&b, "#   file         none: no --config, %sCONFIG unset, no file at %s\n", envPrefix, pv.searched)
	default:
		fmt.Fprintf(&b, "#   file         none: no --config, %sCONFIG unset, no home directory\n", envPrefix)
	}
	list := func(what string, items []string) {
		if len(items) == 0 {
			fmt.Fprintf(&b, "#   %-12s none\n", what)
			return
		}
		fmt.Fprintf(&b, "#   %-12s %s\n", what, strings.Join(items, ", "))
	}
	list("environment", pv.env)
	var flags []string
	for _, k := range pv.flags {
		if name := flagName(k); name != "" {
			flags = append(flags, "--"+name)
		}
	}
	sort.Strings(flags)
	list("flags", flags)
	if pv.file == "" && len(pv.env) == 0 && len(flags) == 0 {
		b.WriteString("# Built-in defaults apply to every key.\n")
	} else {
		b.WriteString("# Built-in defaults apply to every other key.\n")
	}
	b.WriteString("# Empty paths are shown as the paths they resolve to.\n\n")
	return b.String()
}

// runRotateKey replaces the filter's token key. Tokens issued under the old
// key stop resolving; sessions of a running server keep their vaults until
// it restarts.
func runRotateKey(args []string, stdout, stderr io.Writer) error {
	fs := newConfigCommand("config rotate-key", "Usage: codecell config rotate-key [flags]\n\nReplace the key that derives the output filter's tokens (filter.key_file).\nRestart the server afterwards.", stderr)
	cfg, err := fs.parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("config rotate-key takes no arguments, got %q; name the key with --config FILE and filter.key_file, or --data-dir", fs.Args())}
	}
	path, err := keyPath(cfg)
	if err != nil {
		return err
	}
	key, err := filter.RotateKey(path)
	if err != nil {
		return fmt.Errorf("rotate key: %w", err)
	}
	fmt.Fprintf(stdout, "new key %s in %s; restart the server to use it\n", key.ID(), path)
	return nil
}
