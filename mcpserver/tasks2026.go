package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// execute_code as a task of the 2026 tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663 as accepted into the
// specification repository, Final, last changed 2026-07-22), beside the
// 2025-11-25 tasks of tasks.go, which mcp-go keeps. mcp-go knows nothing
// of the extension, so codecell keeps these tasks itself:
//
//   - A tools/call of execute_code on protocol 2026-07-28 whose client
//     capabilities declare the extension starts its run in the
//     background. The server decides, as the extension has it: a run that
//     ends within inlineWait is answered as usual (CallToolResult); one
//     that asks the client (llm.*, approval.request, a guarded call) or
//     runs longer becomes a task, answered with resultType "task"
//     (CreateTaskResult). The `task` parameter of 2025-11-25 is ignored
//     on such requests, as the extension requires.
//   - tasks/get tells the task's status; "input_required" with the
//     questions the run waits on (inputRequests, MRTR's shapes), and
//     "completed" with the run's CallToolResult. tasks/update answers
//     the questions: the run, still running, goes on (no replay).
//     tasks/cancel stops the run. tasks/result and tasks/list do not
//     exist on this protocol (-32601).
//   - A task is its principal's: another principal's task id is "not
//     found" (-32602), as is an expired one. The TTLs and the bounds on
//     the tasks kept, per principal and installation-wide, are the 2025
//     tasks' (engine.Tasks, shared with them).
//
// mcp-go's tools/call result type cannot carry a task's fields, so the
// handler hands the task to the transport in the result's _meta
// (taskMetaKey), and the transports rewrite that result as the
// CreateTaskResult the client reads (taskResultOf).

// ExtensionTasks is the 2026 tasks extension's identifier.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

const (
	// taskMetaKey carries a created task from execute_code's handler to
	// the transport, which makes the result a CreateTaskResult.
	taskMetaKey = "io.github.codecell/create-task"
	// inlineWait is how long a tools/call waits for its run before it
	// answers with a task instead, unless Config.TaskInline says.
	inlineWait = time.Second
	// taskPollInterval is the polling interval a task suggests.
	taskPollInterval = 500 * time.Millisecond
	// The extension's task states.
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskCancelled     = "cancelled"
)

// tasks26 keeps the 2026 tasks of execute_code.
type tasks26 struct {
	tasks  *engine.Tasks
	caller func(context.Context) string
	inline time.Duration
	// crashed answers a run that panicked (Server.crashedRun): the
	// task fails, the server goes on.
	crashed func(p any) *mcp.CallToolResult

	mu   sync.Mutex
	byID map[string]*task26
}

func newTasks26(tasks *engine.Tasks, caller func(context.Context) string, inline time.Duration) *tasks26 {
	if inline <= 0 {
		inline = inlineWait
	}
	return &tasks26{tasks: tasks, caller: caller, inline: inline, byID: map[string]*task26{}}
}

// task26 is one 2026 task: its run, its status, its questions.
type task26 struct {
	et        *engine.Task
	id        string
	principal string
	created   time.Time
	ttl       time.Duration
	// sampling and elicitation say the request that created the task
	// declared the capabilities: its run may ask for them.
	sampling, elicitation bool

	mu       sync.Mutex
	status   string
	message  string
	updated  time.Time
	asks     map[string]*taskAsk // outstanding, by key
	asked    int                 // keys handed out, never reused
	cancel   bool                // tasks/cancel was asked
	needs    chan struct{}       // closed at the first question
	needsSet bool
}

// taskAsk is a question a task's run waits on.
type taskAsk struct {
	req    mcp.InputRequest
	answer chan json.RawMessage // buffered 1
}

type task26Key struct{}

func withTask26(ctx context.Context, t *task26) context.Context {
	return context.WithValue(ctx, task26Key{}, t)
}

// task26From is the 2026 task whose run ctx belongs to, or nil.
func task26From(ctx context.Context) *task26 {
	t, _ := ctx.Value(task26Key{}).(*task26)
	return t
}

