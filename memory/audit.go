package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Execution is the audit record of one execute_code run.
type Execution struct {
	// ID is chosen by the caller (unique); RecordExecution with the same
	// ID updates the record, so a run can be recorded when it starts and
	// again when it ends.
	ID        string `json:"id"`
	Principal string `json:"principal"`
	// Session is the MCP session the run came in. The store keeps only
	// its SessionHash, as the server log writes it (a session ID is a
	// bearer credential for its session), so a record read back carries
	// the hash.
	Session  string `json:"session"`
	Language string `json:"language"`
	Code     string `json:"code"`
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
	// Calls is set on an aggregate row: the audit keeps a principal's
	// calls a row each up to a daily allowance, and past it a run's
	// calls of one tool with one outcome (Status, ErrorCode, Cached,
	// Planned) as one row that stands for Calls calls, with Duration
	// their total, StartedAt the first one's and no ArgsHash. Zero on the
	// row of a single call.
	Calls int `json:"calls,omitempty"`
}

// Hash returns the hex SHA-256 of b, the form of CodeHash and ArgsHash.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// SessionHash is the form of an MCP session ID that the audit log, the
// server log and spans keep: a session ID is a bearer credential for its
// session, and a short hash tells sessions apart and joins the audit log
// to the server log. Empty for no session.
func SessionHash(id string) string {
	if id == "" {
		return ""
	}
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:4])
}

// AuditCodeLimit is the most code an audit record keeps.
const AuditCodeLimit = 1 << 20

// ExecutionQuery selects audit records. Empty fields select all.
type ExecutionQuery struct {
	Principal *string
	// Session selects a session's runs by its SessionHash, the form the
	// audit log and the server log (session_hash) keep.
	Session  string
	Status   string
	CodeHash string
	Since    time.Time
	Until    time.Time
	// Before continues a listing: records started before this one's
	// (StartedAt, ID).
	Before *Execution
	Limit  int // default 50, at most 1000
	// WithCode includes the code (omitted by default to keep listings
	// small).
	WithCode bool
}

// ToolCallQuery selects tool-call records across executions.
type ToolCallQuery struct {
	Tool   string
	Status string
	Since  time.Time
	Limit  int // default 100, at most 1000
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

// AuditRecord is one run's whole audit: its execution, the calls its
// program made and the HTTP requests those sent. A store's RecordAudit
// writes any number of them in one transaction.
type AuditRecord struct {
	Execution    Execution
	ToolCalls    []ToolCall
	HTTPRequests []HTTPRequest
}
