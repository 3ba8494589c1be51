package mcpserver

import (
	"context"
	"time"

	"github.com/codecell/codecell/memory"
)

// Store is what the server keeps in the store: the audit log, stored
// results, workspace files and skills. Both of memory's backends
// implement it (checked in cmd/codecell); each part is a small
// interface, declared here where it is used.
type Store interface {
	auditLog
	resultStore
	workspaceFiles
	skillStore
	planStore
	cacheStore
}

// auditLog records runs, their tool calls and the HTTP requests those
// sent.
type auditLog interface {
	RecordExecution(ctx context.Context, e memory.Execution) error
	RecordToolCalls(ctx context.Context, calls ...memory.ToolCall) error
	RecordHTTPRequests(ctx context.Context, reqs ...memory.HTTPRequest) error
}

// resultStore keeps whole results that the model got cut.
type resultStore interface {
	PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error)
	GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error)
}

// workspaceFiles reads the caller's workspace files.
type workspaceFiles interface {
	ReadFile(ctx context.Context, path string) (memory.FileInfo, []byte, error)
}

// skillStore keeps the programs saved as skills: each principal's own,
// and the snapshots owners published.
type skillStore interface {
	SaveSkill(ctx context.Context, sk memory.Skill) (memory.Skill, error)
	GetSkill(ctx context.Context, name string) (memory.Skill, error)
	DeleteSkill(ctx context.Context, name string) error
	PublishSkill(ctx context.Context, name string) (memory.Skill, error)
	UnpublishSkill(ctx context.Context, name string) error
	CallableSkills(ctx context.Context) ([]memory.Skill, error)
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
