package memory

import (
	"time"
)

// Limits bounds the size of what callers store. Zero fields take the
// defaults shown.
type Limits struct {
	MaxContentBytes  int   // memory content and skill descriptions: 16 KiB
	MaxMetadataBytes int   // metadata and properties objects, as JSON: 16 KiB
	MaxTags          int   // tags per memory: 32
	MaxResultBytes   int64 // one stored result, uncompressed: 32 MiB
	// MaxPrincipalResultsBytes bounds a principal's stored results
	// together, compressed: 128 MiB. A PutResult past it evicts that
	// principal's oldest results, never another's.
	MaxPrincipalResultsBytes int64
	// MaxResultsBytes bounds every principal's stored results together,
	// compressed: 1 GiB. A PutResult past it evicts the oldest results
	// of the principal holding the most bytes, then of the next.
	MaxResultsBytes   int64
	MaxFileBytes      int64 // one workspace file, uncompressed: 8 MiB
	MaxWorkspaceBytes int64 // a principal's workspace, uncompressed: 256 MiB
	MaxWorkspaceFiles int   // files in a principal's workspace: 10000
	MaxSkillCodeBytes int   // skill source: 100 KB
	MaxSkills         int   // skills per principal: 500
	// MaxSkillPins bounds the skill pins a principal keeps: 1000. A pin
	// past it makes the principal's oldest go, first those of skills no
	// longer published by the pin's owner.
	MaxSkillPins int
	// MaxCacheBytes bounds the values of every principal's cache
	// entries together (cache.set and memoised results): 256 MiB. A
	// CacheSet past it evicts the oldest entries, expired ones first,
	// whoever set them — never a journal (CacheJournal), which it does
	// not count either.
	MaxCacheBytes int64
	// MaxPrincipalJournalBytes bounds a principal's journals of runs
	// waiting for the client's input (CacheJournal) together: 64 MiB. A
	// journal set past it evicts that principal's oldest journals,
	// expired ones first, never another's.
	MaxPrincipalJournalBytes int64
	// MaxPrincipalPlanBytes bounds the bytes of a principal's live plans
	// (planned, not expired) together: their steps' tools, arguments and
	// provenance as stored, 8 MiB. A SavePlan past it fails with
	// CodeQuotaExceeded; committing a plan or letting it expire frees its
	// share.
	MaxPrincipalPlanBytes int64
	// A principal's memories and knowledge graph (see CheckUsage): how
	// many memories (100000) and their content, tags and metadata
	// together (256 MiB); how many entities (100000) and relations
	// (200000), and their names, descriptions, types and properties
	// together (64 MiB). A write that would take a principal past one
	// fails with CodeQuotaExceeded.
	MaxMemories       int
	MaxMemoryBytes    int64
	MaxGraphEntities  int
	MaxGraphRelations int
	MaxGraphBytes     int64
}

// Defaults returns l with every unset limit at its default.
func (l Limits) Defaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxContentBytes, 16<<10)
	def(&l.MaxMetadataBytes, 16<<10)
	def(&l.MaxTags, 32)
	def64(&l.MaxResultBytes, 32<<20)
	def64(&l.MaxPrincipalResultsBytes, 128<<20)
	def64(&l.MaxResultsBytes, 1<<30)
	def64(&l.MaxFileBytes, 8<<20)
	def64(&l.MaxWorkspaceBytes, 256<<20)
	def(&l.MaxWorkspaceFiles, 10000)
	def(&l.MaxSkillCodeBytes, 100_000)
	def(&l.MaxSkills, 500)
	def(&l.MaxSkillPins, 1000)
	def64(&l.MaxCacheBytes, 256<<20)
	def64(&l.MaxPrincipalJournalBytes, 64<<20)
	def64(&l.MaxPrincipalPlanBytes, 8<<20)
	def(&l.MaxMemories, 100_000)
	def64(&l.MaxMemoryBytes, 256<<20)
	def(&l.MaxGraphEntities, 100_000)
	def(&l.MaxGraphRelations, 200_000)
	def64(&l.MaxGraphBytes, 64<<20)
	return l
}

// Retention bounds the server records that Prune removes. A zero field
// takes its default; a negative one means no limit.
type Retention struct {
	ExecutionsMaxAge  time.Duration // audit records: 30 days
	ExecutionsMaxRows int           // audit records: 100000 (tool calls go with their execution)
	ResultsMaxAge     time.Duration // stored results: 7 days
	ResultsMaxRows    int           // stored results: 10000
	ResultsMaxBytes   int64         // stored results, compressed: 1 GiB
	// EpisodicMaxAge removes episodic memories older than this (by the
	// time they happened); default: no limit (negative).
	EpisodicMaxAge time.Duration
}

// Defaults returns r with every unset field at its default.
func (r Retention) Defaults() Retention {
	if r.ExecutionsMaxAge == 0 {
		r.ExecutionsMaxAge = 30 * 24 * time.Hour
	}
	if r.ExecutionsMaxRows == 0 {
		r.ExecutionsMaxRows = 100_000
	}
	if r.ResultsMaxAge == 0 {
		r.ResultsMaxAge = 7 * 24 * time.Hour
	}
	if r.ResultsMaxRows == 0 {
		r.ResultsMaxRows = 10_000
	}
	if r.ResultsMaxBytes == 0 {
		r.ResultsMaxBytes = 1 << 30
	}
	if r.EpisodicMaxAge == 0 {
		r.EpisodicMaxAge = -1
	}
	return r
}