// declares reports whether a request of protocol 2026-07-28 declared the
// extension in its client capabilities.
func declaresTasks(ctx context.Context) (info *server.RequestProtocolInfo, ok bool) {
	info = server.RequestProtocolInfoFromContext(ctx)
	if info == nil || !info.Modern || info.ClientCapabilities == nil {
		return info, false
	}
	_, ok = info.ClientCapabilities.Extensions[ExtensionTasks]
	return info, ok
}

// wants reports whether an execute_code call may become a 2026 task.
func (tc *tasks26) wants(ctx context.Context) bool {
	if tc.tasks.Disabled() {
		return false
	}
	_, ok := declaresTasks(ctx)
	return ok
}

// hooks advertises the extension in server/discover, in place of the
// 2025-11-25 tasks capability, and drops the 2025-11-25 task parameter
// of the requests of 2026-07-28, which the extension ignores.
func (tc *tasks26) hooks(h *server.Hooks) {
	if tc.tasks.Disabled() {
		return
	}
	h.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		if res == nil {
			return
		}
		ext := make(map[string]any, len(res.Capabilities.Extensions)+1)
		for k, v := range res.Capabilities.Extensions {
			ext[k] = v
		}
		ext[ExtensionTasks] = map[string]any{}
		res.Capabilities.Extensions = ext
		res.Capabilities.Tasks = nil
	})
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
			req.Params.Task = nil
		}
	})
}

// newTaskID is an unguessable task id.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// run runs an execute_code call that may become a task: it answers with
// the run's result when the run ends within tc.inline without asking
// the client, and with a task otherwise.
func (tc *tasks26) run(ctx context.Context, req mcp.CallToolRequest, run func(context.Context, mcp.CallToolRequest, *engine.Task) *mcp.CallToolResult) *mcp.CallToolResult {
	info, _ := declaresTasks(ctx)
	now := time.Now()
	t := &task26{id: newTaskID(), principal: tc.caller(ctx), created: now, ttl: tc.tasks.TTL(), status: taskWorking, updated: now,
		asks: map[string]*taskAsk{}, needs: make(chan struct{})}
	if caps := info.ClientCapabilities; caps != nil {
		t.sampling, t.elicitation = caps.Sampling != nil, caps.Elicitation != nil
	}
	t.et = tc.tasks.Add(t.id, t.principal, t.created, t.ttl)
	if t.et.Refused() != "" {
		tc.tasks.Forget(t.et)
		return run(ctx, req, t.et) // the refusal, at once
	}
	tc.keep(t)
	// The run outlives the request; it sends no progress or log
	// notifications, which the extension does not carry for tasks.
	runCtx, end := tc.tasks.Start(ctx, t.et)
	quiet := *info
	quiet.LogLevel = ""
	runCtx = withTask26(server.WithRequestProtocolInfo(runCtx, &quiet), t)
	if req.Params.Meta != nil {
		meta := *req.Params.Meta
		meta.ProgressToken = nil
		req.Params.Meta = &meta
	}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		defer end()
		var res *mcp.CallToolResult
		func() {
			defer func() {
				if p := recover(); p != nil {
					res = tc.crashed(p)
				}
			}()
			res = run(runCtx, req, t.et)
		}()
		t.finish(tc.tasks, res)
		done <- res
	}()
	timer := time.NewTimer(tc.inline)
	defer timer.Stop()
	select {
	case res := <-done:
		// Ended in time, and never asked: an ordinary result, and no task.
		tc.forget(t.id)
		tc.tasks.Forget(t.et)
		return res
	case <-t.needs:
	case <-timer.C:
	case <-ctx.Done():
	}
	return t.created26()
}

