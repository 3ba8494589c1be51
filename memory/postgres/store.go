// Package postgres is codecell's store on PostgreSQL, for a team that
// runs several codecell instances on one database. It implements the
// interfaces that package memory's tools and package mcpserver declare
// (audit log, stored results, workspace, skills, tool shapes, memories
// and recall) with the rules of package memory: the same validation,
// errors, limits and rank fusion, so that one contract suite
// (memory/storetest) holds for both backends. Its files mirror those of
// memory/sqlite. It does not own the tools (memory.RegisterTools), the
// MCP surface, nor the copy from SQLite (memory/storecopy), and links no
// SQLite.
//
// Instances share everything through the database: schema migrations run
// once under an advisory lock; skills changes reach every instance by
// LISTEN/NOTIFY. Vector recall runs on pgvector's HNSW index when the
// database has the extension (pgvector.go); otherwise the binary codes of
// the coarse vector pass are held in memory by every instance and kept
// current from a change table read before each search (see
// RATIONALE.md).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/klauspost/compress/zstd"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Config configures a Store.
type Config struct {
	// DSN is the PostgreSQL connection string (postgres://… or key=value).
	DSN string
	// Embedder turns text into vectors; nil means memory.NewHashEmbedder
	// of memory.DefaultDimensions.
	Embedder memory.Embedder
	// MaxConns is the pool size (default 16).
	MaxConns int32
	// Limits bounds what callers may store (memory.Limits' defaults).
	Limits memory.Limits
	// Retention bounds how long server records are kept; see Prune.
	Retention memory.Retention
	// ExactSearchLimit is the number of a principal's vectors up to which
	// vector recall scans exactly (default 2000, as sqlite.Config).
	ExactSearchLimit int
	// CoarseFactor: binary-code candidates per wanted result (default 30).
	CoarseFactor int
	// KeywordCommonDocs: on a principal with more memories than this,
	// keyword recall leaves out query words found in more than this many
	// of them (default memory.KeywordCommonDocs; negative: never).
	KeywordCommonDocs int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Vectors chooses how vector recall runs: VectorsAuto (pgvector when
	// the database can create the extension, else binary codes),
	// VectorsPgvector (fail to open without it) or VectorsCodes (never
	// pgvector). "" is VectorsAuto. See pgvector.go.
	Vectors string
	// EfSearch is the least hnsw.ef_search of a vector recall on
	// pgvector (default 40, pgvector's own): a recall of depth d uses
	// max(EfSearch, 2d), at most 1000. Higher finds more of the true
	// nearest neighbours, more slowly.
	EfSearch int
}

// Store is codecell's store on a PostgreSQL database. It is safe for
// concurrent use, and several Stores (instances) may share a database.
type Store struct {
	cfg    Config
	lim    memory.Limits
	ret    memory.Retention
	log    *slog.Logger
	now    func() time.Time
	pool   *pgxpool.Pool
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	origin string

	// vmu guards the embedder, the quantizer and vecErr; Reindex holds it
	// to write, memory operations to read.
	vmu   sync.RWMutex
	emb   memory.Embedder
	quant *memory.Quantizer
	// vecErr, when set, wraps memory.ErrEmbedderMismatch: the stored
	// vectors are another embedder's, and memory operations fail until
	// Reindex.
	vecErr error
	// pgv: vector recall runs on pgvector's HNSW index (decided at
	// Open). fillEmb: the database has memory_embeddings, which every
	// write of a vector fills, whatever this instance searches with.
	// Both are guarded by vmu.
	pgv     bool
	fillEmb bool
	closed  atomic.Bool

	codes codeSets

	smu       sync.Mutex
	skillSubs map[int]func(memory.SkillChange)
	nextSub   int

	stop   context.CancelFunc
	wg     sync.WaitGroup
	listen chan struct{} // closed once the listener first listens
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Channels of NOTIFY.
const skillsChannel = "codecell_skills"

// migrationLock is the key of the advisory lock that migrations hold.
const migrationLock = 0x636f646563656c6c // "codecell"

// codesLock is the key of the transaction-level advisory lock that every
// writer of memory_code_log takes, so that its sequence numbers commit in
// order and a reader that saw entry n has seen every entry before it.
const codesLock = 0x636f646573 // "codes"

// Open connects to the database, applies the migrations it lacks (once
// across instances that start together), checks the embedder against the
// stored vectors and starts listening for other instances' changes. A nil
// logger discards.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "memory", "backend", "postgres")
	s := &Store{cfg: cfg, lim: cfg.Limits.Defaults(), ret: cfg.Retention.Defaults(), log: log, now: cfg.Now,
		origin: memory.NewID(), skillSubs: map[int]func(memory.SkillChange){}, listen: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.ExactSearchLimit <= 0 {
		s.cfg.ExactSearchLimit = 2000
	}
	if s.cfg.CoarseFactor <= 0 {
		s.cfg.CoarseFactor = 30
	}
	switch {
	case s.cfg.KeywordCommonDocs == 0:
		s.cfg.KeywordCommonDocs = memory.KeywordCommonDocs
	case s.cfg.KeywordCommonDocs < 0:
		s.cfg.KeywordCommonDocs = 0
	}
	s.emb = cfg.Embedder
	if s.emb == nil {
		s.emb = memory.NewHashEmbedder(memory.DefaultDimensions)
	}
	if err := memory.CheckEmbedder(s.emb); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.quant = memory.NewQuantizer(s.emb.Dimensions())
	s.codes.sets, s.codes.quant = map[string]*memory.CodeSet{}, s.quant
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("open store: dsn: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if pc.MaxConns <= 0 {
		pc.MaxConns = 16
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1)); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open store: zstd: %w", err)
	}
	maxDec := uint64(max(s.lim.MaxResultBytes, s.lim.MaxFileBytes)) + 1<<20
	if s.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDec)); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open store: zstd: %w", err)
	}
	if _, err := Migrate(ctx, s.pool); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.vmu.Lock()
	err = s.checkEmbedder(ctx)
	if err == nil {
		err = s.setupVectors(ctx)
	}
	s.vmu.Unlock()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.listenLoop(lctx)
	}()
	select {
	case <-s.listen:
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("open store: %w", ctx.Err())
	}
	return s, nil
}

