package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

const executionColumns = `id, principal, session, language, %s, code_hash, status, error_kind, error_message,
	duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash`

func scanExecution(sc interface{ Scan(...any) error }) (memory.Execution, error) {
	var e memory.Execution
	var dur, started, updated int64
	err := sc.Scan(&e.ID, &e.Principal, &e.Session, &e.Language, &e.Code, &e.CodeHash, &e.Status, &e.ErrorKind, &e.ErrorMessage,
		&dur, &e.ToolCalls, &e.ResultBytes, &e.Toolset, &e.ToolsetDescription, &started, &updated, &e.Mode, &e.PlanHash)
	e.Duration, e.StartedAt, e.UpdatedAt = time.Duration(dur)*time.Microsecond, fromMS(started), fromMS(updated)
	return e, err
}

// toolCallColumns are the columns scanToolCall reads, in order; cached
// and planned are stored as 0 or 1.
const toolCallColumns = `id, execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached <> 0, planned <> 0`

func scanToolCall(r pgx.CollectableRow) (memory.ToolCall, error) {
	var c memory.ToolCall
	var d, at int64
	err := r.Scan(&c.ID, &c.ExecutionID, &c.Tool, &c.ArgsHash, &c.Status, &c.ErrorCode, &d, &at, &c.Cached, &c.Planned)
	c.Duration, c.StartedAt = time.Duration(d)*time.Microsecond, fromMS(at)
	return c, err
}

// flag is a boolean as the store keeps it, 0 or 1 as on SQLite.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// args collects the parameters of a query and numbers their placeholders.
type args []any

func (a *args) p(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// ListExecutions returns audit records, newest first.
func (s *Store) ListExecutions(ctx context.Context, q memory.ExecutionQuery) ([]memory.Execution, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, 1000)
	var a args
	conds := []string{"true"}
	if q.Principal != nil {
		conds = append(conds, "principal = "+a.p(*q.Principal))
	}
	if q.Session != "" {
		conds = append(conds, "session = "+a.p(q.Session))
	}
	if q.Status != "" {
		conds = append(conds, "status = "+a.p(q.Status))
	}
	if q.CodeHash != "" {
		conds = append(conds, "code_hash = "+a.p(q.CodeHash))
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= "+a.p(ms(q.Since)))
	}
	if !q.Until.IsZero() {
		conds = append(conds, "started_at < "+a.p(ms(q.Until)))
	}
	if q.Before != nil {
		at := a.p(ms(q.Before.StartedAt))
		conds = append(conds, "(started_at < "+at+" OR (started_at = "+at+" AND id < "+a.p(q.Before.ID)+"))")
	}
	code := "''"
	if q.WithCode {
		code = "code"
	}
	rows, err := s.db.Query(ctx, `SELECT `+fmt.Sprintf(executionColumns, code)+` FROM executions WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY started_at DESC, id COLLATE "C" DESC LIMIT `+a.p(q.Limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Execution, error) { return scanExecution(r) })
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	if out == nil {
		out = []memory.Execution{}
	}
	return out, nil
}