// keep adds t, and forgets the tasks that expired or were dropped.
func (tc *tasks26) keep(t *task26) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	now := time.Now()
	for id, o := range tc.byID {
		if now.After(o.created.Add(o.ttl)) || !tc.tasks.OwnedBy(id, o.principal) {
			delete(tc.byID, id)
		}
	}
	tc.byID[t.id] = t
}

func (tc *tasks26) forget(id string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.byID, id)
}

// find is the caller's task id; nil when there is none: unknown,
// expired, dropped, or another principal's.
func (tc *tasks26) find(ctx context.Context, id string) *task26 {
	tc.mu.Lock()
	t := tc.byID[id]
	tc.mu.Unlock()
	if t == nil || t.principal != tc.caller(ctx) || time.Now().After(t.created.Add(t.ttl)) || !tc.tasks.OwnedBy(id, t.principal) {
		return nil
	}
	return t
}

// finish keeps the run's result: the task is completed, or cancelled
// when tasks/cancel came first.
func (t *task26) finish(tasks *engine.Tasks, res *mcp.CallToolResult) {
	b, _ := json.Marshal(res)
	tasks.Finish(t.et, b)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.updated = time.Now()
	clear(t.asks)
	if t.cancel {
		t.status, t.message = taskCancelled, "cancelled by tasks/cancel"
		return
	}
	t.status, t.message = taskCompleted, ""
}

// view is the task as the extension shows it: details adds the
// questions or the result its status has.
func (t *task26) view(details bool) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := map[string]any{
		"taskId":         t.id,
		"status":         t.status,
		"createdAt":      t.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.updated.UTC().Format(time.RFC3339Nano),
		"ttlMs":          t.ttl.Milliseconds(),
		"pollIntervalMs": taskPollInterval.Milliseconds(),
	}
	if t.message != "" {
		v["statusMessage"] = t.message
	}
	if !details {
		return v
	}
	switch t.status {
	case taskInputRequired:
		reqs := make(mcp.InputRequests, len(t.asks))
		for k, a := range t.asks {
			reqs[k] = a.req
		}
		v["inputRequests"] = reqs
	case taskCompleted:
		if body, ok := t.et.Result(); ok && body != nil {
			v["result"] = json.RawMessage(body)
		}
	}
	return v
}

// created26 is the tools/call result that hands the task to the
// transport (taskResultOf).
func (t *task26) created26() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Result:  mcp.Result{ResultType: "task", Meta: &mcp.Meta{AdditionalFields: map[string]any{taskMetaKey: t.view(false)}}},
		Content: []mcp.Content{},
	}
}

// ask puts a question to the task's client and waits for its answer
// (tasks/update): the task is input_required meanwhile.
func (t *task26) ask(ctx context.Context, kind string, req mcp.InputRequest) (json.RawMessage, error) {
	a := &taskAsk{req: req, answer: make(chan json.RawMessage, 1)}
	t.mu.Lock()
	if t.status == taskCompleted || t.status == taskCancelled {
		t.mu.Unlock()
		return nil, context.Canceled
	}
	t.asked++
	key := fmt.Sprintf("%s.%d", kind, t.asked)
	t.asks[key] = a
	t.status, t.updated = taskInputRequired, time.Now()
	t.message = fmt.Sprintf("waits for the client's answer to %d request(s): answer them with tasks/update", len(t.asks))
	if !t.needsSet {
		t.needsSet = true
		close(t.needs)
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.asks, key)
		if t.status == taskInputRequired {
			if len(t.asks) == 0 {
				t.status, t.message = taskWorking, ""
			} else {
				t.message = fmt.Sprintf("waits for the client's answer to %d request(s): answer them with tasks/update", len(t.asks))
			}
			t.updated = time.Now()
		}
	}()
	select {
	case b := <-a.answer:
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// answer gives the run the answers to its outstanding questions; those
// to no outstanding question are ignored.
func (t *task26) answer(responses map[string]json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, b := range responses {
		if a, ok := t.asks[k]; ok {
			select {
			case a.answer <- b:
			default: // answered already
			}
		}
	}
}

// can says whether the task's client may be asked for what.
func (t *task26) can(tool string, what engine.Capability) error {
	if (what == engine.Sampling && t.sampling) || (what == engine.Elicitation && t.elicitation) {
		return nil
	}
	return &tools.Error{Code: engine.CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf("the MCP client did not declare the %s capability in the request that created this task (clientCapabilities in _meta): declare it so that a task's program can ask the client through the task's inputRequests", what)}
}

func (t *task26) sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	b, err := t.ask(ctx, "sample", mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to the sampling request (tasks/update): %w", err)
	}
	return &res, nil
}

