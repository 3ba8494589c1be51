package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/filter"
)

func runConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"config needs a subcommand: init, check or rotate-key"}
	}
	switch args[0] {
	case "init":
		return runConfigInit(args[1:], stdout, stderr)
	case "check":
		return runConfigCheck(args[1:], stdout, stderr)
	case "rotate-key":
		return runRotateKey(args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("unknown config subcommand %q; want init, check or rotate-key", args[0])}
}

// runConfigInit writes the commented default configuration to a file, or
// to stdout with "-".
func runConfigInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("config init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "overwrite an existing file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: codecell config init [-force] [FILE|-]\n\nWrite the commented default configuration (default %s).\n\nFlags:\n", defaultConfigPath())
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := defaultConfigPath()
	if fs.NArg() > 0 {
		path = fs.Arg(0)
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
		return fmt.Errorf("config init: %s exists; pass -force to overwrite it", path)
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
// environment and flags — and prints it, secrets hidden.
func runConfigCheck(args []string, stdout, stderr io.Writer) error {
	cfg, err := newConfigCommand("config check", "Usage: codecell config check [flags]\n\nValidate the configuration (file, then CODECELL_* environment, then flags) and print it.", stderr).parse(args)
	if err != nil {
		return err
	}
	for i := range cfg.Auth.Tokens {
		cfg.Auth.Tokens[i].Token = "(hidden)"
	}
	fmt.Fprintln(stdout, "# configuration is valid; in effect:")
	return toml.NewEncoder(stdout).Encode(cfg)
}

// runRotateKey replaces the filter's token key. Tokens issued under the old
// key stop resolving; sessions of a running server keep their vaults until
// it restarts.
func runRotateKey(args []string, stdout, stderr io.Writer) error {
	cfg, err := newConfigCommand("config rotate-key", "Usage: codecell config rotate-key [flags]\n\nReplace the key that derives the output filter's tokens (filter.key_file).\nRestart the server afterwards.", stderr).parse(args)
	if err != nil {
		return err
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
