package engine

import (
	"sync"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Run is a run as the gate and the runtime helpers see it: one program's
// run (Execute), a commit of a plan (Commit), or direct mode's one call.
// Every Call names its Run, and every stage and helper reads it there.
type Run struct {
	// ID is the run's execution id; "" for a direct call.
	ID string
	// Caller is who the run is for.
	Caller tools.Caller
	// Local says the caller is the local user over stdio.
	Local bool

	// vault holds the tokens of the caller's session.
	vault *filter.Vault
	// flow follows what the run received from each source, for the
	// data-flow rules and the output filter; nil follows nothing. keep
	// holds what it keeps until the run is over (flowKeep).
	flow     *tracker
	flowKeep *flowKeep
	// plan, in a dry run, records the writes instead of making them.
	plan *planRecorder
	// purpose is the run's purpose as execute_code gave it, shown when
	// a call needs approval.
	purpose string
	// progress, when set, passes on what tools report of their progress
	// (an upstream server's notifications), as the run's progress.
	progress func(message string, fraction float64)
	// resume, when the run may stop to ask the client and be resumed
	// (protocol 2026-07-28), journals its calls and replays them (mrtr.go).
	resume *resumption
	// log keeps what the run's calls leave for its record and the audit
	// log; nil for a direct call, which keeps nothing and has no llm
	// budget of its own.
	log *runLog
	// results bounds the bytes of the run's tool results in flight,
	// made on first use (inflight.go).
	resultsOnce sync.Once
	results     *byteBudget
	// kept is what the run's calls hold of their results' bytes until
	// the sandbox has the results (Run.keep), until keptEnded.
	keptMu    sync.Mutex
	kept      []func()
	keptEnded bool
}

// settled waits for the run's observations in progress and returns its
// flow; nil when the run follows none.
func (r *Run) settled() *filter.Flow {
	if r.flow == nil {
		return nil
	}
	return r.flow.settled()
}

// runLog is what a run's calls leave beside their results: their audit
// rows, the HTTP requests they sent, the artifacts they made, and the
// llm budget they spent.
type runLog struct {
	execID string

	mu        sync.Mutex
	calls     []memory.ToolCall
	requests  []memory.HTTPRequest
	artifacts []tools.Artifact
	// llm is the run's llm budget spent (llm.go, under the llmUsage's
	// lock).
	llm llmBudget
}

func newRunLog(execID string) *runLog { return &runLog{execID: execID} }

// llmBudget is what a run has spent of its llm budget (llm.go charges
// it).
type llmBudget struct {
	calls, tokens int
}

// maxArtifacts bounds the artifacts a run's record lists; maxRequests
// the HTTP requests its audit record keeps.
const (
	maxArtifacts = 100
	maxRequests  = 10000
)

// addCall keeps a call's audit row.
func (l *runLog) addCall(c memory.ToolCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// noteApproved keeps an accepted approval of a call of tool in the run's
// audit record: a row of its own before the call's, with status
// "approved" and the time the user took. (A refused call's own row says
// why: error code approval_declined or approval_unavailable.)
func (l *runLog) noteApproved(tool string, asked time.Time) {
	l.addCall(memory.ToolCall{ExecutionID: l.execID, Tool: tool, Status: "approved", Duration: time.Since(asked), StartedAt: asked})
}

// addArtifact records an artifact a tool made: binary contents of an
// upstream result, kept as stored results.
func (l *runLog) addArtifact(a tools.Artifact) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.artifacts) < maxArtifacts {
		l.artifacts = append(l.artifacts, a)
	}
}

// addRequest keeps an HTTP request a tool sent, for the audit log.
func (l *runLog) addRequest(q tools.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.requests) < maxRequests {
		l.requests = append(l.requests, memory.HTTPRequest{ExecutionID: l.execID, Tool: q.Tool, Method: q.Method, Host: q.Host,
			Status: q.Status, Error: q.Error, Attempt: q.Attempt, Duration: q.Duration, StartedAt: q.Started})
	}
}

// auditCalls returns the calls made so far.
func (l *runLog) auditCalls() []memory.ToolCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// auditRequests returns the HTTP requests sent so far.
func (l *runLog) auditRequests() []memory.HTTPRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests
}

// runArtifacts returns the artifacts made so far.
func (l *runLog) runArtifacts() []tools.Artifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.artifacts
}
