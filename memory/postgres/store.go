package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/klauspost/compress/zstd"

	"github.com/codecell/codecell/memory"
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
	cfg  Config
	lim  memory.Limits
	ret  memory.Retention
	log  *slog.Logger
	now  func() time.Time
	pool *pgxpool.Pool
	// db runs statements on the pool with their text as PostgreSQL
	// holds it (text.go); every query of the store goes through it or a
	// transaction of beginFunc.
	db     textDB
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	origin string
	// consolidating runs one consolidate at a time per principal.
	consolidating memory.ConsolidateGate

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

	skillSubs memory.SkillSubscribers

	stop   context.CancelFunc
	wg     sync.WaitGroup
	listen chan struct{} // closed once the listener first listens
}

// Channels of NOTIFY.
const skillsChannel = "codecell_skills"

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
		origin: memory.NewID(), listen: make(chan struct{})}
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
		s.emb = memory.NewWordsEmbedder()
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
	s.db = textDB{s.pool}
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
	if err == nil {
		err = memory.UpgradeOffline(ctx, s, s.emb, s.log) // instances of an earlier version fail their memory operations from then on, as after a reindex
	}
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

// tx runs fn in a transaction and commits it when fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return memory.ErrClosed
	}
	return s.beginFunc(ctx, pgx.TxOptions{}, fn)
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

// PoolStats returns the statistics of the store's pgxpool: MaxOpen is
// its MaxConns; Open counts the connections open or being opened, InUse
// those acquired (the notification listener holds one for good) and
// Idle the rest; WaitCount and WaitDuration count the acquires that
// waited because the pool was empty, and the time they waited.
func (s *Store) PoolStats() memory.PoolStats {
	st := s.pool.Stat()
	return memory.PoolStats{
		MaxOpen:      int(st.MaxConns()),
		Open:         int(st.TotalConns()),
		InUse:        int(st.AcquiredConns()),
		Idle:         int(st.IdleConns()),
		WaitCount:    st.EmptyAcquireCount(),
		WaitDuration: st.EmptyAcquireWaitTime(),
	}
}