// ListToolCalls returns tool-call records, newest first.
func (s *Store) ListToolCalls(ctx context.Context, q memory.ToolCallQuery) ([]memory.ToolCall, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	var a args
	conds := []string{"true"}
	if q.Tool != "" {
		conds = append(conds, "tool = "+a.p(q.Tool))
	}
	if q.Status != "" {
		conds = append(conds, "status = "+a.p(q.Status))
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= "+a.p(ms(q.Since)))
	}
	rows, err := s.db.Query(ctx, `SELECT `+toolCallColumns+` FROM tool_calls
		WHERE `+strings.Join(conds, " AND ")+` ORDER BY started_at DESC, id DESC LIMIT `+a.p(q.Limit), a...)
	if err != nil {
		return nil, fmt.Errorf("list tool calls: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanToolCall)
	if err != nil {
		return nil, fmt.Errorf("list tool calls: %w", err)
	}
	if out == nil {
		out = []memory.ToolCall{}
	}
	return out, nil
}

// RecordExecution inserts or updates the audit record e.ID.
func (s *Store) RecordExecution(ctx context.Context, e memory.Execution) error {
	if err := checkExecution(e); err != nil {
		return err
	}
	if err := s.tx(ctx, func(tx pgx.Tx) error { return s.insertExecution(ctx, tx, e) }); err != nil {
		return fmt.Errorf("record execution %s: %w", e.ID, err)
	}
	return nil
}

// RecordToolCalls appends tool-call records; their execution must have
// been recorded first.
func (s *Store) RecordToolCalls(ctx context.Context, calls ...memory.ToolCall) error {
	if len(calls) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, c := range calls {
			if err := s.insertToolCall(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	return nil
}

// RecordAudit writes whole runs' audit records — each execution, then
// its tool calls and HTTP requests — in one transaction: all of them or,
// on an error, none.
func (s *Store) RecordAudit(ctx context.Context, recs ...memory.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if err := checkExecution(r.Execution); err != nil {
			return err
		}
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, r := range recs {
			if err := s.insertExecution(ctx, tx, r.Execution); err != nil {
				return fmt.Errorf("execution %s: %w", r.Execution.ID, err)
			}
			for _, c := range r.ToolCalls {
				if err := s.insertToolCall(ctx, tx, c); err != nil {
					return err
				}
			}
			for _, q := range r.HTTPRequests {
				if err := s.insertHTTPRequest(ctx, tx, q); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record audit of %d runs: %w", len(recs), err)
	}
	return nil
}

func checkExecution(e memory.Execution) error {
	if e.ID == "" || len(e.ID) > 200 {
		return fmt.Errorf("record execution: %w: id must be 1 to 200 bytes", memory.ErrInvalid)
	}
	return nil
}

func (s *Store) insertExecution(ctx context.Context, tx pgx.Tx, e memory.Execution) error {
	if e.CodeHash == "" {
		e.CodeHash = memory.Hash([]byte(e.Code))
	}
	if len(e.Code) > memory.AuditCodeLimit {
		e.Code = e.Code[:memory.AuditCodeLimit]
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = s.now()
	}
	_, err := tx.Exec(ctx, `INSERT INTO executions (id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (id) DO UPDATE SET plan_hash = excluded.plan_hash, status = excluded.status, error_kind = excluded.error_kind,
			error_message = excluded.error_message, duration_us = excluded.duration_us, tool_calls = excluded.tool_calls,
			result_bytes = excluded.result_bytes, updated_at = excluded.updated_at`,
		e.ID, e.Principal, memory.SessionHash(e.Session), e.Language, e.Code, e.CodeHash, e.Status, e.ErrorKind, memory.Clip(e.ErrorMessage, 4000),
		e.Duration.Microseconds(), e.ToolCalls, e.ResultBytes, memory.Clip(e.Toolset, 200), memory.Clip(e.ToolsetDescription, 4000),
		ms(e.StartedAt), ms(s.now()), e.Mode, e.PlanHash)
	return err
}

func (s *Store) insertToolCall(ctx context.Context, tx pgx.Tx, c memory.ToolCall) error {
	if c.ArgsHash == "" {
		c.ArgsHash = memory.Hash(c.Args)
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = s.now()
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tool_calls (execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, c.ExecutionID, c.Tool, c.ArgsHash, c.Status, c.ErrorCode, c.Duration.Microseconds(), ms(c.StartedAt),
		flag(c.Cached), flag(c.Planned)); err != nil {
		if isCode(err, foreignKeyViolation) {
			return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, c.ExecutionID)
		}
		return err
	}
	return nil
}

func (s *Store) insertHTTPRequest(ctx context.Context, tx pgx.Tx, r memory.HTTPRequest) error {
	if r.StartedAt.IsZero() {
		r.StartedAt = s.now()
	}
	if _, err := tx.Exec(ctx, `INSERT INTO http_requests (execution_id, tool, method, host, status, error, attempt, duration_us, started_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r.ExecutionID, memory.Clip(r.Tool, 200), memory.Clip(r.Method, 16), memory.Clip(r.Host, 255),
		r.Status, memory.Clip(r.Error, 64), max(r.Attempt, 1), r.Duration.Microseconds(), ms(r.StartedAt)); err != nil {
		if isCode(err, foreignKeyViolation) {
			return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, r.ExecutionID)
		}
		return err
	}
	return nil
}

// GetExecution returns an audit record with its tool calls.
func (s *Store) GetExecution(ctx context.Context, id string) (memory.Execution, []memory.ToolCall, error) {
	e, err := scanExecution(s.db.QueryRow(ctx, `SELECT `+fmt.Sprintf(executionColumns, "code")+` FROM executions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Execution{}, nil, fmt.Errorf("execution %s: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Execution{}, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	rows, err := s.db.Query(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE execution_id = $1 ORDER BY id`, id)
	if err != nil {
		return e, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	calls, err := pgx.CollectRows(rows, scanToolCall)
	if err != nil {
		return e, nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	return e, calls, nil
}

// RecordHTTPRequests appends HTTP request records; their execution must
// have been recorded first.
func (s *Store) RecordHTTPRequests(ctx context.Context, reqs ...memory.HTTPRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, r := range reqs {
			if err := s.insertHTTPRequest(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record http requests: %w", err)
	}
	return nil
}

// HTTPRequests returns the HTTP requests of an execution, in the order
// they were sent.
func (s *Store) HTTPRequests(ctx context.Context, executionID string) ([]memory.HTTPRequest, error) {
	rows, err := s.db.Query(ctx, `SELECT execution_id, tool, method, host, status, error, attempt, duration_us, started_at
		FROM http_requests WHERE execution_id = $1 ORDER BY id`, executionID)
	if err != nil {
		return nil, fmt.Errorf("http requests of %s: %w", executionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.HTTPRequest, error) {
		var r memory.HTTPRequest
		var us, started int64
		err := row.Scan(&r.ExecutionID, &r.Tool, &r.Method, &r.Host, &r.Status, &r.Error, &r.Attempt, &us, &started)
		r.Duration, r.StartedAt = time.Duration(us)*time.Microsecond, fromMS(started)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("http requests of %s: %w", executionID, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
