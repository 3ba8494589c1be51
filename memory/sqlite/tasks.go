package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"

	"github.com/codecell/codecell/tools"
)

// AddTask stores a task for the caller.
func (s *Store) AddTask(ctx context.Context, in memory.TaskInput) (memory.Task, error) {
	m, err := s.Remember(ctx, memory.TaskRemember(in))
	if err != nil {
		return memory.Task{}, err
	}
	return s.task(m), nil
}

func (s *Store) task(m memory.Memory) memory.Task { return memory.TaskOf(m, s.now()) }

// ListTasks returns the caller's tasks, soonest due first (undated last),
// then by id.
func (s *Store) ListTasks(ctx context.Context, q memory.TaskQuery) ([]memory.Task, error) {
	principal := tools.CallerFrom(ctx).Principal
	sel, err := memory.PrepareTaskQuery(&q, s.now())
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
	var out []memory.Task
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
		out = make([]memory.Task, len(ms))
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

// UpdateTask changes the caller's task in.ID, which must be a prospective
// memory.
func (s *Store) UpdateTask(ctx context.Context, in memory.TaskUpdate) (memory.Task, error) {
	cur, err := s.peek(ctx, in.ID)
	if err != nil {
		return memory.Task{}, err
	}
	up, err := memory.TaskUpdateOf(cur, in, s.now())
	if err != nil {
		return memory.Task{}, err
	}
	m, err := s.Update(ctx, up)
	if err != nil {
		return memory.Task{}, err
	}
	return s.task(m), nil
}

// peek reads a memory without counting an access.
func (s *Store) peek(ctx context.Context, id int64) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	var m memory.Memory
	err := s.read(ctx, func(tx *sql.Tx) error {
		ms, err := loadMemories(ctx, tx, principal, []int64{id})
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return memory.NotFound("memory %d not found", id)
		}
		m = ms[0]
		return nil
	})
	return m, err
}
