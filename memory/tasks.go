package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// TaskInput is a new task: a prospective memory.
type TaskInput struct {
	Content    string          `json:"content"`
	DueAt      *time.Time      `json:"due_at,omitempty"`
	Status     TaskStatus      `json:"status,omitempty"`
	Tags       []string        `json:"tags,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Importance *float64        `json:"importance,omitempty"`
	Entities   []string        `json:"entities,omitempty"`
}

// Task is a prospective memory with whether it is overdue.
type Task struct {
	Memory
	Overdue bool `json:"overdue"`
}

// AddTask stores a task for the caller.
func (s *Store) AddTask(ctx context.Context, in TaskInput) (Task, error) {
	m, err := s.Remember(ctx, TaskRemember(in))
	if err != nil {
		return Task{}, err
	}
	return s.task(m), nil
}

func (s *Store) task(m Memory) Task { return TaskOf(m, s.now()) }

// TaskOf is m as a task at time now (overdue or not).
func TaskOf(m Memory, now time.Time) Task {
	open := m.Status == StatusOpen || m.Status == StatusInProgress
	return Task{Memory: m, Overdue: open && m.DueAt != nil && m.DueAt.Before(now)}
}

// TaskQuery selects tasks.
type TaskQuery struct {
	// Statuses selects by status; empty means open and in_progress.
	Statuses []TaskStatus `json:"status,omitempty"`
	// Overdue keeps open or in-progress tasks whose due time has passed.
	Overdue bool `json:"overdue,omitempty"`
	// DueBefore keeps tasks due before this time.
	DueBefore *time.Time `json:"due_before,omitempty"`
	// DueWithinHours keeps tasks due within this many hours from now
	// (overdue ones included).
	DueWithinHours float64  `json:"due_within_hours,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Limit          int      `json:"limit,omitempty"` // default 50, at most 500
}

// ListTasks returns the caller's tasks, soonest due first (undated last),
// then by id.
func (s *Store) ListTasks(ctx context.Context, q TaskQuery) ([]Task, error) {
	principal := tools.CallerFrom(ctx).Principal
	sel, err := PrepareTaskQuery(&q, s.now())
	if err != nil {
		return nil, err
	}
	where, args := filterWhere(sel.Filter, principal)
	where += " AND m.status IN (" + placeholders(len(sel.Statuses)) + ")"
	for _, st := range sel.Statuses {
		args = append(args, string(st))
	}
	if sel.DueBefore != nil {
		where += " AND m.due_at IS NOT NULL AND m.due_at < ?"
		args = append(args, ms(*sel.DueBefore))
	}
	var out []Task
	err = s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT m.id FROM memories m WHERE `+where+` ORDER BY m.due_at IS NULL, m.due_at, m.id LIMIT ?`, append(args, q.Limit)...)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		ms, err := loadMemories(ctx, tx, principal, ids)
		if err != nil {
			return err
		}
		out = make([]Task, len(ms))
		for i, m := range ms {
			out[i] = s.task(m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// TaskUpdate changes a task. Note, if set, is appended to the task's
// metadata "notes" list with the time.
type TaskUpdate struct {
	ID      int64       `json:"id"`
	Status  *TaskStatus `json:"status,omitempty"`
	DueAt   *time.Time  `json:"due_at,omitempty"`
	Content *string     `json:"content,omitempty"`
	Note    string      `json:"note,omitempty"`
}

// UpdateTask changes the caller's task in.ID, which must be a prospective
// memory.
func (s *Store) UpdateTask(ctx context.Context, in TaskUpdate) (Task, error) {
	cur, err := s.peek(ctx, in.ID)
	if err != nil {
		return Task{}, err
	}
	up, err := TaskUpdateOf(cur, in, s.now())
	if err != nil {
		return Task{}, err
	}
	m, err := s.Update(ctx, up)
	if err != nil {
		return Task{}, err
	}
	return s.task(m), nil
}

// peek reads a memory without counting an access.
func (s *Store) peek(ctx context.Context, id int64) (Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	var m Memory
	err := s.read(ctx, func(tx *sql.Tx) error {
		ms, err := loadMemories(ctx, tx, principal, []int64{id})
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return NotFound("memory %d not found", id)
		}
		m = ms[0]
		return nil
	})
	return m, err
}

// TaskSelection is what a TaskQuery selects: prospective memories that
// pass Filter, in one of Statuses, due before DueBefore when set.
type TaskSelection struct {
	Filter    Filter
	Statuses  []TaskStatus
	DueBefore *time.Time
}

// PrepareTaskQuery sets q's defaults, checks it and says what it selects
// at time now, as ListTasks does.
func PrepareTaskQuery(q *TaskQuery, now time.Time) (TaskSelection, error) {
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.Limit < 1 || q.Limit > 500 {
		return TaskSelection{}, Invalid("limit is %d; it must be between 1 and 500", q.Limit)
	}
	statuses := slices.Clone(q.Statuses)
	if len(statuses) == 0 || q.Overdue {
		statuses = []TaskStatus{StatusOpen, StatusInProgress}
	}
	for i, st := range statuses {
		if !st.valid() {
			return TaskSelection{}, Invalid("status[%d] %q is not a task status; use open, in_progress, done or cancelled", i, Clip(string(st), 40))
		}
	}
	if q.DueWithinHours < 0 {
		return TaskSelection{}, Invalid("due_within_hours is %v; it must be 0 or more", q.DueWithinHours)
	}
	f := Filter{Layers: []Layer{Prospective}, Tags: q.Tags}
	if err := f.Normalize(); err != nil {
		return TaskSelection{}, err
	}
	var before *time.Time
	if q.Overdue {
		before = &now
	}
	if q.DueBefore != nil && (before == nil || q.DueBefore.Before(*before)) {
		before = q.DueBefore
	}
	if q.DueWithinHours > 0 {
		t := now.Add(time.Duration(q.DueWithinHours * float64(time.Hour)))
		if before == nil || t.Before(*before) {
			before = &t
		}
	}
	return TaskSelection{Filter: f, Statuses: statuses, DueBefore: before}, nil
}

// TaskUpdateOf turns a task update of the stored memory cur into the
// memory update UpdateTask makes at time now (a note appended to
// metadata.notes).
func TaskUpdateOf(cur Memory, in TaskUpdate, now time.Time) (UpdateInput, error) {
	if cur.Layer != Prospective {
		return UpdateInput{}, Invalid("memory %d is a %s memory, not a task; use memory.update", in.ID, cur.Layer)
	}
	up := UpdateInput{ID: in.ID, Status: in.Status, DueAt: in.DueAt, Content: in.Content}
	if note := strings.TrimSpace(in.Note); note != "" {
		if err := validateText("note", note, 2000, false); err != nil {
			return UpdateInput{}, err
		}
		var meta map[string]any
		if json.Unmarshal(cur.Metadata, &meta) != nil || meta == nil {
			meta = map[string]any{}
		}
		notes, _ := meta["notes"].([]any)
		notes = append(notes, map[string]any{"at": now.UTC().Format(time.RFC3339), "note": note})
		patch, _ := json.Marshal(map[string]any{"notes": notes})
		up.MergeMetadata = patch
	}
	return up, nil
}

// TaskRemember is the memory AddTask stores for in.
func TaskRemember(in TaskInput) RememberInput {
	return RememberInput{Layer: Prospective, Content: in.Content, DueAt: in.DueAt, Status: in.Status, Tags: in.Tags,
		Metadata: in.Metadata, Importance: in.Importance, Entities: in.Entities}
}