func (t *task26) elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	b, err := t.ask(ctx, "elicit", mcp.NewElicitationInputRequest(req.Params))
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to the elicitation request (tasks/update): %w", err)
	}
	return &res, nil
}

// The extension's methods, and the 2025-11-25 methods it removes.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
)

// isTasks26Method reports whether body is a tasks/ request of protocol
// 2026-07-28, which codecell answers before mcp-go (whose tasks/ methods
// are 2025-11-25's).
func isTasks26Method(body []byte) (rpcRequest, bool) {
	var r rpcRequest
	if !bytes.Contains(body, []byte(`"tasks/`)) || json.Unmarshal(body, &r) != nil {
		return r, false
	}
	switch r.Method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel, methodTasksResult, methodTasksList:
	default:
		return r, false
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return r, false
	}
	v, _ := p.Meta["io.modelcontextprotocol/protocolVersion"].(string)
	return r, mcp.IsModernProtocol(v)
}

// taskID is the task id of a tasks/ request's params.
func taskIDOf(params json.RawMessage) string {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.TaskID
}

// tasksMethod answers a tasks/ request of protocol 2026-07-28.
func (tc *tasks26) method(ctx context.Context, r rpcRequest) (any, *rpcErr) {
	if r.Method == methodTasksResult || r.Method == methodTasksList || tc.tasks.Disabled() {
		return nil, &rpcErr{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("%s: no such method on protocol 2026-07-28 (the tasks extension has tasks/get, tasks/update and tasks/cancel)", r.Method)}
	}
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Caps struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: r.Method + ": params must be {taskId, …}"}
	}
	if _, ok := p.Meta.Caps.Extensions[ExtensionTasks]; !ok {
		return nil, &rpcErr{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Message: "Missing required client capability: declare the extension " + ExtensionTasks + " in the request's clientCapabilities",
			Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}}}
	}
	t := tc.find(ctx, p.TaskID)
	if t == nil {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: "Failed to retrieve task: Task not found (unknown, expired, or dropped to make room for newer tasks)"}
	}
	switch r.Method {
	case methodTasksGet:
		v := t.view(true)
		v["resultType"] = mcp.ResultTypeComplete
		return v, nil
	case methodTasksUpdate:
		t.answer(p.InputResponses)
	case methodTasksCancel:
		t.mu.Lock()
		if t.status != taskCompleted && t.status != taskCancelled {
			t.cancel = true
		}
		t.mu.Unlock()
		tc.tasks.Cancel(t.id)
	}
	return map[string]any{"resultType": mcp.ResultTypeComplete}, nil
}

// answer26 answers a tasks/ request of protocol 2026-07-28; nil for a
// notification.
func (s *Server) answer26(ctx context.Context, r rpcRequest) []byte {
	if len(r.ID) == 0 || string(r.ID) == "null" {
		return nil
	}
	var out any
	if result, rerr := s.tasks26.method(ctx, r); rerr != nil {
		out = map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": rerr}
	} else {
		out = map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": result}
	}
	b, _ := json.Marshal(out)
	return b
}

