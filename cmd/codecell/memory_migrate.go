package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory/storecopy"
)

const memoryMigrateUsage = `Usage: codecell memory migrate --to postgres [--dsn DSN] [--from FILE] [--force|--append|--verify]

Copy a SQLite store into a PostgreSQL database, every table in one
transaction, and verify the copy: the rows of each table are counted and
checksummed (SHA-256 over a canonical form of each row) on both sides and
compared; the copy commits only when they are equal. Tables the PostgreSQL
schema does not have are listed as skipped, and the verdict then says that
the copy is not a full one.

The source is --from, else the configured SQLite store (memory.path, or
codecell.db in the data directory). The target is --dsn, else memory.dsn
(CODECELL_MEMORY_DSN) when memory.backend is postgres. Configure the same
embedder as the source's: its vectors are copied, not recomputed.

A target that holds data is refused unless:
  --force    empties the target's tables first (restart the instances on it
             afterwards: they hold the codes of the memories it had)
  --append   adds the rows it lacks, by primary key; rows it has are kept.
             Running it again adds nothing.
  --verify   copies nothing: compares the target with the source, to check
             an earlier copy
Exit status 1 when the copy does not verify.
`

// runMemoryMigrate is codecell memory migrate.
func runMemoryMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newConfigCommand("memory migrate", strings.TrimSuffix(memoryMigrateUsage, "\n"), stderr)
	to := fs.String("to", "", "the backend to copy into: postgres")
	dsn := fs.String("dsn", "", "the PostgreSQL database (postgres://user@host/db); default memory.dsn")
	from := fs.String("from", "", "the SQLite store to copy; default the configured one")
	force := fs.Bool("force", false, "empty the target's tables first")
	appendRows := fs.Bool("append", false, "add the rows the target lacks; keep those it has")
	verify := fs.Bool("verify", false, "copy nothing; compare the target with the source")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	askedHelp := slices.ContainsFunc(args, isHelp)
	if askedHelp {
		fs.SetOutput(stdout)
	}
	cfg, err := fs.parse(args)
	if errors.Is(err, flag.ErrHelp) && askedHelp {
		return nil
	}
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("memory migrate takes no arguments, got %q", fs.Args())}
	}
	if *to != backendPostgres {
		return usageError{"memory migrate needs --to postgres: the only backend it copies into"}
	}
	opts := storecopy.CopyOptions{Mode: storecopy.CopyIntoEmpty}
	set := 0
	for _, m := range []struct {
		on   bool
		mode storecopy.CopyMode
	}{{*force, storecopy.CopyForce}, {*appendRows, storecopy.CopyAppend}, {*verify, storecopy.CopyVerify}} {
		if m.on {
			opts.Mode = m.mode
			set++
		}
	}
	if set > 1 {
		return usageError{"memory migrate: --force, --append and --verify exclude each other"}
	}
	target := *dsn
	if target == "" && backendOf(cfg) == backendPostgres {
		target = cfg.Memory.DSN
	}
	if target == "" {
		return usageError{"memory migrate needs --dsn, or memory.backend = \"postgres\" with memory.dsn (CODECELL_MEMORY_DSN)"}
	}
	if _, err := pgx.ParseConfig(target); err != nil {
		// Not the DSN itself: it may hold a password.
		return usageError{"memory migrate: --dsn is not a PostgreSQL connection string (postgres://user@host/db or key=value pairs)"}
	}
	source := *from
	if source == "" {
		if source, err = storePath(cfg); err != nil {
			return err
		}
	}
	log := newLogger(cfg, stderr)
	pcfg := cfg
	pcfg.Memory.Backend, pcfg.Memory.DSN, pcfg.Memory.Path = backendPostgres, target, ""
	dst, err := openPostgres(ctx, pcfg, log, false)
	if err != nil {
		return err
	}
	defer dst.Close()
	rep, err := storecopy.CopyFromSQLite(ctx, dst, source, opts)
	if len(rep.Tables) > 0 {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "memory migrate (%s): %s to PostgreSQL\n", rep.Mode, source)
			if err := rep.WriteTable(stdout); err != nil {
				return err
			}
		}
	}
	if errors.Is(err, storecopy.ErrCopyMismatch) {
		return fmt.Errorf("memory migrate: %w", err)
	}
	if errors.Is(err, storecopy.ErrTargetNotEmpty) {
		return fmt.Errorf("memory migrate: %w; or --verify to compare it with the source", err)
	}
	if err != nil {
		return fmt.Errorf("memory migrate: %w", err)
	}
	return nil
}