// Close stops listening and closes the pool. Calls after Close fail with
// memory.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
	if s.pool != nil {
		s.pool.Close()
	}
	if s.dec != nil {
		s.dec.Close()
	}
	if s.enc != nil {
		s.enc.Close()
	}
	return nil
}

// Limits returns the limits in force.
func (s *Store) Limits() memory.Limits { return s.lim }

// Pool is the connection pool, for health checks and metrics.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ToolSet is the store's operations for memory.RegisterTools.
func (s *Store) ToolSet() memory.ToolSet {
	return memory.ToolSet{Limits: s.lim, Now: s.now, Memories: s, Graph: s, Tasks: s, Consolidator: s, Workspace: s}
}

// Migration is one schema migration, numbered by its file name.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version number", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: base, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

// Migrate applies the migrations the database lacks, each in its own
// transaction, holding the advisory lock migrationLock on one connection
// for the whole run: instances that start together wait for the first,
// then find nothing to do. It returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if len(ms) > 0 && have > ms[len(ms)-1].Version {
		return nil, fmt.Errorf("migrate: %w: the database is at version %d, newer than this binary's %d", memory.ErrSchema, have, ms[len(ms)-1].Version)
	}
	var applied []int
	for _, m := range ms {
		if m.Version <= have {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// SchemaVersion is the newest migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// checkEmbedder records the embedder in a new store, and notes in vecErr
// when the stored vectors are another embedder's: memory operations then
// fail with memory.CodeEmbedderMismatch until Reindex (as on SQLite). The
// caller holds vmu to write.
func (s *Store) checkEmbedder(ctx context.Context) error {
	want := fmt.Sprintf("%s/%d", s.emb.Name(), s.emb.Dimensions())
	_, err := s.pool.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('embedder', $1) ON CONFLICT (key) DO NOTHING`, want)
	if err != nil {
		return fmt.Errorf("embedder: %w", err)
	}
	var have string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'embedder'`).Scan(&have); err != nil {
		return fmt.Errorf("embedder: %w", err)
	}
	s.vecErr = nil
	if have != want {
		s.vecErr = fmt.Errorf("%w: the database's vectors were made by %s, the configured embedder is %s; configure %s again, or run `codecell memory reindex`",
			memory.ErrEmbedderMismatch, have, want, have)
		s.log.Warn("embedder mismatch; memory operations disabled until reindex", "stored", have, "configured", want)
	}
	return nil
}

// vectorsReady holds vmu to read while a memory operation uses the
// embedder and quantizer, and fails with memory.CodeEmbedderMismatch
// when the stored vectors are another embedder's; it checks the database
// again first, in case another instance reindexed with this one's
// embedder. The caller calls release when err is nil.
func (s *Store) vectorsReady(ctx context.Context) (release func(), err error) {
	s.vmu.RLock()
	if s.vecErr == nil {
		return s.vmu.RUnlock, nil
	}
	s.vmu.RUnlock()
	s.vmu.Lock()
	err = s.checkEmbedder(ctx)
	if err == nil && s.vecErr == nil {
		// Another instance reindexed with this one's embedder: the
		// embeddings may need their table again.
		err = s.ensureEmbeddings(ctx)
	}
	if err == nil && s.vecErr != nil {
		err = &tools.Error{Code: memory.CodeEmbedderMismatch, Message: s.vecErr.Error(), Err: s.vecErr}
	}
	s.vmu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vectorsReady(ctx)
}

// tx runs fn in a transaction and commits it when fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// listenLoop listens for other instances' skill changes until ctx ends,
// reconnecting after a lost connection; after a reconnect it tells the
// subscribers that anything may have changed (a change with no name).
func (s *Store) listenLoop(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, &first)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("lost the notification connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, first *bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if *first {
			*first = false
			close(s.listen)
		}
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN `+skillsChannel); err != nil {
		conn.Conn().Close(ctx)
		return err
	}
	if *first {
		*first = false
		close(s.listen)
	} else {
		s.notifySkills(memory.SkillChange{Everyone: true})
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection is in an unknown state: do not return it
			// to the pool as it is.
			conn.Conn().Close(context.Background())
			return err
		}
		if n.Channel == skillsChannel {
			s.skillNotification(n.Payload)
		}
	}
}

// IsUniqueViolation reports whether err is a unique-key violation.
func isCode(err error, code string) bool {
	var pe interface{ SQLState() string }
	return errors.As(err, &pe) && pe.SQLState() == code
}

const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func timePtr(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := fromMS(*v)
	return &t
}

func nullMS(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

func provArg(p []byte) *string {
	if p == nil {
		return nil
	}
	s := string(p)
	return &s
}

func provOf(p *string) []byte {
	if p == nil {
		return nil
	}
	return []byte(*p)
}

// Register describes memory's categories in r and registers every memory
// and workspace tool over this store (memory.RegisterTools).
func (s *Store) Register(r *tools.Registry) error { return memory.RegisterTools(r, s.ToolSet()) }

// Ready reports whether the store can serve: the database answers and
// its schema is the one this binary's migrations make (another instance
// may have migrated it further, or not yet at all). For a readiness
// probe.
func (s *Store) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	have, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	ms, err := Migrations()
	if err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	if want := ms[len(ms)-1].Version; have != want {
		return fmt.Errorf("ready: %w: the database's schema is at version %d, this binary's at %d", memory.ErrSchema, have, want)
	}
	return nil
}