// nameMismatch is the -32020 answer to a tasks/ request over Streamable
// HTTP whose Mcp-Name header is not its taskId, as the extension
// requires; nil when it matches.
func nameMismatch(h http.Header, r rpcRequest) []byte {
	name, ok := mcp.DecodeHeaderValue(h.Get(mcp.HeaderName))
	if id := taskIDOf(r.Params); ok && name == id {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": rpcErr{Code: mcp.HEADER_MISMATCH, Message: "Mcp-Name header does not match the body's taskId"}})
	return b
}

// taskResultOf rewrites a JSON-RPC response whose result hands over a
// created task (created26) as the extension's CreateTaskResult; any
// other message comes back as it was.
func taskResultOf(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(taskMetaKey)) {
		return msg
	}
	var m struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id"`
		Result  map[string]json.RawMessage `json:"result"`
	}
	if json.Unmarshal(bytes.TrimSpace(msg), &m) != nil || m.Result == nil || string(m.Result["resultType"]) != `"task"` {
		return msg
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m.Result["_meta"], &meta) != nil || meta[taskMetaKey] == nil {
		return msg
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(meta[taskMetaKey], &res) != nil {
		return msg
	}
	delete(meta, taskMetaKey)
	res["resultType"] = json.RawMessage(`"task"`)
	if len(meta) > 0 {
		res["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(map[string]any{"jsonrpc": m.JSONRPC, "id": m.ID, "result": res})
	if err != nil {
		return msg
	}
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// taskResults rewrites, on Streamable HTTP, the answer to a tools/call
// that became a task (taskResultOf). Only requests of protocol
// 2026-07-28 that declare the extension can become tasks; the others
// pass untouched.
func (s *Server) taskResults(next http.Handler) http.Handler {
	if s.eng.Tasks().Disabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil || !bytes.Contains(body, []byte(ExtensionTasks)) || !bytes.Contains(body, []byte(`"tools/call"`)) {
			next.ServeHTTP(w, r)
			return
		}
		tw := &taskResultWriter{ResponseWriter: w}
		next.ServeHTTP(tw, r)
		tw.close()
	})
}

// taskResultWriter holds a JSON answer back until it is whole, to
// rewrite it; an event stream's events are rewritten one by one.
type taskResultWriter struct {
	http.ResponseWriter
	decided, events bool
	status          int
	held            []byte
}

func (w *taskResultWriter) decide() {
	if !w.decided {
		w.decided = true
		w.events = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
}

func (w *taskResultWriter) WriteHeader(code int) {
	w.decide()
	if w.events {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.status = code
}

func (w *taskResultWriter) Write(p []byte) (int, error) {
	w.decide()
	w.held = append(w.held, p...)
	if !w.events {
		return len(p), nil
	}
	for {
		end := eventEnd(w.held)
		if end < 0 {
			return len(p), nil
		}
		event := w.held[:end]
		if bytes.Contains(event, []byte(taskMetaKey)) {
			event = rewriteEvent(event)
		}
		if _, err := w.ResponseWriter.Write(event); err != nil {
			return 0, err
		}
		w.held = w.held[end:]
	}
}

// Flush passes a flush on for event streams; a JSON answer is written
// whole when the handler returns.
func (w *taskResultWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.events {
		f.Flush()
	}
}

func (w *taskResultWriter) close() {
	if w.events {
		if len(w.held) > 0 {
			w.ResponseWriter.Write(w.held)
		}
		return
	}
	out := taskResultOf(w.held)
	if len(out) != len(w.held) {
		w.Header().Del("Content-Length")
	}
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(w.status)
	}
	if len(out) > 0 {
		w.ResponseWriter.Write(out)
	}
}

// rewriteEvent rewrites the data of an event that hands over a task.
func rewriteEvent(event []byte) []byte {
	lines := bytes.SplitAfter(event, []byte("\n"))
	for i, l := range lines {
		if data, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			trimmed := bytes.TrimRight(data, "\r\n")
			lines[i] = append(append([]byte("data: "), taskResultOf(trimmed)...), data[len(trimmed):]...)
		}
	}
	return bytes.Join(lines, nil)
}
