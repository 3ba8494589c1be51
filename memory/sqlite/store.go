package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
	"github.com/klauspost/compress/zstd"
	"github.com/mattn/go-sqlite3"
)

// InMemory is the Config.Path of a database that lives in memory and is
// gone when the store closes. It is served by a single connection.
const InMemory = ":memory:"

// Config configures a Store. The zero value is usable: it opens
// DefaultPath() with the offline hashing embedder and default limits.
type Config struct {
	// Path is the database file; "" means DefaultPath(), InMemory a
	// private in-memory database.
	Path string
	// Embedder turns text into vectors; nil means NewHashEmbedder(384).
	// The store refuses to mix vectors of different embedders: see
	// Store.EmbedderStatus and Store.Reindex.
	Embedder memory.Embedder
	// Readers is the size of the read connection pool (default 4).
	// Writes go through a single connection.
	Readers int
	// BusyTimeout is how long a connection waits for a lock held by
	// another process (default 5s).
	BusyTimeout time.Duration
	// SyncFull makes every commit wait for the disk (PRAGMA
	// synchronous=FULL). The default, NORMAL, survives a crash of the
	// process but may lose the last commits on power loss.
	SyncFull bool
	// Limits bounds what callers may store.
	Limits memory.Limits
	// Retention bounds how long server records are kept; see Prune.
	Retention memory.Retention
	// ExactSearchLimit is the number of vectors (of one principal) up to
	// which vector search is an exact scan; above it, recall uses a coarse
	// pass over binary codes re-scored with the full vectors. Default 2000:
	// an exact scan costs about 2 µs per vector, the coarse pass about
	// 2 ms whatever the size, and finds the exact top 10 at least 95% of
	// the time (see BenchmarkRecall).
	ExactSearchLimit int
	// CoarseFactor is how many binary-code candidates per wanted result the
	// coarse pass keeps for re-scoring (default 30: at 100k memories the
	// pass then finds 97.8% of the exact top 10, against 95.3% with 20;
	// see BenchmarkBinaryRecall).
	CoarseFactor int
	// CodeIndexBytes bounds the memory of the in-process copy of the
	// binary codes that the coarse pass ranks (default
	// DefaultCodeIndexBytes). A principal whose codes do not fit is
	// ranked in SQL, several times slower; negative keeps no copy.
	CodeIndexBytes int64
	// WatchInterval is how often the store looks for skill changes made
	// by other connections to the database (other processes, other
	// Stores) to deliver them to OnSkillChange subscribers; default
	// 250ms, negative never. An in-memory database has no others.
	WatchInterval time.Duration
	// ReadOnly opens an existing database for reading only: Open fails
	// with a *NoStoreError when there is no file at Path, and with
	// ErrSchema when its schema is not this build's (only a writable
	// open migrates). Nothing is written, not even the access counts of
	// recalled memories; writes fail with ErrReadOnly.
	ReadOnly bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultPath returns $XDG_DATA_HOME/codecell/codecell.db, falling back to
// ~/.local/share when XDG_DATA_HOME is unset.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("default path: %w", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "codecell", "codecell.db"), nil
}

// Store is the SQLite database behind codecell's memory and server state.
// It is safe for concurrent use. Writes are serialized through one
// connection; reads use a pool and never wait for writes (WAL).
type Store struct {
	cfg  Config
	lim  memory.Limits
	ret  memory.Retention
	log  *slog.Logger
	now  func() time.Time
	path string
	w    *sql.DB // the single writer
	r    *sql.DB // readers; the writer itself for an in-memory database
	// fresh opens a new read-only connection (file databases only).
	fresh  connector
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	closed atomic.Bool
	// commonDocs is keywordCommonDocs; tests lower it.
	commonDocs int
	// consolidating runs one consolidate at a time per principal.
	consolidating memory.ConsolidateGate

	vmu   sync.RWMutex // guards the fields below; Reindex takes it to write
	emb   memory.Embedder
	vecOK error // nil when emb matches the stored vectors
	quant *memory.Quantizer
	codes *codeIndex
	// codesStale: the binary codes were made by another quantizer and a
	// read-only store cannot rebuild them; vector search scans exactly.
	codesStale bool

	skillSubs memory.SkillSubscribers

	// origin identifies this Store in skill_changes.
	origin string
	watch  skillWatch
}

var vecOnce sync.Once

