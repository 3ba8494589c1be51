package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Execution is the audit record of one execute_code run.
type Execution struct {
	// ID is chosen by the caller (unique); RecordExecution with the same
	// ID updates the record, so a run can be recorded when it starts and
	// again when it ends.
	ID        string `json:"id"`
	Principal string `json:"principal"`
	Session   string `json:"session"`
	Language  string `json:"language"`
	Code      string `json:"code"`
	// CodeHash is the hex SHA-256 of Code; computed when empty.
	CodeHash string `json:"code_hash"`
	// Status is the caller's word: running, ok, error, timeout…
	Status       string        `json:"status"`
	ErrorKind    string        `json:"error_kind,omitempty"`
	ErrorMessage string        `json:"error_message,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	ToolCalls    int           `json:"tool_calls"`
	ResultBytes  int64         `json:"result_bytes"`
	// Toolset is the key of the toolset the principal had for the run,
	// and ToolsetDescription its rules as text; both are empty when every
	// tool was reachable.
	Toolset            string    `json:"toolset,omitempty"`
	ToolsetDescription string    `json:"toolset_description,omitempty"`
	StartedAt          time.Time `json:"started_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	// Mode is "plan" for a dry run, "commit" for the commit of a plan,
	// and empty for an ordinary run; PlanHash is then the plan's
	// PlanIDHash (the id itself, which commits it, is not logged).
	Mode     string `json:"mode,omitempty"`
	PlanHash string `json:"plan_hash,omitempty"`
}

// ToolCall is the audit record of one tool call made by an execution.
type ToolCall struct {
	ID          int64  `json:"id"`
	ExecutionID string `json:"execution_id"`
	Tool        string `json:"tool"`
	// ArgsHash is the hex SHA-256 of the arguments; set by the caller, or
	// computed from Args when empty. Arguments themselves are not stored.
	ArgsHash  string        `json:"args_hash"`
	Args      []byte        `json:"-"`
	Status    string        `json:"status"`
	ErrorCode string        `json:"error_code,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	StartedAt time.Time     `json:"started_at"`
	// Cached: the result came from the memo cache, not from the tool.
	// Planned: a dry run recorded the call instead of making it.
	Cached  bool `json:"cached,omitempty"`
	Planned bool `json:"planned,omitempty"`
}

// Hash returns the hex SHA-256 of b, the form of CodeHash and ArgsHash.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// AuditCodeLimit is the most code an audit record keeps.
const AuditCodeLimit = 1 << 20

// RecordExecution inserts or updates the audit record e.ID.
func (s *Store) RecordExecution(ctx context.Context, e Execution) error {
	if e.ID == "" || len(e.ID) > 200 {
		return fmt.Errorf("record execution: %w: id must be 1 to 200 bytes", ErrInvalid)
	}
	if e.CodeHash == "" {
		e.CodeHash = Hash([]byte(e.Code))
	}
	if len(e.Code) > AuditCodeLimit {
		e.Code = e.Code[:AuditCodeLimit]
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = s.now()
	}
	now := s.now()
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO executions (id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET plan_hash = excluded.plan_hash, status = excluded.status, error_kind = excluded.error_kind, error_message = excluded.error_message,
			duration_us = excluded.duration_us, tool_calls = excluded.tool_calls, result_bytes = excluded.result_bytes, updated_at = excluded.updated_at`,
			e.ID, e.Principal, e.Session, e.Language, e.Code, e.CodeHash, e.Status, e.ErrorKind, Clip(e.ErrorMessage, 4000),
			e.Duration.Microseconds(), e.ToolCalls, e.ResultBytes, Clip(e.Toolset, 200), Clip(e.ToolsetDescription, 4000), ms(e.StartedAt), ms(now), e.Mode, e.PlanHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("record execution %s: %w", e.ID, err)
	}
	return nil
}

