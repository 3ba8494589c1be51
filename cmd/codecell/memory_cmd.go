package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

const memoryUsage = `Usage: codecell memory <command> [flags]

Inspect and back up what agents stored.

Commands:
  stats                 counts and sizes of the whole store
  search [flags] QUERY  hybrid search of one principal's memories
  export [FILE|-]       write everything as JSONL (default stdout)
  import FILE|-         read a JSONL export (memories are re-embedded); what the
                        store already holds is skipped, so importing twice is safe
  reindex               rebuild every vector with the configured embedder
  reset-learning        forget what tool search learned from use (the query
                        words linked to the tools runs called after them)
  migrate --to postgres copy the SQLite store into PostgreSQL, verified
                        (codecell memory migrate --help)

stats, search and export only read: they open the store read-only and fail
when there is none.
`

// readOnlyMemoryCommands are the memory commands that only read the store.
var readOnlyMemoryCommands = map[string]bool{"stats": true, "search": true, "export": true}

func runMemory(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, memoryUsage)
		return usageError{"memory needs a command: stats, search, export, import, reindex or migrate"}
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, memoryUsage)
		return nil
	}
	sub, rest := args[0], args[1:]
	if sub == "migrate" {
		return runMemoryMigrate(ctx, rest, stdout, stderr)
	}
	switch sub {
	case "stats", "search", "export", "import", "reindex", "reset-learning":
	default:
		fmt.Fprint(stderr, memoryUsage)
		return usageError{fmt.Sprintf("unknown memory command %q; want stats, search, export, import, reindex, reset-learning or migrate", sub)}
	}
	fs := newConfigCommand("memory "+sub, strings.TrimSuffix(memoryUsage, "\n"), stderr)
	principal := fs.String("principal", "local", "whose memories to search (search only; local is the stdio user)")
	limit := fs.Int("limit", 10, "results to show (search only)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table (stats, search)")
	askedHelp := slices.ContainsFunc(rest, func(a string) bool { return a != "help" && isHelp(a) })
	if askedHelp {
		// Asked for: the help goes to stdout and is no error.
		fs.SetOutput(stdout)
	}
	cfg, err := fs.parse(rest)
	if errors.Is(err, flag.ErrHelp) && askedHelp {
		return nil
	}
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	if cfg.Memory.Embedder == "openai" {
		// What a command re-embeds (import, reindex) or searches by
		// reaches the embeddings endpoint, another party, as the output
		// filter shows it, its sensitive values redacted: no session's
		// tokens here (issue 19, attack27 T5).
		f, err := filter.New(filterConfig(cfg))
		if err != nil {
			return fmt.Errorf("filter: %w", err)
		}
		ctx = memory.WithShown(ctx, func(text string) (string, error) {
			return f.ApplyText(text, filter.Options{Budget: -1}).Text, nil
		})
	}
	open := openStore
	if readOnlyMemoryCommands[sub] {
		open = openStoreReadOnly
	}
	st, err := open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	printJSON := func(v any) error {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	switch sub {
	case "stats":
		stats, err := st.Stats(ctx)
		if err != nil {
			return fmt.Errorf("memory stats: %w", err)
		}
		if *asJSON {
			return printJSON(stats)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "store\t%s (%d bytes, schema %d)\n", stats.Path, stats.FileBytes, stats.SchemaVersion)
		fmt.Fprintf(tw, "embedder\t%s, %d dimensions\n", stats.Embedder.Name, stats.Embedder.Dimensions)
		fmt.Fprintf(tw, "principals\t%d\n", stats.Principals)
		fmt.Fprintf(tw, "memories\t%d", stats.Memories)
		for _, l := range memory.Layers {
			fmt.Fprintf(tw, "  %s %d", l, stats.Layers[l])
		}
		fmt.Fprintf(tw, "\nentities, relations\t%d, %d\n", stats.Entities, stats.Relations)
		fmt.Fprintf(tw, "executions, tool calls\t%d, %d\n", stats.Executions, stats.ToolCalls)
		fmt.Fprintf(tw, "stored results\t%d (%d bytes)\n", stats.Results, stats.ResultBytes)
		fmt.Fprintf(tw, "workspace files\t%d (%d bytes)\n", stats.Files, stats.FileBytesRaw)
		fmt.Fprintf(tw, "skills, published\t%d, %d\n", stats.Skills, stats.PublishedSkills)
		return tw.Flush()

	case "search":
		if fs.NArg() == 0 {
			return usageError{"memory search needs a query"}
		}
		pctx := tools.WithCaller(ctx, tools.Caller{Principal: *principal})
		res, err := st.Recall(pctx, memory.RecallInput{Query: strings.Join(fs.Args(), " "), Limit: *limit})
		if err != nil {
			return fmt.Errorf("memory search: %w", err)
		}
		if *asJSON {
			return printJSON(res)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSCORE\tLAYER\tCONTENT")
		for _, h := range res.Results {
			content := strings.ReplaceAll(h.Content, "\n", " ")
			if len(content) > 100 {
				content = content[:97] + "..."
			}
			fmt.Fprintf(tw, "%d\t%.3f\t%s\t%s\n", h.ID, h.Score, h.Layer, content)
		}
		if len(res.Results) == 0 {
			fmt.Fprintf(tw, "(no memories of %q match)\n", *principal)
		}
		return tw.Flush()

	case "export":
		w := stdout
		if fs.NArg() > 0 && fs.Arg(0) != "-" {
			f, err := os.OpenFile(fs.Arg(0), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("memory export: %w", err)
			}
			defer f.Close()
			w = f
		}
		rep, err := st.Export(ctx, w)
		if err != nil {
			return fmt.Errorf("memory export: %w", err)
		}
		fmt.Fprintf(stderr, "exported %s\n", rep)
		return nil

	case "import":
		if fs.NArg() != 1 {
			return usageError{"memory import needs a file, or - for stdin"}
		}
		r := stdin
		if fs.Arg(0) != "-" {
			f, err := os.Open(fs.Arg(0))
			if err != nil {
				return fmt.Errorf("memory import: %w", err)
			}
			defer f.Close()
			r = f
		}
		rep, err := st.Import(ctx, r)
		if err != nil {
			return fmt.Errorf("memory import: %w", err)
		}
		fmt.Fprintln(stdout, rep)
		return nil

	case "reindex":
		emb, err := embedder(cfg, log)
		if err != nil {
			return err
		}
		if emb == nil {
			emb = memory.NewHashEmbedder(memory.DefaultDimensions)
		}
		rep, err := st.Reindex(ctx, emb)
		if err != nil {
			return fmt.Errorf("memory reindex: %w", err)
		}
		fmt.Fprintf(stdout, "reindexed %+v\n", rep)
		return nil

	case "reset-learning":
		n, err := st.ResetSearchLinks(ctx)
		if err != nil {
			return fmt.Errorf("memory reset-learning: %w", err)
		}
		fmt.Fprintf(stdout, "forgot %d learned links between search words and tools; servers running on this store keep theirs until they restart\n", n)
		return nil
	}
	return nil
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
