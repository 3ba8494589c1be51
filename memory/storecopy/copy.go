// Package storecopy copies a SQLite store (memory/sqlite) into a
// PostgreSQL store (memory/postgres), table by table, and verifies the
// copy: for every table it counts the rows and computes a checksum over a
// canonical form of each row, the same way on both sides (see rowSet),
// and compares them. Everything happens in one PostgreSQL transaction
// (postgres.Store.CopyIn), committed only when every copied table
// verifies: a failed or unverified copy leaves the target as it was. It
// is what `codecell memory migrate` runs; it owns nothing else, and the
// backends do not import it.
//
// Its tests hold what needs both backends side by side: the copy, an
// export of one imported into the other, and the benchmarks that measure
// the two on the same data (make bench-store).
package storecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver, to read the source

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/sqlite"
)

// CopyMode says what CopyFromSQLite does with a target that holds data.
type CopyMode int

const (
	// CopyIntoEmpty refuses a target that holds data (ErrTargetNotEmpty).
	CopyIntoEmpty CopyMode = iota
	// CopyForce empties the target's tables first (sequences keep
	// counting up, so that other instances' change logs stay ordered).
	CopyForce
	// CopyAppend adds the rows the target lacks, by primary key; a row
	// whose key the target holds is left as it is, and the verification
	// fails if it differs from the source's. Running it twice adds
	// nothing the second time.
	CopyAppend
	// CopyVerify copies nothing: it compares the target with the source
	// as CopyIntoEmpty would after copying, to check an earlier copy.
	CopyVerify
)

// ErrTargetNotEmpty: the target database already holds data and the
// copy was asked for neither CopyForce nor CopyAppend.
var ErrTargetNotEmpty = errors.New("the target database already holds data")

// ErrCopyMismatch: after the copy, the target's rows differ from the
// source's in count or checksum; nothing was committed.
var ErrCopyMismatch = errors.New("the copy does not match its source")

// Actions of a TableCopy.
const (
	ActionCopied  = "copied"  // rows copied, counted and checksummed on both sides
	ActionRebuilt = "rebuilt" // derived on the target from copied rows
	ActionChecked = "checked" // read and compared, not copied (meta)
	ActionSkipped = "skipped" // data not copied; Reason says why
	// ActionNotNeeded: SQLite's own machinery (change logs, full-text
	// tables), which PostgreSQL does otherwise; Reason says how.
	ActionNotNeeded = "not needed"
)

// TableCopy is what the copy did with one table of the source.
type TableCopy struct {
	Table  string `json:"table"`
	Action string `json:"action"`
	// Reason says why a table was rebuilt, checked or skipped.
	Reason string `json:"reason,omitempty"`
	// SourceRows are the source's rows; TargetRows the target's rows
	// with the keys of those (all its rows, unless appending), less the
	// Kept ones.
	SourceRows int64 `json:"source_rows"`
	TargetRows int64 `json:"target_rows"`
	// Inserted rows; the others were on the target already (appending).
	Inserted int64 `json:"inserted"`
	// Kept rows: on the target before an append, left as they were and
	// not compared; KeptDiffering of them differ from the source's.
	Kept          int64 `json:"kept,omitempty"`
	KeptDiffering int64 `json:"kept_differing,omitempty"`
	// Extra rows of the target, whose keys the source lacks (appending).
	Extra int64 `json:"extra,omitempty"`
	// Differing rows: same key on both sides, different content.
	Differing int64 `json:"differing,omitempty"`
	// SourceSum and TargetSum are the checksums (SHA-256, hex) of the
	// rows compared; Compared is false when the table was not compared.
	SourceSum string `json:"source_sum,omitempty"`
	TargetSum string `json:"target_sum,omitempty"`
	Compared  bool   `json:"compared"`
	// Columns the copy left out: of the source that the target's schema
	// lacks (their values are not copied) and the reverse (left to their
	// defaults).
	SourceOnlyColumns []string `json:"source_only_columns,omitempty"`
	TargetOnlyColumns []string `json:"target_only_columns,omitempty"`
}

// Match reports whether a compared table's rows are the same on both
// sides.
func (t TableCopy) Match() bool {
	return t.Compared && t.SourceRows-t.Kept == t.TargetRows && t.SourceSum == t.TargetSum && t.Differing == 0
}

// CopyReport is the outcome of CopyFromSQLite.
type CopyReport struct {
	Source   string        `json:"source"`
	Mode     string        `json:"mode"`
	Tables   []TableCopy   `json:"tables"`
	Duration time.Duration `json:"duration_ns"`
}

// Verified reports whether every compared table matched.
func (r CopyReport) Verified() bool {
	for _, t := range r.Tables {
		if t.Compared && !t.Match() {
			return false
		}
	}
	return true
}

// Skipped lists the source tables left out of the copy.
func (r CopyReport) Skipped() []string {
	var out []string
	for _, t := range r.Tables {
		if t.Action == ActionSkipped {
			out = append(out, t.Table)
		}
	}
	return out
}

