package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// RecordExecution inserts or updates the audit record e.ID.
func (s *Store) RecordExecution(ctx context.Context, e memory.Execution) error {
	if err := checkExecution(e); err != nil {
		return err
	}
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.insertExecution(ctx, tx, e) }); err != nil {
		return fmt.Errorf("record execution %s: %w", e.ID, err)
	}
	return nil
}

// RecordToolCalls appends tool-call records. Their execution must have
// been recorded first.
func (s *Store) RecordToolCalls(ctx context.Context, calls ...memory.ToolCall) error {
	if len(calls) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		return s.insertToolCalls(ctx, tx, calls)
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, r := range recs {
			if err := s.insertExecution(ctx, tx, r.Execution); err != nil {
				return fmt.Errorf("execution %s: %w", r.Execution.ID, err)
			}
			if err := s.insertToolCalls(ctx, tx, r.ToolCalls); err != nil {
				return err
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

func (s *Store) insertExecution(ctx context.Context, tx *sql.Tx, e memory.Execution) error {
	if e.CodeHash == "" {
		e.CodeHash = memory.Hash([]byte(e.Code))
	}
	if len(e.Code) > memory.AuditCodeLimit {
		e.Code = e.Code[:memory.AuditCodeLimit]
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = s.now()
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO executions (id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET plan_hash = excluded.plan_hash, status = excluded.status, error_kind = excluded.error_kind, error_message = excluded.error_message,
			duration_us = excluded.duration_us, tool_calls = excluded.tool_calls, result_bytes = excluded.result_bytes, updated_at = excluded.updated_at`,
		e.ID, e.Principal, memory.SessionHash(e.Session), e.Language, e.Code, e.CodeHash, e.Status, e.ErrorKind, memory.Clip(e.ErrorMessage, 4000),
		e.Duration.Microseconds(), e.ToolCalls, e.ResultBytes, memory.Clip(e.Toolset, 200), memory.Clip(e.ToolsetDescription, 4000), ms(e.StartedAt), ms(s.now()), e.Mode, e.PlanHash)
	return err
}

// insertToolCalls inserts calls with as few statements as it can: up
// to 32 rows a statement, in statements of 32, 16, 8, 4, 2 and 1 rows
// (six texts, which the connection's statement cache keeps). A row per
// statement cost a 100-call run's audit most of its time.
func (s *Store) insertToolCalls(ctx context.Context, tx *sql.Tx, calls []memory.ToolCall) error {
	args := make([]any, 0, 10*min(len(calls), maxRowsPerInsert))
	for len(calls) > 0 {
		n := maxRowsPerInsert
		for n > len(calls) {
			n /= 2
		}
		args = args[:0]
		for _, c := range calls[:n] {
			if c.ArgsHash == "" && c.Calls == 0 { // an aggregate row has no one call's arguments
				c.ArgsHash = memory.Hash(c.Args)
			}
			if c.StartedAt.IsZero() {
				c.StartedAt = s.now()
			}
			args = append(args, c.ExecutionID, c.Tool, c.ArgsHash, c.Status, c.ErrorCode, c.Duration.Microseconds(), ms(c.StartedAt), c.Cached, c.Planned, max(c.Calls, 0))
		}
		if _, err := tx.ExecContext(ctx, insertToolCallsSQL[bits.Len(uint(n))-1], args...); err != nil {
			if strings.Contains(err.Error(), "FOREIGN KEY") {
				return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, calls[0].ExecutionID)
			}
			return err
		}
		calls = calls[n:]
	}
	return nil
}

// maxRowsPerInsert is the most rows one INSERT of tool calls holds.
const maxRowsPerInsert = 32

// insertToolCallsSQL[i] inserts 1<<i tool calls.
var insertToolCallsSQL = func() []string {
	var out []string
	for n := 1; n <= maxRowsPerInsert; n *= 2 {
		q := "INSERT INTO tool_calls (execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned, calls) VALUES " +
			strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n)
		out = append(out, strings.TrimSuffix(q, ", "))
	}
	return out
}()

// ListExecutions returns audit records, newest first.
func (s *Store) ListExecutions(ctx context.Context, q memory.ExecutionQuery) ([]memory.Execution, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, 1000)
	var conds []string
	var args []any
	if q.Principal != nil {
		conds = append(conds, "principal = ?")
		args = append(args, *q.Principal)
	}
	if q.Session != "" {
		conds = append(conds, "session = ?")
		args = append(args, q.Session)
	}
	if q.Status != "" {
		conds = append(conds, "status = ?")
		args = append(args, q.Status)
	}
	if q.CodeHash != "" {
		conds = append(conds, "code_hash = ?")
		args = append(args, q.CodeHash)
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= ?")
		args = append(args, ms(q.Since))
	}
	if !q.Until.IsZero() {
		conds = append(conds, "started_at < ?")
		args = append(args, ms(q.Until))
	}
	if q.Before != nil {
		conds = append(conds, "(started_at < ? OR (started_at = ? AND id < ?))")
		args = append(args, ms(q.Before.StartedAt), ms(q.Before.StartedAt), q.Before.ID)
	}
	where := ""
	if len(conds) > 0 {
		where = "WHERE " + strings.Join(conds, " AND ")
	}
	code := "''"
	if q.WithCode {
		code = "code"
	}
	out := []memory.Execution{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, principal, session, language, `+code+`, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash FROM executions `+where+` ORDER BY started_at DESC, id DESC LIMIT ?`,
			append(args, q.Limit)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanExecution(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	return out, nil
}

func scanExecution(sc interface{ Scan(...any) error }) (memory.Execution, error) {
	var e memory.Execution
	var dur, started, updated int64
	err := sc.Scan(&e.ID, &e.Principal, &e.Session, &e.Language, &e.Code, &e.CodeHash, &e.Status, &e.ErrorKind, &e.ErrorMessage,
		&dur, &e.ToolCalls, &e.ResultBytes, &e.Toolset, &e.ToolsetDescription, &started, &updated, &e.Mode, &e.PlanHash)
	e.Duration = time.Duration(dur) * time.Microsecond
	e.StartedAt, e.UpdatedAt = fromMS(started), fromMS(updated)
	return e, err
}

// GetExecution returns one audit record, with its code, and its tool
// calls in order.
func (s *Store) GetExecution(ctx context.Context, id string) (memory.Execution, []memory.ToolCall, error) {
	var e memory.Execution
	calls := []memory.ToolCall{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = scanExecution(tx.QueryRowContext(ctx, `SELECT id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash FROM executions WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("execution %q: %w", id, memory.ErrNotFound)
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE execution_id = ? ORDER BY id`, id)
		if err != nil {
			return err
		}
		calls, err = scanToolCalls(rows)
		return err
	})
	if err != nil {
		return memory.Execution{}, nil, fmt.Errorf("get execution: %w", err)
	}
	return e, calls, nil
}

// ListToolCalls returns tool-call records, newest first.
func (s *Store) ListToolCalls(ctx context.Context, q memory.ToolCallQuery) ([]memory.ToolCall, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	conds := []string{"1"}
	var args []any
	if q.Tool != "" {
		conds = append(conds, "tool = ?")
		args = append(args, q.Tool)
	}
	if q.Status != "" {
		conds = append(conds, "status = ?")
		args = append(args, q.Status)
	}
	if !q.Since.IsZero() {
		conds = append(conds, "started_at >= ?")
		args = append(args, ms(q.Since))
	}
	out := []memory.ToolCall{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+toolCallColumns+` FROM tool_calls WHERE `+strings.Join(conds, " AND ")+` ORDER BY started_at DESC, id DESC LIMIT ?`, append(args, q.Limit)...)
		if err != nil {
			return err
		}
		out, err = scanToolCalls(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list tool calls: %w", err)
	}
	return out, nil
}

// toolCallColumns are the columns scanToolCalls reads, in order.
const toolCallColumns = `id, execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned, calls`

// scanToolCalls reads the rows of a query of toolCallColumns, and closes them.
func scanToolCalls(rows *sql.Rows) ([]memory.ToolCall, error) {
	defer rows.Close()
	out := []memory.ToolCall{}
	for rows.Next() {
		var c memory.ToolCall
		var dur, at int64
		if err := rows.Scan(&c.ID, &c.ExecutionID, &c.Tool, &c.ArgsHash, &c.Status, &c.ErrorCode, &dur, &at, &c.Cached, &c.Planned, &c.Calls); err != nil {
			return nil, err
		}
		c.Duration = time.Duration(dur) * time.Microsecond
		c.StartedAt = fromMS(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// RecordHTTPRequests appends HTTP request records. Their execution must
// have been recorded first.
func (s *Store) RecordHTTPRequests(ctx context.Context, reqs ...memory.HTTPRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
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
	var out []memory.HTTPRequest
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT execution_id, tool, method, host, status, error, attempt, duration_us, started_at
			FROM http_requests WHERE execution_id = ? ORDER BY id`, executionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r memory.HTTPRequest
			var us, started int64
			if err := rows.Scan(&r.ExecutionID, &r.Tool, &r.Method, &r.Host, &r.Status, &r.Error, &r.Attempt, &us, &started); err != nil {
				return err
			}
			r.Duration = time.Duration(us) * time.Microsecond
			r.StartedAt = fromMS(started)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("http requests of %s: %w", executionID, err)
	}
	return out, nil
}

func (s *Store) insertHTTPRequest(ctx context.Context, tx *sql.Tx, r memory.HTTPRequest) error {
	if r.StartedAt.IsZero() {
		r.StartedAt = s.now()
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO http_requests (execution_id, tool, method, host, status, error, attempt, duration_us, started_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ExecutionID, memory.Clip(r.Tool, 200), memory.Clip(r.Method, 16), memory.Clip(r.Host, 255), r.Status, memory.Clip(r.Error, 64),
		max(r.Attempt, 1), r.Duration.Microseconds(), ms(r.StartedAt)); err != nil {
		if strings.Contains(err.Error(), "FOREIGN KEY") {
			return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", memory.ErrNotFound, r.ExecutionID)
		}
		return err
	}
	return nil
}
