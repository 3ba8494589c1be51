package engine

import (
	"context"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Store is what the engine keeps in the store: the audit log, stored
// results, skills, plans and the cache. Both of memory's backends
// implement it (checked in cmd/codecell); each part is a small
// interface, declared here where it is used.
type Store interface {
	auditLog
	resultStore
	skillStore
	planStore
	cacheStore
}

// auditLog records runs, their tool calls and the HTTP requests those
// sent.
type auditLog interface {
	RecordAudit(ctx context.Context, recs ...memory.AuditRecord) error
}

// resultStore keeps whole results that the model got cut.
type resultStore interface {
	PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error)
}

// skillStore keeps the programs saved as skills: each principal's own,
// and the snapshots owners published.
type skillStore interface {
	SaveSkill(ctx context.Context, sk memory.Skill) (memory.Skill, error)
	GetSkill(ctx context.Context, name string) (memory.Skill, error)
	DeleteSkill(ctx context.Context, name string) error
	PublishSkill(ctx context.Context, name string) (memory.Skill, error)
	UnpublishSkill(ctx context.Context, name string) error
	// ListCallableSkills reads a page of names and descriptions, no
	// code (skills.list); PublishedSkill one snapshot with its code (a
	// change, skills.accept); AllSkills and PublishedSkills every
	// skill with its code, for (re)loading the catalogue only.
	ListCallableSkills(ctx context.Context, q memory.SkillQuery) (memory.SkillPage, error)
	PublishedSkill(ctx context.Context, name string) (memory.Skill, error)
	AllSkills(ctx context.Context) ([]memory.Skill, error)
	PublishedSkills(ctx context.Context) ([]memory.Skill, error)
	OnSkillChange(fn func(memory.SkillChange)) (cancel func())
	// SkillPin and PinSkill keep which published snapshot of another's
	// skill the caller runs (skills.go).
	SkillPin(ctx context.Context, name string) (memory.SkillPin, error)
	PinSkill(ctx context.Context, p memory.SkillPin) (memory.SkillPin, error)
}

// planStore keeps the plans of dry runs until they are committed once.
type planStore interface {
	SavePlan(ctx context.Context, in memory.SavePlanInput) (string, memory.Plan, error)
	ClaimPlan(ctx context.Context, id, commitExecutionID string) (memory.Plan, error)
	FinishPlanStep(ctx context.Context, id string, seq int, status, errorCode string) error
	FinishPlan(ctx context.Context, id, state string) error
}

// cacheStore keeps the caller's cache entries: cache.get/set/delete and
// memoised results.
type cacheStore interface {
	CacheGet(ctx context.Context, kind, key string) (memory.CacheEntry, error)
	CacheSet(ctx context.Context, in memory.CacheSetInput) (time.Time, error)
	CacheDelete(ctx context.Context, kind, key string) (bool, error)
}

// asCaller returns ctx for the store, acting as principal.
func asCaller(ctx context.Context, principal string) context.Context {
	return tools.WithCaller(ctx, tools.Caller{Principal: principal})
}