// Partial lists the copied tables some of whose source columns were left
// out.
func (r CopyReport) Partial() []string {
	var out []string
	for _, t := range r.Tables {
		if len(t.SourceOnlyColumns) > 0 {
			out = append(out, t.Table)
		}
	}
	return out
}

// WriteTable prints the report as a table and a verdict that names what
// was not copied.
func (r CopyReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tACTION\tSOURCE ROWS\tTARGET ROWS\tINSERTED\tSOURCE SUM\tTARGET SUM\tCHECK")
	for _, t := range r.Tables {
		check := "-"
		switch {
		case t.Compared && t.Match():
			check = "ok"
		case t.Compared:
			check = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", t.Table, t.Action, t.SourceRows, t.TargetRows, t.Inserted,
			short(t.SourceSum), short(t.TargetSum), check)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Tables {
		if t.Reason != "" {
			fmt.Fprintf(w, "  %s: %s\n", t.Table, t.Reason)
		}
		if len(t.SourceOnlyColumns) > 0 {
			fmt.Fprintf(w, "  %s: columns not copied (the PostgreSQL schema lacks them): %s\n", t.Table, strings.Join(t.SourceOnlyColumns, ", "))
		}
		if t.Extra > 0 {
			fmt.Fprintf(w, "  %s: the target holds %d more rows than the source\n", t.Table, t.Extra)
		}
		if t.Differing > 0 {
			fmt.Fprintf(w, "  %s: %d rows have the same key on both sides and different content\n", t.Table, t.Differing)
		}
		if t.Kept > 0 {
			fmt.Fprintf(w, "  %s: %d rows were on the target already and were kept as they are (%d of them differ from the source's)\n", t.Table, t.Kept, t.KeptDiffering)
		}
	}
	switch {
	case !r.Verified():
		fmt.Fprintf(w, "NOT VERIFIED: some tables differ; nothing was committed.\n")
	case len(r.Skipped()) > 0 || len(r.Partial()) > 0:
		fmt.Fprintf(w, "verified what was copied, in %s; NOT a full copy: skipped %s", r.Duration.Round(time.Millisecond), orNone(r.Skipped()))
		if p := r.Partial(); len(p) > 0 {
			fmt.Fprintf(w, "; columns left out of %s", strings.Join(p, ", "))
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "verified: every table copied, counts and checksums equal, in %s\n", r.Duration.Round(time.Millisecond))
	}
	return nil
}

func short(sum string) string {
	if len(sum) > 16 {
		return sum[:16]
	}
	if sum == "" {
		return "-"
	}
	return sum
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// CopyOptions configure CopyFromSQLite.
type CopyOptions struct {
	Mode CopyMode
}

// Tables of the SQLite schema that are not copied as they are, and why.
var sqliteOnly = map[string]string{
	"meta":              "",
	"sqlite_sequence":   "SQLite's AUTOINCREMENT counters, carried: PostgreSQL's sequences are set past them, so that no id is used twice",
	"memory_code_log":   "SQLite's local change log; PostgreSQL's gets one entry per copied binary code",
	"skill_changes":     "SQLite's skill change log; PostgreSQL instances hear of changes by NOTIFY, and one is sent after the copy",
	"memory_fts_tables": "SQLite's full-text indexes; PostgreSQL's keyword index (memories.tsv) is computed from the copied memories",
	"memory_fts":        "SQLite's full-text index; PostgreSQL's keyword index (memories.tsv) is computed from the copied memories",
}

// isFTS reports whether a SQLite table belongs to the full-text indexes
// (memory_fts, memory_fts_<id> and their shadow tables).
func isFTS(name string) bool {
	return name == "memory_fts" || strings.HasPrefix(name, "memory_fts_") && name != "memory_fts_tables"
}

// CopyFromSQLite copies the SQLite store at path into dst's database and
// verifies the copy. The source must be at this build's schema version
// and its vectors made by dst's embedder. Tables of the SQLite schema
// that the PostgreSQL schema lacks are skipped and listed; the keyword
// index and the binary codes' change log are rebuilt on the target, the
// binary codes are copied (or recomputed from the vectors when the
// source's were made by another quantizer). A copy that does not verify
// is rolled back and fails with ErrCopyMismatch, its report beside.
func CopyFromSQLite(ctx context.Context, dst *postgres.Store, path string, opts CopyOptions) (CopyReport, error) {
	start := time.Now()
	rep := CopyReport{Source: path, Mode: [...]string{"into-empty", "force", "append", "verify"}[opts.Mode]}
	src, err := openSQLiteSource(ctx, path)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	stx, err := src.BeginTx(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("copy: read %s: %w", path, err)
	}
	defer stx.Rollback()
	// The embedder and quantizer stay those the copy checks against
	// (Reindex waits for the transaction).
	err = dst.CopyIn(ctx, func(tx postgres.CopyTx) error {
		c := &copier{tx: tx, src: stx, opts: opts}
		return c.run(ctx, &rep)
	})
	rep.Duration = time.Since(start)
	if errors.Is(err, errVerified) {
		return rep, nil
	}
	if errors.Is(err, ErrCopyMismatch) {
		return rep, err
	}
	if err != nil {
		return rep, fmt.Errorf("copy: %w", err)
	}
	return rep, nil
}

// openSQLiteSource opens the SQLite file read-only and checks that its
// schema is this build's.
func openSQLiteSource(ctx context.Context, path string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Opaque: path, RawQuery: "mode=ro"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return nil, fmt.Errorf("copy: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	var version int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("copy: open %s: %w", path, err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'memories'`).Scan(&tables); err != nil {
		db.Close()
		return nil, fmt.Errorf("copy: open %s: %w", path, err)
	}
	if tables == 0 {
		db.Close()
		return nil, fmt.Errorf("copy: %s: %w", path, &sqlite.NoStoreError{Path: path})
	}
	if want := sqlite.SchemaVersion(); version != want {
		db.Close()
		return nil, fmt.Errorf("copy: %s: %w: the store has schema version %d and this build copies %d; open it once with this build (codecell serve, or memory import of an empty file) to migrate it", path, memory.ErrSchema, version, want)
	}
	return db, nil
}

type copier struct {
	src  *sql.Tx
	tx   postgres.CopyTx
	opts CopyOptions
	// seqs are the source's AUTOINCREMENT counters, by table.
	seqs map[string]int64
}

// column is a copied column and the kind of its values.
type column struct {
	name string
	kind byte // 'i' integer, 'f' float, 's' text, 'b' bytes, 'a' strings
}

// tableSpec is how one table is copied.
type tableSpec struct {
	name       string
	cols       []column // in both schemas, in the target's order
	key        []int    // indexes in cols of the primary key
	serial     string   // the target's column with a sequence, if any
	srcOnly    []string
	targetOnly []string
}

func (c *copier) run(ctx context.Context, rep *CopyReport) error {
	srcTables, err := c.sourceTables(ctx)
	if err != nil {
		return err
	}
	if c.seqs, err = c.sourceSequences(ctx, srcTables); err != nil {
		return err
	}
	order, err := c.targetOrder(ctx)
	if err != nil {
		return err
	}
	var specs []tableSpec
	for _, name := range order {
		if !slices.Contains(srcTables, name) || sqliteOnly[name] != "" || name == "meta" || name == "memory_counts" || usageTables[name] != "" {
			continue
		}
		spec, err := c.spec(ctx, name)
		if err != nil {
			return err
		}
		specs = append(specs, spec)
	}
	if err := c.prepareTarget(ctx, order); err != nil {
		return err
	}
	meta, err := c.checkMeta(ctx)
	if err != nil {
		return err
	}
	rep.Tables = append(rep.Tables, meta)
	for _, spec := range specs {
		tc, err := c.copyTable(ctx, spec)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		rep.Tables = append(rep.Tables, tc)
	}
	if slices.Contains(srcTables, "memory_counts") {
		tc, err := c.rebuildCounts(ctx)
		if err != nil {
			return fmt.Errorf("memory_counts: %w", err)
		}
		rep.Tables = append(rep.Tables, tc)
	}
	for _, name := range slices.Sorted(maps.Keys(usageTables)) {
		if !slices.Contains(srcTables, name) {
			continue
		}
		tc, err := c.checkUsage(ctx, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rep.Tables = append(rep.Tables, tc)
	}
	if c.opts.Mode != CopyVerify {
		tc, err := c.fillEmbeddings(ctx)
		if err != nil {
			return fmt.Errorf("memory_embeddings: %w", err)
		}
		if tc != nil {
			rep.Tables = append(rep.Tables, *tc)
		}
	}
	fts := 0
	for _, name := range srcTables {
		switch {
		case isFTS(name):
			fts++
		case name == "meta" || name == "memory_counts" || usageTables[name] != "" || slices.Contains(order, name) && sqliteOnly[name] == "":
		case sqliteOnly[name] != "":
			tc := TableCopy{Table: name, Action: ActionNotNeeded, Reason: sqliteOnly[name]}
			if name == "sqlite_sequence" {
				tc.Action = ActionRebuilt
			}
			if err := c.src.QueryRowContext(ctx, `SELECT count(*) FROM `+quoteSQLite(name)).Scan(&tc.SourceRows); err != nil {
				return err
			}
			rep.Tables = append(rep.Tables, tc)
		default:
			tc := TableCopy{Table: name, Action: ActionSkipped, Reason: "the PostgreSQL schema has no such table yet"}
			if err := c.src.QueryRowContext(ctx, `SELECT count(*) FROM `+quoteSQLite(name)).Scan(&tc.SourceRows); err != nil {
				return err
			}
			rep.Tables = append(rep.Tables, tc)
		}
	}
	if fts > 0 {
		rep.Tables = append(rep.Tables, TableCopy{Table: fmt.Sprintf("memory_fts* (%d tables)", fts), Action: ActionNotNeeded, Reason: sqliteOnly["memory_fts"]})
	}
	if !rep.Verified() {
		return ErrCopyMismatch
	}
	if c.opts.Mode == CopyVerify {
		return errVerified
	}
	return c.tx.NotifySkills(ctx)
}

// errVerified ends a CopyVerify transaction: it rolls back, though it
// wrote nothing.
var errVerified = errors.New("verified")

// sourceSequences reads the source's AUTOINCREMENT counters.
func (c *copier) sourceSequences(ctx context.Context, tables []string) (map[string]int64, error) {
	seqs := map[string]int64{}
	if !slices.Contains(tables, "sqlite_sequence") {
		return seqs, nil
	}
	rows, err := c.src.QueryContext(ctx, `SELECT name, seq FROM sqlite_sequence`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var v int64
		if err := rows.Scan(&n, &v); err != nil {
			return nil, err
		}
		seqs[n] = v
	}
	return seqs, rows.Err()
}

// sourceTables lists the source's tables.
func (c *copier) sourceTables(ctx context.Context) ([]string, error) {
	rows, err := c.src.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list source tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// targetOrder lists the target's tables so that a table comes after
// those its foreign keys name.
func (c *copier) targetOrder(ctx context.Context) ([]string, error) {
	rows, err := c.tx.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	rows, err = c.tx.Query(ctx, `SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint
		WHERE contype = 'f' AND connamespace = current_schema()::regnamespace`)
	if err != nil {
		return nil, err
	}
	deps := map[string][]string{}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			rows.Close()
			return nil, err
		}
		if from != to {
			deps[from] = append(deps[from], to)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var order []string
	done := map[string]bool{}
	var visit func(t string, depth int)
	visit = func(t string, depth int) {
		if done[t] || depth > len(tables) {
			return
		}
		for _, d := range deps[t] {
			visit(d, depth+1)
		}
		if !done[t] {
			done[t] = true
			order = append(order, t)
		}
	}
	for _, t := range tables {
		visit(t, 0)
	}
	return order, nil
}

// spec reads both schemas of a table.
func (c *copier) spec(ctx context.Context, name string) (tableSpec, error) {
	spec := tableSpec{name: name}
	srcCols := map[string]bool{}
	rows, err := c.src.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, name)
	if err != nil {
		return spec, fmt.Errorf("%s: source columns: %w", name, err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return spec, err
		}
		srcCols[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return spec, err
	}
	prows, err := c.tx.Query(ctx, `SELECT column_name, data_type, coalesce(column_default, '') FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, name)
	if err != nil {
		return spec, err
	}
	type pgCol struct{ name, typ, def string }
	pcols, err := pgx.CollectRows(prows, func(r pgx.CollectableRow) (pgCol, error) {
		var p pgCol
		err := r.Scan(&p.name, &p.typ, &p.def)
		return p, err
	})
	if err != nil {
		return spec, err
	}
	inTarget := map[string]bool{}
	for _, p := range pcols {
		inTarget[p.name] = true
		if !srcCols[p.name] {
			if !(name == "memories" && p.name == "tsv") {
				spec.targetOnly = append(spec.targetOnly, p.name)
			}
			continue
		}
		var kind byte
		switch p.typ {
		case "bigint", "integer", "smallint":
			kind = 'i'
		case "double precision", "real":
			kind = 'f'
		case "text":
			kind = 's'
		case "bytea":
			kind = 'b'
		case "ARRAY":
			// text[] in PostgreSQL, a JSON array of strings in SQLite
			// (vault_tokens.sources).
			kind = 'a'
		default:
			return spec, fmt.Errorf("%s.%s: cannot copy a column of type %s", name, p.name, p.typ)
		}
		spec.cols = append(spec.cols, column{p.name, kind})
		if strings.HasPrefix(p.def, "nextval(") {
			spec.serial = p.name
		}
	}
	for n := range srcCols {
		if !inTarget[n] {
			spec.srcOnly = append(spec.srcOnly, n)
		}
	}
	slices.Sort(spec.srcOnly)
	krows, err := c.tx.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, name)
	if err != nil {
		return spec, err
	}
	keys, err := pgx.CollectRows(krows, pgx.RowTo[string])
	if err != nil {
		return spec, err
	}
	for _, k := range keys {
		i := slices.IndexFunc(spec.cols, func(c column) bool { return c.name == k })
		if i < 0 {
			return spec, fmt.Errorf("%s: the source lacks the key column %s", name, k)
		}
		spec.key = append(spec.key, i)
	}
	return spec, nil
}

// prepareTarget refuses a target with data, or empties it (CopyForce).
func (c *copier) prepareTarget(ctx context.Context, tables []string) error {
	if c.opts.Mode == CopyAppend || c.opts.Mode == CopyVerify {
		return nil
	}
	var full []string
	for _, t := range tables {
		if t == "meta" {
			continue
		}
		var has bool
		if err := c.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&has); err != nil {
			return err
		}
		if has {
			full = append(full, t)
		}
	}
	if len(full) == 0 {
		return nil
	}
	if c.opts.Mode == CopyIntoEmpty {
		return fmt.Errorf("%w (rows in %s): force replaces it, append adds what it lacks", ErrTargetNotEmpty, strings.Join(full, ", "))
	}
	ids := make([]string, len(full))
	for i, t := range full {
		ids[i] = pgx.Identifier{t}.Sanitize()
	}
	_, err := c.tx.Exec(ctx, `TRUNCATE `+strings.Join(ids, ", ")+` CASCADE`)
	return err
}

// checkMeta compares the source's embedder with the target's and carries
// the skills version (the larger of the two, so that it only grows).
func (c *copier) checkMeta(ctx context.Context) (TableCopy, error) {
	tc := TableCopy{Table: "meta", Action: ActionChecked}
	meta := map[string]string{}
	rows, err := c.src.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return tc, fmt.Errorf("meta: %w", err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return tc, err
		}
		meta[k] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return tc, err
	}
	tc.SourceRows = int64(len(meta))
	want := fmt.Sprintf("%s/%d", c.tx.Embedder.Name(), c.tx.Embedder.Dimensions())
	if name, ok := meta["embedder"]; ok {
		have := name + "/" + meta["embedder_dims"]
		if have != want {
			return tc, fmt.Errorf("%w: the source's vectors were made by %s and the target's embedder is %s; configure %s for the target, or reindex the source first",
				memory.ErrEmbedderMismatch, have, want, have)
		}
	}
	var stored string
	err = c.tx.QueryRow(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'embedder'), '')`).Scan(&stored)
	if err != nil {
		return tc, fmt.Errorf("meta: %w", err)
	}
	if stored != "" && stored != want {
		return tc, fmt.Errorf("%w: the target's vectors were made by %s and the configured embedder is %s", memory.ErrEmbedderMismatch, stored, want)
	}
	if v, ok := meta["skills_version"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return tc, fmt.Errorf("meta: skills_version %q: %w", v, err)
		}
		if _, err := c.tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('skills_version', $1)
			ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value::bigint, excluded.value::bigint)::text`, strconv.FormatInt(n, 10)); err != nil {
			return tc, err
		}
	}
	tc.Reason = fmt.Sprintf("the embedder (%s) is the target's; skills_version carried; the other keys describe SQLite's own indexes", want)
	return tc, nil
}

// copyTable copies one table through a staging table and verifies it.
func (c *copier) copyTable(ctx context.Context, spec tableSpec) (TableCopy, error) {
	tc := TableCopy{Table: spec.name, Action: ActionCopied, SourceOnlyColumns: spec.srcOnly, TargetOnlyColumns: spec.targetOnly}
	names := make([]string, len(spec.cols))
	for i, col := range spec.cols {
		names[i] = col.name
	}
	stage := "copy_stage_" + spec.name
	colList := pgx.Identifier{names[0]}.Sanitize()
	for _, n := range names[1:] {
		colList += ", " + pgx.Identifier{n}.Sanitize()
	}
	srcRows, recompute, err := c.sourceRows(ctx, spec)
	if err != nil {
		return tc, err
	}
	if recompute != "" {
		tc.Action, tc.Reason = ActionRebuilt, recompute
	}
	source := newRowSet(spec)
	if c.opts.Mode == CopyVerify {
		for {
			row, err := srcRows()
			if err != nil {
				return tc, err
			}
			if row == nil {
				break
			}
			if err := source.add(row); err != nil {
				return tc, err
			}
		}
		tc.Action, tc.SourceRows = ActionChecked, int64(len(source.hashes))
		return tc, c.verify(ctx, spec, source, nil, &tc)
	}
	var before map[string][32]byte
	if c.opts.Mode == CopyAppend {
		// The rows the target holds already: kept as they are.
		held, err := c.targetRows(ctx, spec, nil)
		if err != nil {
			return tc, err
		}
		before = held.byKey
	}
	if _, err := c.tx.Exec(ctx, `CREATE TEMP TABLE `+pgx.Identifier{stage}.Sanitize()+` ON COMMIT DROP AS SELECT `+colList+
		` FROM `+pgx.Identifier{spec.name}.Sanitize()+` WITH NO DATA`); err != nil {
		return tc, err
	}
	var rowErr error
	n, err := c.tx.CopyFrom(ctx, pgx.Identifier{stage}, names, pgx.CopyFromFunc(func() ([]any, error) {
		row, err := srcRows()
		if err != nil || row == nil {
			rowErr = err
			return nil, err
		}
		if err := source.add(row); err != nil {
			return nil, err
		}
		return row, nil
	}))
	if rowErr != nil {
		return tc, rowErr
	}
	if err != nil {
		return tc, err
	}
	tc.SourceRows = n
	insert := `INSERT INTO ` + pgx.Identifier{spec.name}.Sanitize() + ` (` + colList
	sel := ` SELECT ` + colList
	if spec.name == "memories" {
		// As Remember computes it: content, then the tags in order.
		insert += `, tsv`
		sel += `, to_tsvector('english', content || ' ' || coalesce((SELECT string_agg(t.v, ' ' ORDER BY t.n)
			FROM jsonb_array_elements_text(tags::jsonb) WITH ORDINALITY AS t(v, n)), ''))`
	}
	tag, err := c.tx.Exec(ctx, insert+`)`+sel+` FROM `+pgx.Identifier{stage}.Sanitize()+` ON CONFLICT DO NOTHING`)
	if err != nil {
		return tc, err
	}
	tc.Inserted = tag.RowsAffected()
	if spec.name == "memory_codes" {
		if _, err := c.tx.Exec(ctx, `INSERT INTO memory_code_log (memory_id, principal) SELECT memory_id, principal FROM `+
			pgx.Identifier{stage}.Sanitize()+` ORDER BY memory_id`); err != nil {
			return tc, err
		}
	}
	if spec.serial != "" {
		if err := c.advanceSequence(ctx, spec); err != nil {
			return tc, fmt.Errorf("advance sequence: %w", err)
		}
	}
	if err := c.verify(ctx, spec, source, before, &tc); err != nil {
		return tc, err
	}
	return tc, nil
}

// advanceSequence sets the sequence of spec's serial column past the
// largest id, never back: new rows must not take a copied row's id.
func (c *copier) advanceSequence(ctx context.Context, spec tableSpec) error {
	var seq string
	if err := c.tx.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, $2)`, spec.name, spec.serial).Scan(&seq); err != nil {
		return err
	}
	var last int64
	var called bool
	if err := c.tx.QueryRow(ctx, `SELECT last_value, is_called FROM `+seq).Scan(&last, &called); err != nil {
		return err
	}
	if !called {
		last--
	}
	var top int64
	col := pgx.Identifier{spec.serial}.Sanitize()
	if err := c.tx.QueryRow(ctx, `SELECT coalesce(max(`+col+`), 0) FROM `+pgx.Identifier{spec.name}.Sanitize()).Scan(&top); err != nil {
		return err
	}
	top = max(top, c.seqs[spec.name])
	if top <= last {
		return nil
	}
	_, err := c.tx.Exec(ctx, `SELECT setval($1, $2, true)`, seq, top)
	return err
}

// sourceRows returns a reader of the source's rows of spec, each as the
// values to write, nil at the end. The binary codes are recomputed from
// the vectors when the source's quantizer is not the target's (recompute
// then says so).
func (c *copier) sourceRows(ctx context.Context, spec tableSpec) (next func() ([]any, error), recompute string, err error) {
	query := `SELECT `
	for i, col := range spec.cols {
		if i > 0 {
			query += ", "
		}
		query += quoteSQLite(col.name)
	}
	query += ` FROM ` + quoteSQLite(spec.name)
	var quant string
	if spec.name == "memory_codes" {
		if err := c.src.QueryRowContext(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'quantizer'), '')`).Scan(&quant); err != nil {
			return nil, "", err
		}
		if quant != c.tx.Quantizer.Name() {
			recompute = fmt.Sprintf("the source's codes were made by quantizer %q; recomputed from the vectors with %q", quant, c.tx.Quantizer.Name())
			query = `SELECT memory_id, principal, layer, embedding FROM memory_vectors`
		}
	}
	rows, err := c.src.QueryContext(ctx, query)
	if err != nil {
		return nil, "", err
	}
	vals := make([]any, len(spec.cols))
	ptrs := make([]any, len(spec.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var vec []float32
	next = func() ([]any, error) {
		if !rows.Next() {
			rows.Close()
			return nil, rows.Err()
		}
		if recompute != "" {
			var id int64
			var principal, layer string
			var blob []byte
			if err := rows.Scan(&id, &principal, &layer, &blob); err != nil {
				rows.Close()
				return nil, err
			}
			if vec, err = memory.DecodeVector(blob, vec); err != nil {
				rows.Close()
				return nil, fmt.Errorf("memory %d: %w", id, err)
			}
			byName := map[string]any{"memory_id": id, "principal": principal, "layer": layer, "code": c.tx.Quantizer.Code(vec)}
			out := make([]any, len(spec.cols))
			for i, col := range spec.cols {
				out[i] = byName[col.name]
			}
			return out, nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return nil, err
		}
		out := make([]any, len(vals))
		for i, col := range spec.cols {
			v, err := normalize(col, vals[i])
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("%s.%s: %w", spec.name, col.name, err)
			}
			out[i] = v
		}
		return out, nil
	}
	return next, recompute, nil
}

// normalize turns a value as a driver returned it into the Go type of the
// column's kind: int64, float64, string, []byte or nil.
func normalize(col column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch col.kind {
	case 'i':
		switch x := v.(type) {
		case int64:
			return x, nil
		case int32:
			return int64(x), nil
		case int:
			return int64(x), nil
		}
	case 'f':
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		case int64:
			return float64(x), nil
		}
	case 's':
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case 'b':
		switch x := v.(type) {
		case []byte:
			return bytes.Clone(x), nil
		case string:
			return []byte(x), nil
		}
	case 'a':
		switch x := v.(type) {
		case string: // SQLite: a JSON array
			var out []string
			if err := json.Unmarshal([]byte(x), &out); err != nil {
				return nil, fmt.Errorf("a column of kind a: %w", err)
			}
			return append([]string{}, out...), nil
		case []byte:
			return normalize(col, string(x))
		case []string:
			return append([]string{}, x...), nil
		case []any: // pgx: text[]
			out := make([]string, 0, len(x))
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("unexpected %T in a column of kind a", e)
				}
				out = append(out, s)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("unexpected %T for a column of kind %c", v, col.kind)
}

// rowSet holds the hash of each row of one side, by primary key.
type rowSet struct {
	spec   tableSpec
	byKey  map[string][32]byte
	hashes [][32]byte
	buf    []byte
}

func newRowSet(spec tableSpec) *rowSet {
	return &rowSet{spec: spec, byKey: map[string][32]byte{}}
}

// add hashes a row (normalized values, in spec's column order).
func (s *rowSet) add(row []any) error {
	h, key := s.hash(row)
	if _, dup := s.byKey[key]; dup {
		return fmt.Errorf("two rows with the key %q", key)
	}
	s.byKey[key] = h
	s.hashes = append(s.hashes, h)
	return nil
}

// hash is the SHA-256 of the row's canonical form and the canonical form
// of its key. The canonical form of a row is, for each column in the
// target schema's order, its name, its kind and its value: integers in
// decimal, floats in the shortest form that reads back exactly, text and
// bytes with their length; NULL is a kind of its own. Both sides hash
// rows of the same columns with this function.
func (s *rowSet) hash(row []any) ([32]byte, string) {
	b := s.buf[:0]
	enc := func(b []byte, col column, v any) []byte {
		b = append(b, col.name...)
		b = append(b, 0)
		if v == nil {
			return append(b, 'N', 0)
		}
		b = append(b, col.kind)
		switch x := v.(type) {
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case float64:
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		case string:
			b = strconv.AppendInt(b, int64(len(x)), 10)
			b = append(b, ':')
			b = append(b, x...)
		case []byte:
			b = strconv.AppendInt(b, int64(len(x)), 10)
			b = append(b, ':')
			b = append(b, x...)
		case []string:
			for _, e := range x {
				b = strconv.AppendInt(b, int64(len(e)), 10)
				b = append(b, ':')
				b = append(b, e...)
			}
		}
		return append(b, 0)
	}
	for i, col := range s.spec.cols {
		b = enc(b, col, row[i])
	}
	h := sha256.Sum256(b)
	var k []byte
	if len(s.spec.key) == 0 {
		k = h[:]
	} else {
		for _, i := range s.spec.key {
			k = enc(k, s.spec.cols[i], row[i])
		}
	}
	s.buf = b
	return h, string(k)
}

// sum is the checksum of a set of row hashes: the SHA-256 of the hashes
// in ascending order, so that it does not depend on the order the rows
// were read in (the two databases sort text differently).
func sum(hashes [][32]byte) string {
	slices.SortFunc(hashes, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, x := range hashes {
		h.Write(x[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// targetRows reads the target's rows of spec into a row set; each row
// is passed to each, when not nil, with its hash and key.
func (c *copier) targetRows(ctx context.Context, spec tableSpec, each func(h [32]byte, key string)) (*rowSet, error) {
	query := `SELECT `
	for i, col := range spec.cols {
		if i > 0 {
			query += ", "
		}
		query += pgx.Identifier{col.name}.Sanitize()
	}
	rows, err := c.tx.Query(ctx, query+` FROM `+pgx.Identifier{spec.name}.Sanitize())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := newRowSet(spec)
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		for i, col := range spec.cols {
			if vals[i], err = normalize(col, vals[i]); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", spec.name, col.name, err)
			}
		}
		h, key := set.hash(vals)
		set.byKey[key] = h
		if each != nil {
			each(h, key)
		}
	}
	return set, rows.Err()
}

// verify reads the target's rows of spec back and compares them with
// the source's: the rows with the source's keys, their count and
// checksum. Rows the target held before an append (before) are kept
// and left out of the comparison; rows the source lacks are extra (an
// error unless appending).
func (c *copier) verify(ctx context.Context, spec tableSpec, source *rowSet, before map[string][32]byte, tc *TableCopy) error {
	var matched [][32]byte
	_, err := c.targetRows(ctx, spec, func(h [32]byte, key string) {
		want, ok := source.byKey[key]
		switch {
		case !ok:
			tc.Extra++
		case before != nil && hasKey(before, key):
			tc.Kept++
			if want != h {
				tc.KeptDiffering++
			}
		default:
			if want != h {
				tc.Differing++
			}
			matched = append(matched, h)
		}
	})
	if err != nil {
		return err
	}
	compared := source.hashes
	if tc.Kept > 0 {
		compared = compared[:0:0]
		for key, h := range source.byKey {
			if !hasKey(before, key) {
				compared = append(compared, h)
			}
		}
	}
	tc.TargetRows = int64(len(matched))
	tc.SourceSum, tc.TargetSum, tc.Compared = sum(compared), sum(matched), true
	if tc.Extra > 0 && c.opts.Mode != CopyAppend {
		// The target held only the source's rows: more are not its copy.
		tc.TargetRows += tc.Extra
	}
	return nil
}

func hasKey(m map[string][32]byte, key string) bool {
	_, ok := m[key]
	return ok
}

// rebuildCounts sets the memories per principal from the target's
// memories and, unless appending, compares them with the source's counts
// (principals with memories only: a count of 0 and no row are the same).
func (c *copier) rebuildCounts(ctx context.Context) (TableCopy, error) {
	tc := TableCopy{Table: "memory_counts", Action: ActionRebuilt, Reason: "counted from the memories on the target"}
	if c.opts.Mode == CopyVerify {
		tc.Action, tc.Reason = ActionChecked, ""
	} else if _, err := c.tx.Exec(ctx, `INSERT INTO memory_counts (principal, n) SELECT principal, count(*) FROM memories GROUP BY principal
		ON CONFLICT (principal) DO UPDATE SET n = excluded.n`); err != nil {
		return tc, err
	}
	spec := tableSpec{name: "memory_counts", cols: []column{{"principal", 's'}, {"n", 'i'}}, key: []int{0}}
	err := c.compareDerived(ctx, &tc, spec, `SELECT principal, n FROM memory_counts WHERE n > 0`, "counts include the memories it held before")
	return tc, err
}

// compareDerived compares a table the target derives as rows are copied
// (memory_counts, usageTables) with the source's, by the rows q selects
// on both, whose columns are spec's, strings and integers only. Appending,
// the target's include its own rows: only the source's are counted, and
// held says what the target's hold besides.
func (c *copier) compareDerived(ctx context.Context, tc *TableCopy, spec tableSpec, q, held string) error {
	scan := func(sc interface{ Scan(...any) error }) ([]any, error) {
		dst, row := make([]any, len(spec.cols)), make([]any, len(spec.cols))
		for i, col := range spec.cols {
			if col.kind == 's' {
				dst[i] = new(string)
			} else {
				dst[i] = new(int64)
			}
		}
		if err := sc.Scan(dst...); err != nil {
			return nil, err
		}
		for i, d := range dst {
			if v, ok := d.(*string); ok {
				row[i] = *v
			} else {
				row[i] = *d.(*int64)
			}
		}
		return row, nil
	}
	source := newRowSet(spec)
	rows, err := c.src.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
		row, err := scan(rows)
		if err == nil {
			err = source.add(row)
		}
		if err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	tc.SourceRows = int64(len(source.hashes))
	if c.opts.Mode == CopyAppend {
		tc.Reason += "; not compared: the target's " + held
		return nil
	}
	prows, err := c.tx.Query(ctx, q)
	if err != nil {
		return err
	}
	defer prows.Close()
	target := newRowSet(spec)
	var matched [][32]byte
	for prows.Next() {
		row, err := scan(prows)
		if err != nil {
			return err
		}
		h, key := target.hash(row)
		want, ok := source.byKey[key]
		if !ok {
			tc.Extra++
			continue
		}
		if want != h {
			tc.Differing++
		}
		matched = append(matched, h)
	}
	if err := prows.Err(); err != nil {
		return err
	}
	tc.TargetRows = int64(len(matched)) + tc.Extra
	tc.SourceSum, tc.TargetSum, tc.Compared = sum(source.hashes), sum(matched), true
	return nil
}

// usageTables are the running totals (principal, kind, entries, bytes)
// that the target's triggers keep as the rows they sum are copied, and
// what they sum.
var usageTables = map[string]string{
	"cache_usage":     "the copied cache entries",
	"principal_usage": "the copied memories, entities and relations",
}

// checkUsage compares a table of running totals (usageTables), which
// the target's triggers kept as the rows were copied, with the source's
// (rows of entries only: a total of 0 and no row are the same);
// appending, the target's include its own rows and are not compared.
func (c *copier) checkUsage(ctx context.Context, table string) (TableCopy, error) {
	tc := TableCopy{Table: table, Action: ActionRebuilt, Reason: "summed by the target's triggers from " + usageTables[table]}
	if c.opts.Mode == CopyVerify {
		tc.Action, tc.Reason = ActionChecked, ""
	}
	spec := tableSpec{name: table, cols: []column{{"principal", 's'}, {"kind", 's'}, {"entries", 'i'}, {"bytes", 'i'}}, key: []int{0, 1}}
	err := c.compareDerived(ctx, &tc, spec, `SELECT principal, kind, entries, bytes FROM `+table+` WHERE entries > 0`, "totals include the entries it held before")
	return tc, err
}

// quoteSQLite quotes a SQLite identifier.
func quoteSQLite(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// fillEmbeddings gives every copied vector its pgvector embedding when
// the target has memory_embeddings (pgvector.go); nil when it has not.
func (c *copier) fillEmbeddings(ctx context.Context) (*TableCopy, error) {
	n, exists, err := c.tx.FillEmbeddings(ctx)
	if err != nil || !exists {
		return nil, err
	}
	return &TableCopy{Table: "memory_embeddings", Action: ActionRebuilt, Inserted: n,
		Reason: "pgvector's column and HNSW index, made from the copied vectors (memory_vectors)"}, nil
}
