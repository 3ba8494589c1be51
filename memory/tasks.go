package memory

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
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

// TaskUpdate changes a task. Note, if set, is appended to the task's
// metadata "notes" list with the time.
type TaskUpdate struct {
	ID      int64       `json:"id"`
	Status  *TaskStatus `json:"status,omitempty"`
	DueAt   *time.Time  `json:"due_at,omitempty"`
	Content *string     `json:"content,omitempty"`
	Note    string      `json:"note,omitempty"`
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
