package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Record is what a run returns to its caller: the run record, with the
// result and logs as the output filter left them, what the filter did,
// where the full result is kept, and the context ledger.
type Record struct {
	*executor.Result
	// Filter says what the output filter found and did.
	Filter *filter.Report `json:"filter,omitempty"`
	// ResultURI addresses the full (filtered) result when the model got
	// less than all of it.
	ResultURI string `json:"result_uri,omitempty"`
	// Ledger compares what the program read from tools with what the
	// model receives.
	Ledger Ledger `json:"ledger"`
}

// Ledger is the context a run saved: the bytes the program received from
// tools against the bytes returned to the model, with estimated tokens.
type Ledger struct {
	FromToolsBytes  int `json:"from_tools_bytes"`
	FromToolsTokens int `json:"from_tools_tokens"`
	ToModelBytes    int `json:"to_model_bytes"`
	ToModelTokens   int `json:"to_model_tokens"`
}

// Totals are a session's running totals, readable as a resource.
type Totals struct {
	Runs            int            `json:"runs"`
	Failed          int            `json:"failed"`
	ToolCalls       int            `json:"tool_calls"`
	FromToolsBytes  int            `json:"from_tools_bytes"`
	FromToolsTokens int            `json:"from_tools_tokens"`
	ToModelBytes    int            `json:"to_model_bytes"`
	ToModelTokens   int            `json:"to_model_tokens"`
	Findings        map[string]int `json:"findings"`
	Tokenized       int            `json:"tokenized"`
	Redacted        int            `json:"redacted"`
}

// session is the state codecell keeps for one MCP session, in memory
// only: the vault of tokens and the running totals.
type session struct {
	vault *filter.Vault

	mu     sync.Mutex
	totals Totals
}

// sessions holds the live sessions' state, created on first use and
// dropped when the session ends.
type sessions struct {
	key   filter.Key
	rules []filter.Rule

	mu sync.Mutex
	m  map[string]*session
}

func (ss *sessions) get(id string) (*session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.m[id]; ok {
		return s, nil
	}
	v, err := filter.NewVault(ss.key, filter.VaultOptions{Rules: ss.rules})
	if err != nil {
		return nil, fmt.Errorf("new vault: %w", err)
	}
	s := &session{vault: v, totals: Totals{Findings: map[string]int{}}}
	ss.m[id] = s
	return s, nil
}

func (ss *sessions) drop(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

func (ss *sessions) hooks(h *server.Hooks) {
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		ss.drop(cs.SessionID())
	})
}

// origins remembers the results of a run's tool calls, so the filter can
// tell which tools a sensitive value came from. It keeps up to
// maxOriginBytes; beyond that, sources of later values are unknown.
type origins struct {
	mu      sync.Mutex
	results []origin
	bytes   int
}

type origin struct {
	tool   string
	result []byte
}

const maxOriginBytes = 16 << 20

func (o *origins) add(tool string, result []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bytes+len(result) > maxOriginBytes {
		return
	}
	o.results = append(o.results, origin{tool, result})
	o.bytes += len(result)
}

// sources returns the tools whose results contained value.
func (o *origins) sources(value string) []string {
	enc, err := json.Marshal(value)
	if err != nil || len(enc) < 2 {
		return nil
	}
	needle := enc[1 : len(enc)-1]
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, r := range o.results {
		if !seen[r.tool] && bytes.Contains(r.result, needle) {
			seen[r.tool] = true
			out = append(out, r.tool)
		}
	}
	return out
}

// resolveTokens turns the tokens in a call's arguments back into their
// values, under the exfiltration rules.
func resolveTokens(v *filter.Vault, name string, args json.RawMessage) (json.RawMessage, error) {
	if v == nil || !bytes.Contains(args, []byte("⟦")) {
		return args, nil
	}
	out, err := v.Resolve(args, name)
	var re *filter.RuleError
	var te *filter.TokenError
	switch {
	case errors.As(err, &re):
		return nil, &tools.Error{Code: "policy_violation", Tool: name, Message: re.Error(), Err: err}
	case errors.As(err, &te):
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: te.Error(), Err: err}
	case err != nil:
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: "arguments: " + err.Error(), Err: err}
	}
	return out, nil
}

