package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// Category descriptions for the catalogue (tools.Registry.DescribeCategory).
const (
	MemoryCategory           = "memory"
	MemoryCategorySummary    = "Long-term memory: remember and recall facts, events, how-tos and tasks (hybrid semantic + keyword search), a knowledge graph of entities, consolidation."
	WorkspaceCategory        = "workspace"
	WorkspaceCategorySummary = "Files that persist across runs and sessions: write, read, list and remove text or base64 data by relative path."
)

// RegisterTools describes both categories in r and registers the tools of
// ts: a backend that lacks a group of operations (a nil field) goes
// without its tools. memory.recall's expand asks for llm.call in r
// unless ts.Models says otherwise.
func RegisterTools(r *tools.Registry, ts ToolSet) error {
	if ts.Models == nil {
		ts.Models = r
	}
	if err := r.DescribeCategory(MemoryCategory, MemoryCategorySummary); err != nil {
		return err
	}
	if err := r.DescribeCategory(WorkspaceCategory, WorkspaceCategorySummary); err != nil {
		return err
	}
	return r.Register(append(ts.MemoryTools(), ts.WorkspaceTools()...)...)
}

// ToolSet is what the memory and workspace tools call, in groups: each
// group is an interface of the operations its tools call, so that the
// tools register over any backend (this package's Store, or
// memory/postgres). A nil group has no tools.
type ToolSet struct {
	// Limits are the backend's limits in force, shown in the schemas.
	Limits Limits
	// Now is the backend's clock (task_list reports it); nil is time.Now.
	Now          func() time.Time
	Memories     MemoryOps
	Graph        GraphOps
	Tasks        TaskOps
	Consolidator ConsolidateOps
	Workspace    WorkspaceOps
	// Models reaches the caller's model for memory.recall's expand: it
	// calls the llm.call tool (a *tools.Registry, where the server's
	// program runtime registers llm.*). Nil: expand says no model can
	// be asked.
	Models ToolCaller
}

