package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Tasks are prospective memories, as memory/tasks.go keeps them.

// AddTask stores a task for the caller.
func (s *Store) AddTask(ctx context.Context, in memory.TaskInput) (memory.Task, error) {
	m, err := s.Remember(ctx, memory.TaskRemember(in))
	if err != nil {
		return memory.Task{}, err
	}
	return memory.TaskOf(m, s.now()), nil
}

// ListTasks returns the caller's tasks, soonest due first (undated last),
// then by id.
func (s *Store) ListTasks(ctx context.Context, q memory.TaskQuery) ([]memory.Task, error) {
	principal := tools.CallerFrom(ctx).Principal
	now := s.now()
	sel, err := memory.PrepareTaskQuery(&q, now)
	if err != nil {
		return nil, err
	}
	cond, args := where(principal, sel.Filter, 1)
	statuses := make([]string, len(sel.Statuses))
	for i, st := range sel.Statuses {
		statuses[i] = string(st)
	}
	args = append(args, statuses)
	cond += fmt.Sprintf(" AND m.status = ANY($%d)", len(args))
	if sel.DueBefore != nil {
		args = append(args, ms(*sel.DueBefore))
		cond += fmt.Sprintf(" AND m.due_at IS NOT NULL AND m.due_at < $%d", len(args))
	}
	var out []memory.Task
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT m.id FROM memories m WHERE `+cond+` ORDER BY m.due_at IS NULL, m.due_at, m.id LIMIT `+fmt.Sprint(q.Limit), args...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		ms, err := s.loadMemories(ctx, tx, principal, ids)
		if err != nil {
			return err
		}
		out = make([]memory.Task, len(ms))
		for i, m := range ms {
			out[i] = memory.TaskOf(m, now)
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
	cur, err := s.peek(ctx, tools.CallerFrom(ctx).Principal, in.ID)
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
	return memory.TaskOf(m, s.now()), nil
}