// finish runs the output filter over a run, keeps the full result when
// the model gets less than all of it, and fills the ledger.
func (s *Server) finish(ctx context.Context, sess *session, org *origins, execID string, budget int, res *executor.Result) (*Record, string) {
	rec := &Record{Result: res}
	opts := filter.Options{Origin: org.sources, Budget: budget}
	if sess != nil {
		opts.Vault = sess.vault
	}
	lines := make([]string, len(res.Logs))
	for i, l := range res.Logs {
		lines[i] = l.Message
	}
	out, err := s.filter.Apply(filter.Input{Result: res.Value, Logs: lines}, opts)
	if err != nil {
		// The executor only returns valid JSON; a failure here is ours.
		s.log.Error("filter", "id", execID, "err", err)
		res.Value = json.RawMessage("null")
		res.Logs = []executor.LogLine{}
		rep := filter.Report{}
		rec.Filter = &rep
	} else {
		res.Value = out.Limited
		logs := make([]executor.LogLine, len(out.Logs))
		for i, msg := range out.Logs {
			logs[i] = executor.LogLine{Level: res.Logs[i].Level, Message: msg}
		}
		res.Logs = logs
		rec.Filter = &out.Report
	}
	if res.Error != nil {
		res.Error.Message, _ = s.filter.ApplyText(res.Error.Message, opts)
		res.Error.Stack, _ = s.filter.ApplyText(res.Error.Stack, opts)
	}
	if err == nil && out.Report.Cut && s.cfg.Store != nil {
		start := time.Now()
		info, perr := s.cfg.Store.PutResult(ctx, memory.PutResultInput{ExecutionID: execID, Data: out.Full})
		s.metrics.observeStore("put_result", time.Since(start))
		if perr != nil {
			s.log.Error("store result", "id", execID, "err", perr)
		} else {
			rec.ResultURI = ResultsPrefix + info.ID
		}
	}
	for class, n := range rec.Filter.Findings {
		s.metrics.findings.WithLabelValues(string(class)).Add(float64(n))
	}

	text := renderRun(rec)
	if err == nil && out.Compact != "" && res.Error == nil {
		text = renderCompact(rec, out.Compact)
	}
	rec.Ledger = Ledger{
		FromToolsBytes:  res.Telemetry.BytesFromTools,
		FromToolsTokens: filter.EstimateTokens(res.Telemetry.BytesFromTools),
		ToModelBytes:    len(text),
		ToModelTokens:   filter.EstimateTokens(len(text)),
	}
	s.metrics.bytesToModel.Add(float64(len(text)))
	if sess != nil {
		sess.add(rec)
	}
	return rec, text
}

func (sess *session) add(rec *Record) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	t := &sess.totals
	t.Runs++
	if rec.Error != nil {
		t.Failed++
	}
	t.ToolCalls += rec.Telemetry.ToolCalls
	t.FromToolsBytes += rec.Ledger.FromToolsBytes
	t.FromToolsTokens += rec.Ledger.FromToolsTokens
	t.ToModelBytes += rec.Ledger.ToModelBytes
	t.ToModelTokens += rec.Ledger.ToModelTokens
	if rec.Filter != nil {
		for c, n := range rec.Filter.Findings {
			t.Findings[string(c)] += n
		}
		t.Tokenized += rec.Filter.Tokenized
		t.Redacted += rec.Filter.Redacted
	}
}

func (sess *session) snapshot() Totals {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	t := sess.totals
	t.Findings = map[string]int{}
	for k, v := range sess.totals.Findings {
		t.Findings[k] = v
	}
	return t
}

// renderCompact is renderRun with the result as a compact table.
func renderCompact(rec *Record, table string) string {
	var b strings.Builder
	t := rec.Telemetry
	fmt.Fprintf(&b, "ok (%.1f ms, %s)\n", t.DurationMS, plural(t.ToolCalls, "tool call"))
	b.WriteString(table)
	b.WriteByte('\n')
	writeTail(&b, rec)
	return strings.TrimRight(b.String(), "\n")
}