// RecordToolCalls appends tool-call records. Their execution must have
// been recorded first.
func (s *Store) RecordToolCalls(ctx context.Context, calls ...ToolCall) error {
	if len(calls) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, c := range calls {
			if c.ArgsHash == "" {
				c.ArgsHash = Hash(c.Args)
			}
			if c.StartedAt.IsZero() {
				c.StartedAt = s.now()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tool_calls (execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ExecutionID, c.Tool, c.ArgsHash, c.Status, c.ErrorCode, c.Duration.Microseconds(), ms(c.StartedAt), c.Cached, c.Planned); err != nil {
				if strings.Contains(err.Error(), "FOREIGN KEY") {
					return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", ErrNotFound, c.ExecutionID)
				}
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

// ExecutionQuery selects audit records. Empty fields select all.
type ExecutionQuery struct {
	Principal *string
	Session   string
	Status    string
	CodeHash  string
	Since     time.Time
	Until     time.Time
	// Before continues a listing: records started before this one's
	// (StartedAt, ID).
	Before *Execution
	Limit  int // default 50, at most 1000
	// WithCode includes the code (omitted by default to keep listings
	// small).
	WithCode bool
}

// ListExecutions returns audit records, newest first.
func (s *Store) ListExecutions(ctx context.Context, q ExecutionQuery) ([]Execution, error) {
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
	out := []Execution{}
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

func scanExecution(sc interface{ Scan(...any) error }) (Execution, error) {
	var e Execution
	var dur, started, updated int64
	err := sc.Scan(&e.ID, &e.Principal, &e.Session, &e.Language, &e.Code, &e.CodeHash, &e.Status, &e.ErrorKind, &e.ErrorMessage,
		&dur, &e.ToolCalls, &e.ResultBytes, &e.Toolset, &e.ToolsetDescription, &started, &updated, &e.Mode, &e.PlanHash)
	e.Duration = time.Duration(dur) * time.Microsecond
	e.StartedAt, e.UpdatedAt = fromMS(started), fromMS(updated)
	return e, err
}

// GetExecution returns one audit record, with its code, and its tool
// calls in order.
func (s *Store) GetExecution(ctx context.Context, id string) (Execution, []ToolCall, error) {
	var e Execution
	calls := []ToolCall{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = scanExecution(tx.QueryRowContext(ctx, `SELECT id, principal, session, language, code, code_hash, status, error_kind, error_message,
			duration_us, tool_calls, result_bytes, toolset, toolset_description, started_at, updated_at, mode, plan_hash FROM executions WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("execution %q: %w", id, ErrNotFound)
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
		return Execution{}, nil, fmt.Errorf("get execution: %w", err)
	}
	return e, calls, nil
}

// ToolCallQuery selects tool-call records across executions.
type ToolCallQuery struct {
	Tool   string
	Status string
	Since  time.Time
	Limit  int // default 100, at most 1000
}

// ListToolCalls returns tool-call records, newest first.
func (s *Store) ListToolCalls(ctx context.Context, q ToolCallQuery) ([]ToolCall, error) {
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
	out := []ToolCall{}
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
const toolCallColumns = `id, execution_id, tool, args_hash, status, error_code, duration_us, started_at, cached, planned`

// scanToolCalls reads the rows of a query of toolCallColumns, and closes them.
func scanToolCalls(rows *sql.Rows) ([]ToolCall, error) {
	defer rows.Close()
	out := []ToolCall{}
	for rows.Next() {
		var c ToolCall
		var dur, at int64
		if err := rows.Scan(&c.ID, &c.ExecutionID, &c.Tool, &c.ArgsHash, &c.Status, &c.ErrorCode, &dur, &at, &c.Cached, &c.Planned); err != nil {
			return nil, err
		}
		c.Duration = time.Duration(dur) * time.Microsecond
		c.StartedAt = fromMS(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// HTTPRequest is the audit record of one HTTP request a tool call of an
// execution sent (one attempt): never its headers, body, query string or
// credentials.
type HTTPRequest struct {
	ExecutionID string        `json:"execution_id"`
	Tool        string        `json:"tool"`
	Method      string        `json:"method"`
	Host        string        `json:"host"`
	Status      int           `json:"status,omitempty"`
	Error       string        `json:"error,omitempty"`
	Attempt     int           `json:"attempt"`
	Duration    time.Duration `json:"duration_ns"`
	StartedAt   time.Time     `json:"started_at"`
}

// RecordHTTPRequests appends HTTP request records. Their execution must
// have been recorded first.
func (s *Store) RecordHTTPRequests(ctx context.Context, reqs ...HTTPRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, r := range reqs {
			if r.StartedAt.IsZero() {
				r.StartedAt = s.now()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO http_requests (execution_id, tool, method, host, status, error, attempt, duration_us, started_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ExecutionID, Clip(r.Tool, 200), Clip(r.Method, 16), Clip(r.Host, 255), r.Status, Clip(r.Error, 64),
				max(r.Attempt, 1), r.Duration.Microseconds(), ms(r.StartedAt)); err != nil {
				if strings.Contains(err.Error(), "FOREIGN KEY") {
					return fmt.Errorf("%w: execution %q is not recorded; call RecordExecution first", ErrNotFound, r.ExecutionID)
				}
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
func (s *Store) HTTPRequests(ctx context.Context, executionID string) ([]HTTPRequest, error) {
	var out []HTTPRequest
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT execution_id, tool, method, host, status, error, attempt, duration_us, started_at
			FROM http_requests WHERE execution_id = ? ORDER BY id`, executionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r HTTPRequest
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