// ToolCaller calls a tool by name, as a *tools.Registry does.
type ToolCaller interface {
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

func (ts ToolSet) now() time.Time {
	if ts.Now == nil {
		return time.Now()
	}
	return ts.Now()
}

// MemoryOps is what memory.remember, recall, get, update, forget and
// stats call.
type MemoryOps interface {
	Remember(ctx context.Context, in RememberInput) (Memory, error)
	Recall(ctx context.Context, in RecallInput) (RecallResult, error)
	Get(ctx context.Context, id int64) (Memory, error)
	Update(ctx context.Context, in UpdateInput) (Memory, error)
	Forget(ctx context.Context, in ForgetInput) (ForgetResult, error)
	MemoryStats(ctx context.Context) (MemoryStats, error)
}

// GraphOps is what memory.entity_upsert, relate, neighbors and path call.
type GraphOps interface {
	UpsertEntity(ctx context.Context, in EntityInput) (Entity, bool, error)
	Relate(ctx context.Context, in RelateInput) (RelateResult, error)
	Neighbors(ctx context.Context, in NeighborsInput) (NeighborsResult, error)
	Path(ctx context.Context, in PathInput) (PathResult, error)
}

// TaskOps is what memory.task_add, task_list and task_update call.
type TaskOps interface {
	AddTask(ctx context.Context, in TaskInput) (Task, error)
	ListTasks(ctx context.Context, q TaskQuery) ([]Task, error)
	UpdateTask(ctx context.Context, in TaskUpdate) (Task, error)
}

// ConsolidateOps is what memory.consolidate calls.
type ConsolidateOps interface {
	Consolidate(ctx context.Context, in ConsolidateInput) (ConsolidateResult, error)
}

// JSON Schema fragments shared by the tools.
const (
	layerEnum    = `{"type": "string", "enum": ["episodic", "semantic", "procedural", "prospective"]}`
	statusEnum   = `{"type": "string", "enum": ["open", "in_progress", "done", "cancelled"]}`
	dateTime     = `{"type": "string", "format": "date-time", "description": "RFC 3339 time, e.g. 2025-01-31T09:00:00Z."}`
	tagsSchema   = `{"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}, "description": "Short labels, stored lower-case."}`
	entityNames  = `{"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}, "description": "Names of knowledge-graph entities to link; created if missing."}`
	memorySchema = `{"type": "object", "properties": {
		"id": {"type": "integer"}, "layer": ` + layerEnum + `, "content": {"type": "string"},
		"tags": {"type": "array", "items": {"type": "string"}}, "metadata": {"type": "object"},
		"importance": {"type": "number"}, "source": {"type": "string"}, "session": {"type": "string"},
		"occurred_at": {"type": "string", "format": "date-time"}, "due_at": {"type": "string", "format": "date-time"},
		"status": ` + statusEnum + `, "entities": {"type": "array", "items": {"type": "string"}},
		"created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"},
		"accessed_at": {"type": "string", "format": "date-time"}, "access_count": {"type": "integer"},
		"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."},
		"merged_from": {"type": "array", "items": {"type": "object", "properties": {
			"id": {"type": "integer"}, "content": {"type": "string"}, "content_bytes": {"type": "integer"}, "content_sha256": {"type": "string"},
			"similarity": {"type": "number"}, "overlap": {"type": "number"}, "merged_at": {"type": "string", "format": "date-time"},
			"record": {"type": "object", "description": "The merged memory as it was, without its metadata and entities (the survivor gained them).", "properties": {
				"id": {"type": "integer"}, "layer": {"type": "string"}, "content": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
				"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}}}}}}
	}, "required": ["id", "layer", "content", "tags", "metadata", "importance", "created_at", "updated_at", "access_count"]}`
	entitySchema = `{"type": "object", "properties": {
		"id": {"type": "integer"}, "name": {"type": "string"}, "type": {"type": "string"}, "description": {"type": "string"},
		"properties": {"type": "object"}, "created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"},
		"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}
	}, "required": ["id", "name", "type", "properties"]}`
	relationSchema = `{"type": "object", "properties": {
		"id": {"type": "integer"}, "from": {"type": "string"}, "to": {"type": "string"}, "type": {"type": "string"},
		"weight": {"type": "number"}, "properties": {"type": "object"},
		"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}
	}, "required": ["id", "from", "to", "type", "weight"]}`
	linkSchema = `{"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "layer": {"type": "string"}, "content": {"type": "string"},
		"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}}}}`
)

var (
	errInvalidDoc = tools.ErrorDoc{Code: tools.CodeInvalidArguments, Description: "An argument has the wrong type or value; the message names it and says what is allowed."}
	errNotFound   = tools.ErrorDoc{Code: tools.CodeNotFound, Description: "No such memory (or entity) for the caller; a merged memory names its survivor."}
	errTooLarge   = tools.ErrorDoc{Code: CodeTooLarge, Description: "Content or metadata is over the size limit given in the message."}
	errEmbedDown  = tools.ErrorDoc{Code: CodeEmbedderUnavailable, Description: "The embedding service could not be reached or failed; nothing was changed. Retry later."}
	errEmbedMis   = tools.ErrorDoc{Code: CodeEmbedderMismatch, Description: "The configured embedder differs from the one that built the stored vectors, or returned vectors of the wrong size; an operator must reindex."}
	errConflict   = tools.ErrorDoc{Code: CodeConflict, Description: "The memory changed concurrently; retry."}
	errBusy       = tools.ErrorDoc{Code: CodeBusy, Description: "Another consolidate of the caller's is still running (one at a time per principal); await it, then call again."}
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// MemoryTools returns the tools of the groups ts has (category "memory").
// Their handlers act for tools.CallerFrom(ctx).Principal.
func (ts ToolSet) MemoryTools() []tools.Tool {
	maxContent := ts.Limits.Defaults().MaxContentBytes
	var out []tools.Tool
	if m := ts.Memories; m != nil {
		out = append(out, []tools.Tool{
			{
				Name:    "memory.remember",
				Summary: "Store a memory (fact, event, how-to or task) with tags, metadata and importance; returns it with its id.",
				Description: "Remember stores one memory for the caller. Layers: semantic (facts, the default), episodic (events: when, where from), " +
					"procedural (how-tos) and prospective (tasks and goals; prefer memory.task_add). The memory is embedded for semantic search " +
					"and indexed for keyword search, so memory.recall finds it by meaning or by words. Link it to knowledge-graph entities with " +
					"entities (created if missing). The session defaults to the current one.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"content": {"type": "string", "minLength": 1, "maxLength": %d, "description": "The text to remember."},
					"layer": %s,
					"tags": %s,
					"metadata": {"type": "object", "description": "Any JSON object stored with the memory."},
					"importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "0 to 1, default 0.5."},
					"source": {"type": "string", "maxLength": 500, "description": "Where it came from (a tool, a URL, a person)."},
					"session": {"type": "string", "maxLength": 200, "description": "Session the memory belongs to; default: the current session."},
					"occurred_at": %s,
					"due_at": %s,
					"status": %s,
					"entities": %s
				}, "required": ["content"], "additionalProperties": false}`, maxContent, layerEnum, tagsSchema, dateTime, dateTime, statusEnum, entityNames)),
				OutputSchema: raw(memorySchema),
				Examples: []tools.Example{{
					Title: "Remember a fact about a project",
					Args:  raw(`{"content": "The billing service deploys with make deploy-billing", "layer": "procedural", "tags": ["billing", "deploy"], "entities": ["billing-service"]}`),
					Result: raw(`{"id": 42, "layer": "procedural", "content": "The billing service deploys with make deploy-billing", "tags": ["billing", "deploy"], "metadata": {}, "importance": 0.5,
						"entities": ["billing-service"], "created_at": "2025-01-31T09:00:00Z", "updated_at": "2025-01-31T09:00:00Z", "access_count": 0}`),
				}},
				Errors:     []tools.ErrorDoc{errInvalidDoc, errTooLarge, errEmbedDown, errEmbedMis},
				Notes:      "Tags are lower-cased and de-duplicated. occurred_at applies to episodic memories (default now); due_at and status to prospective ones.",
				Related:    []string{"memory.recall", "memory.update", "memory.task_add", "memory.entity_upsert"},
				Positional: []string{"content"},
				Handler:    tools.Handle(m.Remember),
			},
			{
				Name:    "memory.recall",
				Summary: "Search memories by meaning and keywords (hybrid), with filters; returns the best matches with scores.",
				Description: "Recall ranks the caller's memories by vector similarity to the query and by BM25 keyword relevance, and fuses the two " +
					"rankings (reciprocal rank fusion). Filter by layer(s), tags (all must match), session, time range (since/until, on when an event " +
					"happened or else when the memory was stored) or a linked entity. recency_weight blends in how recent a memory is. The same " +
					"query on the same memories gives the same answer. Each returned memory counts an access.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"query": {"type": "string", "minLength": 1, "maxLength": %d, "description": "What to look for, in words."},
					"layer": %s,
					"layers": {"type": "array", "items": %s},
					"tags": %s,
					"session": {"type": "string"},
					"since": %s,
					"until": %s,
					"entity": {"type": "string", "description": "Only memories linked to this entity."},
					"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
					"mode": {"type": "string", "enum": ["hybrid", "vector", "keyword"], "default": "hybrid"},
					"recency_weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0, "description": "0: relevance only; 1: recency only."},
					"half_life_days": {"type": "number", "exclusiveMinimum": 0, "maximum": 36500, "default": 30},
					"exact": {"type": "boolean", "description": "On a large store, scan every vector and rank on every query word (slower)."},
					"expand": {"type": "boolean", "description": "Ask the client's model (llm.call, counted against the llm budgets) for words a memory answering the query may use, and look for them too: for questions worded unlike what was stored."}
				}, "required": ["query"], "additionalProperties": false}`, maxContent, layerEnum, layerEnum, tagsSchema, dateTime, dateTime)),
				OutputSchema: raw(`{"type": "object", "properties": {
					"results": {"type": "array", "items": {"allOf": [` + memorySchema + `, {"type": "object", "properties": {
						"score": {"type": "number"}, "vector_score": {"type": "number"}, "vector_rank": {"type": "integer"},
						"keyword_score": {"type": "number"}, "keyword_rank": {"type": "integer"}, "recency": {"type": "number"}}, "required": ["score"]}]}},
					"mode": {"type": "string"}, "exact": {"type": "boolean"},
					"common_words": {"type": "array", "items": {"type": "string"}, "description": "Query words too common to rank by keyword (large stores)."},
					"expansion": {"type": "object", "description": "With expand: the terms the model proposed and looked for, or why none were (the recall went on without them).",
						"properties": {"terms": {"type": "array", "items": {"type": "string"}}, "error": {"type": "string"}}, "required": ["terms"]}
				}, "required": ["results", "mode", "exact"]}`),
				Annotations: tools.Annotations{ReadOnly: true},
				Examples: []tools.Example{{
					Title: "Find how to deploy billing, newest first",
					Args:  raw(`{"query": "how do I ship the billing service", "layer": "procedural", "limit": 3, "recency_weight": 0.2}`),
					Result: raw(`{"mode": "hybrid", "exact": true, "results": [{"id": 42, "layer": "procedural", "content": "The billing service deploys with make deploy-billing",
						"tags": ["billing", "deploy"], "metadata": {}, "importance": 0.5, "score": 0.83, "vector_score": 0.61, "vector_rank": 1, "keyword_score": 2.1, "keyword_rank": 1,
						"recency": 0.97, "created_at": "2025-01-31T09:00:00Z", "updated_at": "2025-01-31T09:00:00Z", "access_count": 1}]}`),
				}},
				Errors:     []tools.ErrorDoc{errInvalidDoc, errEmbedDown, errEmbedMis},
				Notes:      "score is in [0, 1] in hybrid mode (1: first in both rankings). vector_score is the cosine similarity; keyword_score the BM25 score.",
				Related:    []string{"memory.remember", "memory.get", "memory.neighbors"},
				Positional: []string{"query"},
				Handler:    tools.Handle(ts.recall),
			},
			{
				Name:         "memory.get",
				Summary:      "Read one memory by id, with its entities and what consolidation merged into it.",
				Description:  "Get returns the caller's memory with this id and counts an access. merged_from lists memories that consolidation merged into it (kept for memory.audit_max_age): the first 1,024 bytes of each one's content, and content_bytes and content_sha256 of the whole when it was longer.",
				InputSchema:  raw(`{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"], "additionalProperties": false}`),
				OutputSchema: raw(memorySchema),
				Annotations:  tools.Annotations{ReadOnly: true},
				Examples:     []tools.Example{{Args: raw(`{"id": 42}`)}},
				Errors:       []tools.ErrorDoc{errInvalidDoc, errNotFound},
				Related:      []string{"memory.recall", "memory.update"},
				Positional:   []string{"id"},
				Handler: tools.Handle(func(ctx context.Context, in struct {
					ID int64 `json:"id"`
				}) (Memory, error) {
					return m.Get(ctx, in.ID)
				}),
			},
			{
				Name:    "memory.update",
				Summary: "Change a memory: content, layer, tags (replace, add, remove), metadata (replace or merge), importance, entities.",
				Description: "Update changes the fields given and leaves the others. A new content or new tags are re-embedded and re-indexed. " +
					"merge_metadata sets some keys (null removes one); metadata replaces the whole object.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"id": {"type": "integer", "minimum": 1},
					"content": {"type": "string", "minLength": 1, "maxLength": %d},
					"layer": %s,
					"tags": %s,
					"add_tags": %s,
					"remove_tags": %s,
					"metadata": {"type": "object"},
					"merge_metadata": {"type": "object"},
					"importance": {"type": "number", "minimum": 0, "maximum": 1},
					"source": {"type": "string", "maxLength": 500},
					"occurred_at": %s,
					"due_at": %s,
					"status": %s,
					"entities": %s,
					"add_entities": %s
				}, "required": ["id"], "additionalProperties": false}`, maxContent, layerEnum, tagsSchema, tagsSchema, tagsSchema, dateTime, dateTime, statusEnum, entityNames, entityNames)),
				OutputSchema: raw(memorySchema),
				Annotations:  tools.Annotations{Idempotent: true},
				Examples:     []tools.Example{{Title: "Add a tag and raise importance", Args: raw(`{"id": 42, "add_tags": ["runbook"], "importance": 0.9}`)}},
				Errors:       []tools.ErrorDoc{errInvalidDoc, errNotFound, errTooLarge, errEmbedDown, errEmbedMis, errConflict},
				Related:      []string{"memory.get", "memory.forget"},
				Handler:      tools.Handle(m.Update),
			},
			{
				Name:    "memory.forget",
				Summary: "Delete memories by id or by filter (layers, tags, session, time, entity); reports how many.",
				Description: "Forget deletes the caller's memories chosen by ids, or by a filter: layers, tags (all), session, since/until, entity, " +
					"before (stored before this time). To delete everything pass all: true. dry_run reports what would be deleted.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"id": {"type": "integer", "minimum": 1},
					"ids": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 10000},
					"layers": {"type": "array", "items": %s},
					"tags": %s,
					"session": {"type": "string"},
					"since": %s,
					"until": %s,
					"before": %s,
					"entity": {"type": "string"},
					"all": {"type": "boolean"},
					"dry_run": {"type": "boolean"}
				}, "additionalProperties": false}`, layerEnum, tagsSchema, dateTime, dateTime, dateTime)),
				OutputSchema: raw(`{"type": "object", "properties": {
					"deleted": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "integer"}},
					"not_found": {"type": "array", "items": {"type": "integer"}}, "dry_run": {"type": "boolean"}
				}, "required": ["deleted", "ids"]}`),
				Annotations: tools.Annotations{Destructive: true, Idempotent: true},
				Examples: []tools.Example{
					{Title: "Forget one memory", Args: raw(`{"id": 42}`), Result: raw(`{"deleted": 1, "ids": [42]}`)},
					{Title: "Preview forgetting a session's events", Args: raw(`{"layers": ["episodic"], "session": "abc", "dry_run": true}`)},
				},
				Errors:  []tools.ErrorDoc{errInvalidDoc},
				Related: []string{"memory.recall", "memory.consolidate"},
				Handler: tools.Handle(func(ctx context.Context, in struct {
					ID      int64      `json:"id"`
					IDs     []int64    `json:"ids"`
					Layers  []Layer    `json:"layers"`
					Tags    []string   `json:"tags"`
					Session string     `json:"session"`
					Since   *time.Time `json:"since"`
					Until   *time.Time `json:"until"`
					Before  *time.Time `json:"before"`
					Entity  string     `json:"entity"`
					All     bool       `json:"all"`
					DryRun  bool       `json:"dry_run"`
				}) (ForgetResult, error) {
					ids := in.IDs
					if in.ID != 0 {
						ids = append(ids, in.ID)
					}
					return m.Forget(ctx, ForgetInput{IDs: ids, Before: in.Before, All: in.All, DryRun: in.DryRun,
						Filter: Filter{Layers: in.Layers, Tags: in.Tags, Session: in.Session, Since: in.Since, Until: in.Until, Entity: in.Entity}})
				}),
			},
			{
				Name:        "memory.stats",
				Summary:     "Count the caller's memories by layer, tasks by status, entities, relations, top tags; name the embedder.",
				Description: "Stats summarizes what the caller has stored.",
				OutputSchema: raw(`{"type": "object", "properties": {
					"memories": {"type": "integer"}, "layers": {"type": "object"}, "tasks": {"type": "object"},
					"entities": {"type": "integer"}, "relations": {"type": "integer"}, "merged": {"type": "integer"},
					"top_tags": {"type": "array", "items": {"type": "object", "properties": {"tag": {"type": "string"}, "count": {"type": "integer"},
						"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools the data of the memories carrying the tag came from, when known."}}}},
					"oldest": {"type": "string", "format": "date-time"}, "newest": {"type": "string", "format": "date-time"}, "embedder": {"type": "object"}
				}, "required": ["memories", "layers", "tasks", "entities", "relations"]}`),
				Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
				Related:     []string{"memory.recall", "memory.task_list"},
				Handler: tools.Handle(func(ctx context.Context, _ struct{}) (MemoryStats, error) {
					return m.MemoryStats(ctx)
				}),
			},
		}...)
	}
	if m := ts.Graph; m != nil {
		out = append(out, []tools.Tool{
			{
				Name:    "memory.entity_upsert",
				Summary: "Create or update a knowledge-graph entity (person, project, service…) by name, with type, description and properties.",
				Description: "Entity_upsert creates the named entity or updates it: a non-empty type or description replaces the stored one; " +
					"properties are merged into the stored ones (null removes a key). Names are unique per caller, compared without case.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"name": {"type": "string", "minLength": 1, "maxLength": 200},
					"type": {"type": "string", "maxLength": 64, "description": "person, project, service, concept… (free text)."},
					"description": {"type": "string", "maxLength": %d},
					"properties": {"type": "object"}
				}, "required": ["name"], "additionalProperties": false}`, maxContent)),
				OutputSchema: raw(`{"type": "object", "properties": {"entity": ` + entitySchema + `, "created": {"type": "boolean"}}, "required": ["entity", "created"]}`),
				Annotations:  tools.Annotations{Idempotent: true},
				Examples: []tools.Example{{Args: raw(`{"name": "billing-service", "type": "service", "properties": {"language": "go", "owner": "payments team"}}`),
					Result: raw(`{"entity": {"id": 7, "name": "billing-service", "type": "service", "properties": {"language": "go", "owner": "payments team"}}, "created": true}`)}},
				Errors:  []tools.ErrorDoc{errInvalidDoc, errTooLarge},
				Related: []string{"memory.relate", "memory.neighbors"},
				Handler: tools.Handle(func(ctx context.Context, in EntityInput) (map[string]any, error) {
					e, created, err := m.UpsertEntity(ctx, in)
					if err != nil {
						return nil, err
					}
					return map[string]any{"entity": e, "created": created}, nil
				}),
			},
			{
				Name:    "memory.relate",
				Summary: "Record a typed, directed relation between two entities (created if missing), e.g. alice works_on billing.",
				Description: "Relate records from -[type]-> to. There is one relation per (from, to, type): relating again updates its weight " +
					"and properties. Missing entities are created with no type.",
				InputSchema: raw(`{"type": "object", "properties": {
					"from": {"type": "string", "minLength": 1, "maxLength": 200},
					"to": {"type": "string", "minLength": 1, "maxLength": 200},
					"type": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The relation, e.g. works_on, depends_on, owns."},
					"weight": {"type": "number", "minimum": 0, "maximum": 1000000, "default": 1},
					"properties": {"type": "object"}
				}, "required": ["from", "to", "type"], "additionalProperties": false}`),
				OutputSchema: raw(`{"type": "object", "properties": {"relation": ` + relationSchema + `, "created": {"type": "boolean"},
					"created_entities": {"type": "array", "items": {"type": "string"}}}, "required": ["relation", "created"]}`),
				Annotations: tools.Annotations{Idempotent: true},
				Examples:    []tools.Example{{Args: raw(`{"from": "alice", "to": "billing-service", "type": "works_on"}`)}},
				Errors:      []tools.ErrorDoc{errInvalidDoc},
				Related:     []string{"memory.entity_upsert", "memory.neighbors", "memory.path"},
				Handler:     tools.Handle(m.Relate),
			},
			{
				Name:        "memory.neighbors",
				Summary:     "List the entities within depth relations of an entity (breadth-first), optionally with their linked memories.",
				Description: "Neighbors walks the knowledge graph from an entity, following relations out, in or both ways (of the given types), up to depth edges (1 to 5), and returns each entity reached with the depth and the relation that reached it, plus the relations seen.",
				InputSchema: raw(`{"type": "object", "properties": {
					"entity": {"type": "string", "minLength": 1, "maxLength": 200},
					"depth": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
					"direction": {"type": "string", "enum": ["out", "in", "both"], "default": "both"},
					"types": {"type": "array", "items": {"type": "string", "minLength": 1}},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
					"include_memories": {"type": "boolean"}
				}, "required": ["entity"], "additionalProperties": false}`),
				OutputSchema: raw(`{"type": "object", "properties": {
					"entity": ` + entitySchema + `, "memories": ` + linkSchema + `,
					"neighbors": {"type": "array", "items": {"type": "object", "properties": {"entity": ` + entitySchema + `, "depth": {"type": "integer"}, "via": ` + relationSchema + `, "memories": ` + linkSchema + `}}},
					"relations": {"type": "array", "items": ` + relationSchema + `}, "truncated": {"type": "boolean"}
				}, "required": ["entity", "neighbors", "relations"]}`),
				Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
				Examples:    []tools.Example{{Args: raw(`{"entity": "billing-service", "depth": 2, "include_memories": true}`)}},
				Errors:      []tools.ErrorDoc{errInvalidDoc, errNotFound},
				Related:     []string{"memory.path", "memory.relate"},
				Positional:  []string{"entity"},
				Handler:     tools.Handle(m.Neighbors),
			},
			{
				Name:        "memory.path",
				Summary:     "Find a shortest chain of relations between two entities (up to max_depth steps).",
				Description: "Path searches breadth-first from one entity to another and returns the entities along a shortest path and the relation of each step; found is false when none exists within max_depth.",
				InputSchema: raw(`{"type": "object", "properties": {
					"from": {"type": "string", "minLength": 1, "maxLength": 200},
					"to": {"type": "string", "minLength": 1, "maxLength": 200},
					"max_depth": {"type": "integer", "minimum": 1, "maximum": 8, "default": 4},
					"direction": {"type": "string", "enum": ["out", "in", "both"], "default": "both"},
					"types": {"type": "array", "items": {"type": "string", "minLength": 1}}
				}, "required": ["from", "to"], "additionalProperties": false}`),
				OutputSchema: raw(`{"type": "object", "properties": {"found": {"type": "boolean"}, "length": {"type": "integer"},
					"entities": {"type": "array", "items": {"type": "string"}}, "steps": {"type": "array", "items": ` + relationSchema + `},
					"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools the names of the entities along the path came from, when known."}},
					"required": ["found", "length", "entities", "steps"]}`),
				Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
				Examples: []tools.Example{{Args: raw(`{"from": "alice", "to": "postgres"}`),
					Result: raw(`{"found": true, "length": 2, "entities": ["alice", "billing-service", "postgres"], "steps": [{"id": 1, "from": "alice", "to": "billing-service", "type": "works_on", "weight": 1}, {"id": 2, "from": "billing-service", "to": "postgres", "type": "depends_on", "weight": 1}]}`)}},
				Errors:     []tools.ErrorDoc{errInvalidDoc, errNotFound},
				Related:    []string{"memory.neighbors"},
				Positional: []string{"from", "to"},
				Handler:    tools.Handle(m.Path),
			},
		}...)
	}
	if m := ts.Tasks; m != nil {
		out = append(out, []tools.Tool{
			{
				Name:        "memory.task_add",
				Summary:     "Add a task or goal (prospective memory) with an optional due time; status starts open.",
				Description: "Task_add stores a prospective memory. It is also found by memory.recall.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"content": {"type": "string", "minLength": 1, "maxLength": %d, "description": "What is to be done."},
					"due_at": %s, "status": %s, "tags": %s, "metadata": {"type": "object"},
					"importance": {"type": "number", "minimum": 0, "maximum": 1}, "entities": %s
				}, "required": ["content"], "additionalProperties": false}`, maxContent, dateTime, statusEnum, tagsSchema, entityNames)),
				OutputSchema: raw(`{"allOf": [` + memorySchema + `, {"type": "object", "properties": {"overdue": {"type": "boolean"}}, "required": ["overdue"]}]}`),
				Examples:     []tools.Example{{Args: raw(`{"content": "Renew the TLS certificate of api.example.com", "due_at": "2025-02-15T00:00:00Z", "tags": ["ops"]}`)}},
				Errors:       []tools.ErrorDoc{errInvalidDoc, errTooLarge, errEmbedDown, errEmbedMis},
				Related:      []string{"memory.task_list", "memory.task_update"},
				Positional:   []string{"content"},
				Handler:      tools.Handle(m.AddTask),
			},
			{
				Name:    "memory.task_list",
				Summary: "List tasks by status (default open and in progress), overdue or due soon, soonest due first.",
				Description: "Task_list returns the caller's tasks. status selects states; overdue keeps open tasks past their due time; " +
					"due_before and due_within_hours keep tasks due before a time.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"status": {"type": "array", "items": %s},
					"overdue": {"type": "boolean"},
					"due_before": %s,
					"due_within_hours": {"type": "number", "minimum": 0},
					"tags": %s,
					"limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
				}, "additionalProperties": false}`, statusEnum, dateTime, tagsSchema)),
				OutputSchema: raw(`{"type": "object", "properties": {"tasks": {"type": "array", "items": {"allOf": [` + memorySchema + `,
					{"type": "object", "properties": {"overdue": {"type": "boolean"}}}]}}, "now": {"type": "string", "format": "date-time"}}, "required": ["tasks", "now"]}`),
				Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
				Examples:    []tools.Example{{Title: "What is overdue?", Args: raw(`{"overdue": true}`)}},
				Errors:      []tools.ErrorDoc{errInvalidDoc},
				Related:     []string{"memory.task_add", "memory.task_update"},
				Handler: tools.Handle(func(ctx context.Context, q TaskQuery) (map[string]any, error) {
					tasks, err := m.ListTasks(ctx, q)
					if err != nil {
						return nil, err
					}
					if tasks == nil {
						tasks = []Task{}
					}
					return map[string]any{"tasks": tasks, "now": ts.now().UTC()}, nil
				}),
			},
			{
				Name:        "memory.task_update",
				Summary:     "Change a task's status, due time or text, or append a note.",
				Description: "Task_update changes a prospective memory. A note is appended to metadata.notes with the time.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"id": {"type": "integer", "minimum": 1}, "status": %s, "due_at": %s,
					"content": {"type": "string", "minLength": 1, "maxLength": %d}, "note": {"type": "string", "maxLength": 2000}
				}, "required": ["id"], "additionalProperties": false}`, statusEnum, dateTime, maxContent)),
				OutputSchema: raw(`{"allOf": [` + memorySchema + `, {"type": "object", "properties": {"overdue": {"type": "boolean"}}, "required": ["overdue"]}]}`),
				Annotations:  tools.Annotations{Idempotent: true},
				Examples:     []tools.Example{{Args: raw(`{"id": 43, "status": "done", "note": "renewed via certbot"}`)}},
				Errors:       []tools.ErrorDoc{errInvalidDoc, errNotFound, errEmbedDown, errEmbedMis, errConflict},
				Related:      []string{"memory.task_list"},
				Handler:      tools.Handle(m.UpdateTask),
			},
		}...)
	}
	if m := ts.Consolidator; m != nil {
		out = append(out, []tools.Tool{
			{
				Name:    "memory.consolidate",
				Summary: "Merge near-duplicate memories (similar vectors and shared words), keeping provenance; dry_run previews.",
				Description: "Consolidate finds memories of the same layer whose cosine similarity is at least threshold and whose words overlap " +
					"(Jaccard) by at least min_overlap. Each group keeps a survivor (most important, then most accessed, then oldest) that gains " +
					"the others' tags, metadata keys, entity links, access counts and provenance; the others are deleted, and memory.get on the survivor " +
					"shows them in merged_from (the first 1,024 bytes of each one's content, kept for memory.audit_max_age and counted in the caller's " +
					"memory bytes until then, or until the survivor is forgotten). It examines the limit most recent memories of each layer; each principal runs one consolidate at a time.",
				InputSchema: raw(fmt.Sprintf(`{"type": "object", "properties": {
					"layers": {"type": "array", "items": %s},
					"threshold": {"type": "number", "minimum": 0.5, "maximum": 1, "default": 0.9},
					"min_overlap": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
					"limit": {"type": "integer", "minimum": 2, "maximum": 5000, "default": 2000},
					"dry_run": {"type": "boolean"}
				}, "additionalProperties": false}`, layerEnum)),
				OutputSchema: raw(`{"type": "object", "properties": {
					"examined": {"type": "integer"}, "merged": {"type": "integer"}, "dry_run": {"type": "boolean"},
					"groups": {"type": "array", "items": {"type": "object", "properties": {
						"survivor": {"type": "object", "properties": {"id": {"type": "integer"}, "layer": {"type": "string"}, "content": {"type": "string"},
							"provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}}},
						"merged": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "content": {"type": "string"},
							"similarity": {"type": "number"}, "overlap": {"type": "number"}, "provenance": {"type": "array", "items": {"type": "string"}, "description": "The tools its data came from, when known."}}}}}}}
				}, "required": ["examined", "merged", "groups", "dry_run"]}`),
				Annotations: tools.Annotations{Destructive: true},
				Examples:    []tools.Example{{Title: "Preview", Args: raw(`{"dry_run": true}`)}},
				Errors:      []tools.ErrorDoc{errInvalidDoc, errEmbedDown, errEmbedMis, errConflict, errBusy},
				Related:     []string{"memory.forget", "memory.get"},
				Handler:     tools.Handle(m.Consolidate),
			},
		}...)
	}
	return storedTools(out)
}

// storedTools marks the tools whose results show stored data with the
// fields of their output schemas that carry its sources (tools.Stored),
// unless a tool says so itself: a run's data flow reads them there and
// nowhere else.
func storedTools(ts []tools.Tool) []tools.Tool {
	for i := range ts {
		if p := tools.ProvenanceFields(ts[i].OutputSchema); len(p) > 0 && ts[i].Stored == nil {
			ts[i].Stored = &tools.StoredFields{Provenance: p}
		}
	}
	return ts
}