// Open opens (creating if needed) the database at cfg.Path, applies the
// schema migrations it lacks, checks the embedder against the stored
// vectors and prunes expired records. A nil logger discards.
//
// A store whose vectors were built by another embedder still opens: the
// audit log, results, workspace and skills work, while memory operations
// fail with CodeEmbedderMismatch until Reindex runs. EmbedderStatus
// reports the mismatch.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "memory")
	vecOnce.Do(sqlite_vec.Auto)

	s := &Store{
		cfg:        cfg,
		lim:        cfg.Limits.Defaults(),
		ret:        cfg.Retention.Defaults(),
		log:        log,
		now:        cfg.Now,
		commonDocs: memory.KeywordCommonDocs,
		origin:     memory.NewID(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.ExactSearchLimit <= 0 {
		s.cfg.ExactSearchLimit = 2000
	}
	if s.cfg.CoarseFactor <= 0 {
		s.cfg.CoarseFactor = 30
	}
	if s.cfg.CodeIndexBytes == 0 {
		s.cfg.CodeIndexBytes = DefaultCodeIndexBytes
	}
	s.codes = newCodeIndex(s.cfg.CodeIndexBytes)
	s.emb = cfg.Embedder
	if s.emb == nil {
		s.emb = memory.NewWordsEmbedder()
	}
	if err := memory.CheckEmbedder(s.emb); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}

	path := cfg.Path
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		path = p
	}
	s.path = path
	if cfg.ReadOnly && path != InMemory {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, &NoStoreError{Path: path}
		}
	}
	if err := checkFTS5(ctx); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.openDB(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var err error
	if s.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1)); err != nil {
		s.closeDB()
		return nil, fmt.Errorf("open store: zstd: %w", err)
	}
	maxDec := uint64(max(s.lim.MaxResultBytes, s.lim.MaxFileBytes)) + 1<<20
	if s.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDec)); err != nil {
		s.closeDB()
		return nil, fmt.Errorf("open store: zstd: %w", err)
	}
	if cfg.ReadOnly {
		if err := s.checkSchema(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	} else if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.initVectors(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if !cfg.ReadOnly {
		if err := memory.UpgradeOffline(ctx, s, s.emb, s.log); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	if !cfg.ReadOnly {
		if _, err := s.Prune(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	interval := cfg.WatchInterval
	if path == InMemory || cfg.ReadOnly {
		interval = -1
	}
	if err := s.startWatch(ctx, interval); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	log.Debug("store open", "path", path, "embedder", s.emb.Name(), "dims", s.emb.Dimensions())
	return s, nil
}

// connector opens mattn/go-sqlite3 connections with a fixed DSN and a
// hook that sets per-connection pragmas, without registering a driver.
type connector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }

func (c connector) Driver() driver.Driver { return c.drv }

func (s *Store) openDB(path string) error {
	busy := s.cfg.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	syncMode := "NORMAL"
	if s.cfg.SyncFull {
		syncMode = "FULL"
	}
	// wal_autocheckpoint: a checkpoint copies the WAL's pages into the
	// database and syncs both files. With the default of 1,000 pages a
	// remember (about 20 WAL pages) paid for one every 50 commits, about
	// a fifth of its time; 10,000 pages (40 MiB) makes that a tenth as
	// often, and each checkpoint copies fewer pages per commit since hot
	// pages are rewritten many times between two. journal_size_limit
	// truncates the WAL back after a checkpoint that a large
	// transaction (a reindex) swelled.
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(`PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;
			PRAGMA wal_autocheckpoint = 10000; PRAGMA journal_size_limit = 67108864`, nil)
		return err
	}}
	if path == InMemory {
		// Each connection to ":memory:" is its own database: serve
		// everything through one.
		db := sql.OpenDB(connector{dsn: fmt.Sprintf(":memory:?_foreign_keys=on&_busy_timeout=%d", busy.Milliseconds()), drv: drv})
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		s.w, s.r = db, db
		return db.Ping()
	}
	n := s.cfg.Readers
	if n <= 0 {
		n = max(4, runtime.NumCPU())
	}
	if s.cfg.ReadOnly {
		// mode=ro: SQLite opens the file as it is, never creating it,
		// and no connection writes (s.w stays nil).
		s.fresh = connector{dsn: "file:" + escapePath(path) + fmt.Sprintf("?mode=ro&_busy_timeout=%d&_foreign_keys=on&_query_only=1&_stmt_cache_size=64",
			busy.Milliseconds()), drv: drv}
		s.r = sql.OpenDB(s.fresh)
		s.r.SetMaxOpenConns(n)
		s.r.SetMaxIdleConns(n)
		if err := s.r.Ping(); err != nil {
			s.r.Close()
			return err
		}
		return nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	base := "file:" + escapePath(path) + fmt.Sprintf(
		"?_journal_mode=WAL&_busy_timeout=%d&_foreign_keys=on&_synchronous=%s&_stmt_cache_size=64",
		busy.Milliseconds(), syncMode)
	s.w = sql.OpenDB(connector{dsn: base + "&_txlock=immediate", drv: drv})
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	// The writer creates the file and switches it to WAL before any reader
	// connects.
	if err := s.w.Ping(); err != nil {
		s.w.Close()
		return err
	}
	s.fresh = connector{dsn: base + "&_query_only=1", drv: drv}
	s.r = sql.OpenDB(s.fresh)
	s.r.SetMaxOpenConns(n)
	s.r.SetMaxIdleConns(n)
	s.r.SetConnMaxIdleTime(5 * time.Minute)
	if err := s.r.Ping(); err != nil {
		s.w.Close()
		s.r.Close()
		return err
	}
	return nil
}

// checkFTS5 fails with ErrNoFTS5 when the SQLite linked in lacks FTS5,
// which mattn/go-sqlite3 compiles in only with the build tag sqlite_fts5:
// without this check such a build fails later, at the first keyword
// search or migration, with "no such module: fts5". It asks an in-memory
// connection, so that a failed Open creates no file.
func checkFTS5(ctx context.Context) error {
	db := sql.OpenDB(connector{dsn: ":memory:", drv: &sqlite3.SQLiteDriver{}})
	defer db.Close()
	var ok bool
	if err := db.QueryRowContext(ctx, `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&ok); err != nil {
		return fmt.Errorf("check for FTS5: %w", err)
	}
	if !ok {
		return ErrNoFTS5
	}
	return nil
}

// escapePath makes a file name safe inside a file: URI.
func escapePath(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(p)
}

func (s *Store) closeDB() error {
	var errs []error
	if s.r != nil && s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// Close stops the store's watcher and closes the database. Calls after
// Close fail with ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stopWatch()
	if s.dec != nil {
		s.dec.Close()
	}
	if s.enc != nil {
		s.enc.Close()
	}
	if err := s.closeDB(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// DBPath returns the database file, or InMemory.
func (s *Store) DBPath() string { return s.path }

// Limits returns the limits in force.
func (s *Store) Limits() memory.Limits { return s.lim }

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits it
// when fn returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	if s.w == nil {
		return ErrReadOnly
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// read runs fn in a read transaction, so that it sees one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.r != s.w})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

// queryer is what *sql.DB and *sql.Tx have in common.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var _ queryer = (*sql.Tx)(nil)

func getMeta(ctx context.Context, q queryer, key string) (string, bool, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read meta %s: %w", key, err)
	}
	return v, true, nil
}

func setMeta(ctx context.Context, q queryer, key, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("write meta %s: %w", key, err)
	}
	return nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil when it says ok.
//
// It runs on a connection of its own: FTS5's check reads the index
// structure that a connection cached when it last used the table, without
// first looking whether another connection changed it since (as a query
// does), so on a pooled reader it can report corruption that is not on
// disk.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	db := s.r
	if s.fresh.drv != nil {
		db = sql.OpenDB(s.fresh)
		defer db.Close()
	}
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}

// ms converts a time to the stored form, Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

var _ io.Closer = (*Store)(nil)

// Ready reports whether the store can serve: it answers a query on a
// reader and on the writer, and its schema is this build's. The error
// says which of these failed.
func (s *Store) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	var v int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("store unreachable: %w", err)
	}
	if want := SchemaVersion(); v != want {
		return fmt.Errorf("%w: the database has schema version %d, this build needs %d", memory.ErrSchema, v, want)
	}
	if s.w != nil && s.w != s.r {
		if err := s.w.PingContext(ctx); err != nil {
			return fmt.Errorf("store writer unreachable: %w", err)
		}
	}
	return nil
}

// PoolStats returns the statistics of the store's connections: the
// readers' pool and the single writer added together.
func (s *Store) PoolStats() memory.PoolStats {
	var ps memory.PoolStats
	add := func(db *sql.DB) {
		st := db.Stats()
		ps.MaxOpen += st.MaxOpenConnections
		ps.Open += st.OpenConnections
		ps.InUse += st.InUse
		ps.Idle += st.Idle
		ps.WaitCount += st.WaitCount
		ps.WaitDuration += st.WaitDuration
	}
	if s.r != nil {
		add(s.r)
	}
	if s.w != nil && s.w != s.r {
		add(s.w)
	}
	return ps
}
