package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// LLMConfig bounds what programs ask of a model through the llm runtime
// namespace (MCP sampling, or the server's provider). Zero fields take
// their defaults.
type LLMConfig struct {
	// MaxCallsPerRun and MaxTokensPerRun bound one run's llm calls and
	// their tokens (prompt and answer). Defaults 50 and 100,000.
	MaxCallsPerRun  int
	MaxTokensPerRun int
	// CallsPerMinute bounds each principal's llm calls over all its runs
	// (rate_limited beyond it); TokensPerDay its tokens in a calendar day
	// (UTC; quota_exceeded beyond it). Defaults 60 and 1,000,000.
	CallsPerMinute int
	TokensPerDay   int
	// DefaultMaxTokens is a call's maxTokens when the program gives none;
	// MaxTokens is the most one call may ask for. Defaults 1,024 and 8,192.
	DefaultMaxTokens int
	MaxTokens        int
	// Provider, when set, is a model of the server's own (an
	// OpenAI-compatible chat endpoint) that programs use when the
	// client cannot be asked, or always when Prefer is PreferProvider.
	Provider *ProviderConfig
	// Prefer is PreferClient (default) or PreferProvider.
	Prefer string
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c LLMConfig) WithDefaults() LLMConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxCallsPerRun, 50)
	def(&c.MaxTokensPerRun, 100_000)
	def(&c.CallsPerMinute, 60)
	def(&c.TokensPerDay, 1_000_000)
	def(&c.DefaultMaxTokens, 1024)
	def(&c.MaxTokens, 8192)
	c.DefaultMaxTokens = min(c.DefaultMaxTokens, c.MaxTokens)
	if c.Prefer == "" {
		c.Prefer = PreferClient
	}
	return c
}

const llmMessageSchema = `{"type":"object","properties":{"role":{"type":"string","enum":["user","assistant"]},"content":{"type":"string"}},"required":["role","content"],"additionalProperties":false}`

const llmCallInput = `{
	"type": "object",
	"properties": {
		"prompt": {"type": "string", "minLength": 1, "description": "The user message; or give messages."},
		"messages": {"type": "array", "minItems": 1, "items": ` + llmMessageSchema + `, "description": "The conversation, oldest first; or give prompt."},
		"system": {"type": "string", "description": "System prompt."},
		"maxTokens": {"type": "integer", "minimum": 1, "description": "Most tokens of the answer."},
		"temperature": {"type": "number", "minimum": 0, "maximum": 2},
		"stopSequences": {"type": "array", "items": {"type": "string"}},
		"modelPreferences": {
			"type": "object",
			"properties": {
				"hints": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
				"costPriority": {"type": "number", "minimum": 0, "maximum": 1},
				"speedPriority": {"type": "number", "minimum": 0, "maximum": 1},
				"intelligencePriority": {"type": "number", "minimum": 0, "maximum": 1}
			},
			"additionalProperties": false
		}
	},
	"oneOf": [{"required": ["prompt"]}, {"required": ["messages"]}],
	"additionalProperties": false
}`

const llmCallOutput = `{"type":"object","properties":{"text":{"type":"string"},"model":{"type":"string"},"stopReason":{"type":"string"},"via":{"enum":["sampling","provider"],"description":"Which model answered: the client's (sampling) or the server's provider."}},"required":["text","model","via"]}`

var llmErrors = []tools.ErrorDoc{
	{Code: CodeCapabilityMissing, Description: "No model to ask: the client did not declare sampling, or the request has no session to ask (protocol 2026-07-28), and the server has no provider; the message says what to enable."},
	{Code: CodeQuotaExceeded, Description: "The run's or the principal's budget of llm calls or tokens is spent."},
	{Code: CodeRateLimited, Description: "The principal makes llm calls faster than allowed per minute."},
	{Code: tools.CodeToolFailed, Description: "The client refused or failed the request (its user may have rejected it), or the provider failed it."},
	{Code: codeResultBytesInFlight, Description: "Filtering the prompt or the items (their bytes, values, and the secrets and personal data the filter replaces) would take more than the run or its principal may hold of the results in flight; the message names the limit. Send less: a summary, fewer items."},
}

// llm is the llm runtime namespace: requests to a model — the client's
// of the request whose program calls them (sampling), or the server's
// provider (provider.go) — within the run's and the principal's budgets.
type llm struct {
	asker
	cfg       LLMConfig
	use       *llmUsage
	provider  *provider // nil: the client's model only
	maxPrompt int       // bytes of a call's prompt, system and messages
}

// promptBudgets is the prompt a program may send a model, in response
// budgets (filter.max_budget_bytes): four, 1 MiB by default — about
// 260,000 tokens, more than a model reads at once, and more than
// llm.max_tokens_per_run allows by default.
const promptBudgets = 4

// maxPromptBytes is the most bytes of a prompt (its system prompt and
// messages, as the program gives them) with filter f.
func maxPromptBytes(f *filter.Filter) int {
	if f == nil {
		return promptBudgets * 16 * filter.DefaultBudget
	}
	return promptBudgets * f.MaxBudget()
}

func newLLM(cfg LLMConfig, a asker, maxPrompt int) (*llm, error) {
	cfg = cfg.WithDefaults()
	switch cfg.Prefer {
	case PreferClient, PreferProvider:
	default:
		return nil, fmt.Errorf("llm prefer %q: want %q or %q", cfg.Prefer, PreferClient, PreferProvider)
	}
	m := &llm{asker: a, cfg: cfg, use: newLLMUsage(cfg), maxPrompt: maxPrompt}
	if cfg.Provider != nil {
		p, err := newProvider(*cfg.Provider)
		if err != nil {
			return nil, err
		}
		m.provider = p
	}
	return m, nil
}

// helpers are the llm namespace's functions.
func (m *llm) helpers() []helper {
	note := "The request goes to the model of the MCP client that sent execute_code (sampling/createMessage; its user may review it) or, when the server has one and the client cannot be asked (or the server prefers it), to the server's own OpenAI-compatible provider; the answer's via says which. The prompt passes the output filter first, as everything the model reads: tokens (⟦…⟧) are sent as they are, never resolved, and secrets and personal data the program read from tools are replaced as in a result, wherever they are in the prompt. The model sees what you see. The answer is a tool result like any other: filtered on output and followed by the data-flow rules."
	return []helper{
		{tool: tools.Tool{
			Name:         "llm.call",
			Summary:      "Ask a model (the client's, or the server's provider): {prompt | messages, system?, maxTokens?} → {text, model, via}.",
			Description:  "Call sends a prompt, or a conversation, to a model — the MCP client's, or the server's provider — and returns its answer. Use it for judgement on data that should not go into the conversation: summarise, label, extract.",
			InputSchema:  json.RawMessage(llmCallInput),
			OutputSchema: json.RawMessage(llmCallOutput),
			Annotations:  tools.Annotations{ReadOnly: true, OpenWorld: true},
			Examples: []tools.Example{{
				Args:   json.RawMessage(`{"prompt":"Summarise in one sentence: ...","maxTokens":100}`),
				Result: json.RawMessage(`{"text":"...","model":"claude-sonnet-4","stopReason":"endTurn","via":"sampling"}`),
			}},
			Errors:     llmErrors,
			Notes:      note,
			Positional: []string{"prompt"},
			Related:    []string{"llm.classify", "llm.extract"},
			Runtime:    true,
		}, call: bindHelper(m.call)},
		{tool: tools.Tool{
			Name:        "llm.classify",
			Summary:     "Label each item with one of the labels, by a model: (items, labels) → {labels: string[]}.",
			Description: "Classify asks the model (as llm.call) to pick one label per item, in one request, and checks the answer: one label per item, each one of the given labels. A wrong answer is sent back to the model once with what was wrong; a second one is an error.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"items": {"type": "array", "minItems": 1, "maxItems": 1000, "description": "What to label: strings or JSON values."},
					"labels": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}, "uniqueItems": true},
					"instructions": {"type": "string", "description": "How to choose, if the labels do not say."},
					"maxTokens": {"type": "integer", "minimum": 1}
				},
				"required": ["items", "labels"],
				"additionalProperties": false
			}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"labels":{"type":"array","items":{"type":"string"}},"model":{"type":"string"},"via":{"enum":["sampling","provider"]},"attempts":{"type":"integer"}},"required":["labels","model","via"]}`),
			Annotations:  tools.Annotations{ReadOnly: true, OpenWorld: true},
			Examples: []tools.Example{{
				Args:   json.RawMessage(`{"items":["Refund not received","App crashes on start"],"labels":["billing","bug","other"]}`),
				Result: json.RawMessage(`{"labels":["billing","bug"],"model":"claude-sonnet-4","via":"sampling","attempts":1}`),
			}},
			Errors:     append(llmErrors, tools.ErrorDoc{Code: "invalid_answer", Description: "The model's answer did not fit twice."}),
			Notes:      note,
			Positional: []string{"items", "labels"},
			Related:    []string{"llm.call", "llm.extract"},
			Runtime:    true,
		}, call: bindHelper(m.classify)},
		{tool: tools.Tool{
			Name:        "llm.extract",
			Summary:     "Extract data matching a JSON Schema from text, by a model: (text, schema) → {data}.",
			Description: "Extract asks the model (as llm.call) for JSON that matches the schema and checks it against the schema. A wrong answer is sent back to the model once with the validation errors; a second one is an error.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"text": {"type": "string", "minLength": 1},
					"schema": {"type": "object", "description": "JSON Schema of the data to extract."},
					"instructions": {"type": "string"},
					"maxTokens": {"type": "integer", "minimum": 1}
				},
				"required": ["text", "schema"],
				"additionalProperties": false
			}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"data":{},"model":{"type":"string"},"via":{"enum":["sampling","provider"]},"attempts":{"type":"integer"}},"required":["data","model","via"]}`),
			Annotations:  tools.Annotations{ReadOnly: true, OpenWorld: true},
			Examples: []tools.Example{{
				Args:   json.RawMessage(`{"text":"Invoice 42 from ACME, due 2025-03-01, total 120 EUR","schema":{"type":"object","properties":{"number":{"type":"integer"},"total":{"type":"number"}},"required":["number","total"]}}`),
				Result: json.RawMessage(`{"data":{"number":42,"total":120},"model":"claude-sonnet-4","via":"sampling","attempts":1}`),
			}},
			Errors:     append(llmErrors, tools.ErrorDoc{Code: "invalid_answer", Description: "The model's answer did not match the schema twice."}),
			Notes:      note,
			Positional: []string{"text", "schema"},
			Related:    []string{"llm.call", "llm.classify"},
			Runtime:    true,
		}, call: bindHelper(m.extract)},
	}
}

type llmMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type llmCallArgs struct {
	Prompt           string                `json:"prompt"`
	Messages         []llmMessage          `json:"messages"`
	System           string                `json:"system"`
	MaxTokens        int                   `json:"maxTokens"`
	Temperature      *float64              `json:"temperature"`
	StopSequences    []string              `json:"stopSequences"`
	ModelPreferences *mcp.ModelPreferences `json:"modelPreferences"`
}

type llmCallResult struct {
	Text       string `json:"text"`
	Model      string `json:"model"`
	StopReason string `json:"stopReason,omitempty"`
	// Via says which model answered: "sampling" (the client's) or
	// "provider" (the server's, [llm] provider).
	Via string `json:"via"`
}

func (m *llm) call(ctx context.Context, c *Call, a llmCallArgs) (llmCallResult, error) {
	msgs := a.Messages
	if a.Prompt != "" {
		msgs = append(msgs, llmMessage{Role: "user", Content: a.Prompt})
	}
	return m.sample(ctx, c, "llm.call", a, msgs)
}

// sample asks a model — the client's by sampling, or the configured
// provider (modelFor) — within the run's and the principal's budgets.
func (m *llm) sample(ctx context.Context, c *Call, tool string, a llmCallArgs, msgs []llmMessage) (llmCallResult, error) {
	cfg := m.cfg
	maxTokens := cfg.DefaultMaxTokens
	if a.MaxTokens > 0 {
		maxTokens = min(a.MaxTokens, cfg.MaxTokens)
	}
	// What costs nothing to check comes before what filtering the
	// prompt costs (issue 19, attack18 K1): its size, the stop
	// sequences' and hints' number and size, a model to ask, the budget.
	prompt := len(a.System)
	for _, msg := range msgs {
		prompt += len(msg.Content)
	}
	if prompt > m.maxPrompt {
		return llmCallResult{}, &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool, Message: fmt.Sprintf(
			"the prompt (system prompt and messages) is %s, more than the %s a prompt may be (%d × filter.max_budget_bytes): no model reads that much at once; send a summary, or fewer or smaller items, in more calls",
			formatSize(int64(prompt)), formatSize(int64(m.maxPrompt)), promptBudgets)}
	}
	var hints []string
	if p := a.ModelPreferences; p != nil {
		hints = make([]string, len(p.Hints))
		for i, h := range p.Hints {
			hints[i] = h.Name
		}
	}
	if err := checkSideTexts(tool, "stopSequences", a.StopSequences); err != nil {
		return llmCallResult{}, err
	}
	if err := checkSideTexts(tool, "modelPreferences.hints", hints); err != nil {
		return llmCallResult{}, err
	}
	mod, err := m.modelFor(ctx, tool)
	if err != nil {
		return llmCallResult{}, err
	}
	// Charge the prompt and the most the answer may take before asking,
	// so that concurrent calls cannot overrun a budget together; the
	// answer's actual size replaces the estimate after.
	estimate := tools.EstimateTokens(prompt) + maxTokens
	run, principal := c.Run.log, c.Run.Caller.Principal
	if err := m.use.begin(tool, run, principal, estimate); err != nil {
		return llmCallResult{}, err
	}
	req, promptBytes, err := m.request(ctx, c, tool, a, msgs, prompt, hints, maxTokens)
	if err != nil {
		// The call stays counted, its tokens do not: a run cannot make
		// more refused calls, each filtering what it holds, than calls.
		m.use.end(run, principal, estimate, 0)
		return llmCallResult{}, err
	}
	var ans modelAnswer
	err = waitOnClient(ctx, c, func(ctx context.Context) (err error) {
		ans, err = mod.complete(ctx, req)
		return err
	})
	used := tools.EstimateTokens(promptBytes)
	if err == nil {
		used += tools.EstimateTokens(len(ans.Text))
		if ans.Tokens > 0 {
			used = ans.Tokens // what the provider counted
		}
	}
	if stoppedToAsk(err) {
		m.use.refund(run, principal, estimate) // charged when answered, on the retry
		return llmCallResult{}, err
	}
	m.use.end(run, principal, estimate, used)
	if err != nil {
		return llmCallResult{}, modelError(ctx, tool, mod, err)
	}
	return llmCallResult{Text: ans.Text, Model: ans.Model, StopReason: ans.StopReason, Via: mod.via()}, nil
}

// Bounds of what a program sends a model beside its prompt.
const (
	maxSideTexts    = 4  // stop sequences, model hints
	maxSideTextSize = 64 // bytes of each, as the model's client sees it
)

// request is the request to a model of a program's call: its prompt
// (system, msgs: prompt bytes), stop sequences and model hints as the
// output filter shows them — tokens stay tokens, and what the run read
// is hidden as in a result, for a provider too: it is another party —
// filtered within what the run and its principal may hold. promptBytes
// is the filtered prompt's size.
func (m *llm) request(ctx context.Context, c *Call, tool string, a llmCallArgs, msgs []llmMessage, prompt int, hints []string, maxTokens int) (req modelRequest, promptBytes int, err error) {
	size := prompt
	for _, t := range a.StopSequences {
		size += len(t)
	}
	for _, t := range hints {
		size += len(t)
	}
	fh, err := m.results.holdFiltering(ctx, c, "the prompt", int64(size), 0)
	if err != nil {
		return req, 0, err
	}
	defer fh.release()
	req = modelRequest{MaxTokens: maxTokens, Temperature: a.Temperature}
	if req.System, err = m.clientText(c, fh, a.System); err != nil {
		return req, 0, err
	}
	// What goes beside the prompt is filtered as it is, and bounded:
	// the stop sequences and the model hints' names reach the client
	// (and its user's logs) as much as the prompt does.
	if req.StopSequences, err = m.sideTexts(c, fh, tool, "stopSequences", a.StopSequences); err != nil {
		return req, 0, err
	}
	if p := a.ModelPreferences; p != nil {
		if hints, err = m.sideTexts(c, fh, tool, "modelPreferences.hints", hints); err != nil {
			return req, 0, err
		}
		req.Preferences = &mcp.ModelPreferences{
			CostPriority:         unitInterval(p.CostPriority),
			SpeedPriority:        unitInterval(p.SpeedPriority),
			IntelligencePriority: unitInterval(p.IntelligencePriority),
		}
		for _, n := range hints {
			req.Preferences.Hints = append(req.Preferences.Hints, mcp.ModelHint{Name: n})
		}
	}
	promptBytes = len(req.System)
	for _, msg := range msgs {
		text, err := m.clientText(c, fh, msg.Content)
		if err != nil {
			return req, 0, err
		}
		req.Messages = append(req.Messages, llmMessage{Role: msg.Role, Content: text})
		promptBytes += len(text)
	}
	return req, promptBytes, nil
}

// maxRawSideText is the most bytes of a stop sequence or a model hint as
// the program gives it: a few times maxSideTextSize, which a token or a
// marker may take in place of a shorter value.
const maxRawSideText = 4 * maxSideTextSize

// checkSideTexts refuses texts (a program's stop sequences or model
// hints) that could not be sent whatever the filter makes of them, before
// they are filtered: more than maxSideTexts, or one of more than
// maxRawSideText bytes.
func checkSideTexts(tool, what string, texts []string) error {
	if len(texts) > maxSideTexts {
		return &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool,
			Message: fmt.Sprintf("%s: %d given, at most %d", what, len(texts), maxSideTexts)}
	}
	for i, t := range texts {
		if len(t) > maxRawSideText {
			return &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool,
				Message: fmt.Sprintf("%s[%d]: %d bytes, at most %d", what, i, len(t), maxSideTextSize)}
		}
	}
	return nil
}

// sideTexts is texts (a program's stop sequences or model hints, checked
// by checkSideTexts) as the client may see them: filtered as the prompt
// is, at most maxSideTextSize bytes each.
func (m *llm) sideTexts(c *Call, fh *filterHold, tool, what string, texts []string) ([]string, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		text, err := m.clientText(c, fh, t)
		if err != nil {
			return nil, err
		}
		out[i] = printable(text)
		if len(out[i]) > maxSideTextSize {
			return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool,
				Message: fmt.Sprintf("%s[%d]: %d bytes, at most %d", what, i, len(out[i]), maxSideTextSize)}
		}
	}
	return out, nil
}

// unitInterval is a model preference's priority within [0, 1].
func unitInterval(v float64) float64 { return min(max(v, 0), 1) }

// modelError turns a failed question to m into a tool error.
func modelError(ctx context.Context, tool string, m model, err error) error {
	if _, ok := m.(samplingModel); ok {
		return clientError(ctx, tool, "sampling", err)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &tools.Error{Code: tools.CodeToolFailed, Tool: tool, Message: err.Error(), Err: err}
}

// samplingText is the text of a sampling answer's content.
func samplingText(c any) (string, error) {
	switch v := c.(type) {
	case mcp.TextContent:
		return v.Text, nil
	case *mcp.TextContent:
		return v.Text, nil
	case []mcp.Content:
		var b strings.Builder
		for _, e := range v {
			t, err := samplingText(e)
			if err != nil {
				return "", err
			}
			b.WriteString(t)
		}
		return b.String(), nil
	case map[string]any:
		if t, ok := v["text"].(string); ok {
			return t, nil
		}
		return "", fmt.Errorf("the model answered with %v content, not text", v["type"])
	}
	return "", fmt.Errorf("the model answered with %T content, not text", c)
}

type llmClassifyArgs struct {
	Items        []json.RawMessage `json:"items"`
	Labels       []string          `json:"labels"`
	Instructions string            `json:"instructions"`
	MaxTokens    int               `json:"maxTokens"`
}

type llmClassifyResult struct {
	Labels   []string `json:"labels"`
	Model    string   `json:"model"`
	Via      string   `json:"via"`
	Attempts int      `json:"attempts"`
}

func (m *llm) classify(ctx context.Context, c *Call, a llmClassifyArgs) (llmClassifyResult, error) {
	const tool = "llm.classify"
	// The items are filtered as results, each a tree: what costs
	// nothing to check comes first — their size (they go into one
	// prompt), a model to ask, the budget — then the hold of what
	// filtering them costs (issue 19, attack18 K1).
	size, values := 0, 0
	for _, it := range a.Items {
		size += len(it)
	}
	if size > m.maxPrompt {
		return llmClassifyResult{}, &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool, Message: fmt.Sprintf(
			"the items are %s, more than the %s a prompt may be (%d × filter.max_budget_bytes): no model reads that much at once; classify fewer or smaller items a call (a summary or the fields that decide the label)",
			formatSize(int64(size)), formatSize(int64(m.maxPrompt)), promptBudgets)}
	}
	if _, err := m.modelFor(ctx, tool); err != nil {
		return llmClassifyResult{}, err
	}
	maxTokens := m.cfg.DefaultMaxTokens
	if a.MaxTokens > 0 {
		maxTokens = min(a.MaxTokens, m.cfg.MaxTokens)
	}
	if err := m.use.check(tool, c.Run.log, c.Run.Caller.Principal, tools.EstimateTokens(size)+maxTokens); err != nil {
		return llmClassifyResult{}, err
	}
	for _, it := range a.Items {
		values += tools.JSONValues(it, math.MaxInt)
	}
	refused := func(err error) (llmClassifyResult, error) {
		// Counted as a call, as llm.call's are (sample): a run cannot
		// make more such refusals than calls.
		_ = m.use.begin(tool, c.Run.log, c.Run.Caller.Principal, 0)
		return llmClassifyResult{}, err
	}
	fh, err := m.results.holdFiltering(ctx, c, "the items", int64(size), values)
	if err != nil {
		return refused(err)
	}
	defer fh.release()
	labels, _ := json.Marshal(a.Labels)
	schema := fmt.Sprintf(`{"type":"array","items":{"enum":%s},"minItems":%d,"maxItems":%d}`, labels, len(a.Items), len(a.Items))
	var b strings.Builder
	fmt.Fprintf(&b, "Classify each of the %d items below with exactly one of these labels: %s.\n", len(a.Items), labels)
	if a.Instructions != "" {
		b.WriteString(a.Instructions + "\n")
	}
	fmt.Fprintf(&b, "Answer with JSON only: an array of %d label strings, the label of item 0 first.\n\nItems:\n", len(a.Items))
	for i, it := range a.Items {
		// Each item as a result would show it: field names count.
		shown, err := m.clientJSON(c, fh, it)
		if err != nil {
			return refused(err)
		}
		fmt.Fprintf(&b, "%d: %s\n", i, compactJSON(shown))
	}
	fh.release() // filtered: the prompt is held as the prompt
	data, ans, attempts, err := m.askJSON(ctx, c, tool, b.String(), json.RawMessage(schema), a.MaxTokens)
	if err != nil {
		return llmClassifyResult{}, err
	}
	out := llmClassifyResult{Model: ans.Model, Via: ans.Via, Attempts: attempts}
	if err := json.Unmarshal(data, &out.Labels); err != nil {
		return llmClassifyResult{}, fmt.Errorf("decode labels: %w", err)
	}
	return out, nil
}

type llmExtractArgs struct {
	Text         string          `json:"text"`
	Schema       json.RawMessage `json:"schema"`
	Instructions string          `json:"instructions"`
	MaxTokens    int             `json:"maxTokens"`
}

type llmExtractResult struct {
	Data     json.RawMessage `json:"data"`
	Model    string          `json:"model"`
	Via      string          `json:"via"`
	Attempts int             `json:"attempts"`
}

func (m *llm) extract(ctx context.Context, c *Call, a llmExtractArgs) (llmExtractResult, error) {
	var b strings.Builder
	b.WriteString("Extract from the text below the data this JSON Schema describes, and answer with JSON only, matching the schema.\n")
	if a.Instructions != "" {
		b.WriteString(a.Instructions + "\n")
	}
	fmt.Fprintf(&b, "\nSchema:\n%s\n\nText:\n%s\n", compactJSON(a.Schema), a.Text)
	data, ans, attempts, err := m.askJSON(ctx, c, "llm.extract", b.String(), a.Schema, a.MaxTokens)
	if err != nil {
		return llmExtractResult{}, err
	}
	return llmExtractResult{Data: data, Model: ans.Model, Via: ans.Via, Attempts: attempts}, nil
}

// askJSON asks a model for JSON that matches schema; an answer that
// does not is sent back once with what is wrong with it.
func (m *llm) askJSON(ctx context.Context, c *Call, tool, prompt string, schema json.RawMessage, maxTokens int) (data json.RawMessage, last llmCallResult, attempts int, err error) {
	sch, err := tools.CompileSchema(schema)
	if err != nil {
		return nil, last, 0, &tools.Error{Code: tools.CodeInvalidArguments, Tool: tool, Message: "schema: " + err.Error(), Err: err}
	}
	msgs := []llmMessage{{Role: "user", Content: prompt}}
	var why string
	for attempts = 1; attempts <= 2; attempts++ {
		res, err := m.sample(ctx, c, tool, llmCallArgs{MaxTokens: maxTokens, System: "You answer with JSON only, no prose and no code fences."}, msgs)
		if err != nil {
			return nil, last, attempts, err
		}
		data, why = checkAnswer(res.Text, sch)
		if why == "" {
			return data, res, attempts, nil
		}
		msgs = append(msgs,
			llmMessage{Role: "assistant", Content: res.Text},
			llmMessage{Role: "user", Content: "That answer is not valid: " + why + ". Answer again with JSON only, fixing it."})
	}
	return nil, last, 2, &tools.Error{Code: "invalid_answer", Tool: tool, Message: "the model's answer did not fit twice; last problem: " + why}
}

// checkAnswer takes the JSON out of a model's answer (inside code fences
// or prose, if it had to) and validates it; why says what is wrong.
func checkAnswer(text string, sch *tools.Schema) (json.RawMessage, string) {
	data := extractJSON(text)
	if data == nil {
		return nil, "it is not JSON"
	}
	if ps := sch.Validate(data); len(ps) > 0 {
		return nil, tools.DescribeProblems(ps)
	}
	return data, ""
}

// extractJSON returns the first JSON value in text, or nil.
func extractJSON(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	for i, r := range t {
		if r != '{' && r != '[' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(t[i:]))
		var v json.RawMessage
		if dec.Decode(&v) == nil {
			return v
		}
	}
	return nil
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// llmUsage keeps the llm budgets: each run's (on its runLog) and each
// principal's.
type llmUsage struct {
	cfg LLMConfig
	now func() time.Time

	mu         sync.Mutex
	principals map[string]*principalLLM
}

type principalLLM struct {
	minute      time.Time // start of the current minute window
	minuteCalls int
	day         string
	dayTokens   int
}

func newLLMUsage(cfg LLMConfig) *llmUsage {
	return &llmUsage{cfg: cfg, now: time.Now, principals: map[string]*principalLLM{}}
}

// begin charges one call of estimate tokens to run (nil for a direct
// call) and principal, or says which budget it would exceed.
func (u *llmUsage) begin(tool string, run *runLog, principal string, estimate int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := u.principalLocked(principal)
	var b *llmBudget
	if run != nil {
		b = &run.llm
	}
	if err := u.fits(tool, b, p, estimate); err != nil {
		return err
	}
	p.minuteCalls++
	p.dayTokens += estimate
	if b != nil {
		b.calls++
		b.tokens += estimate
	}
	return nil
}

// check says which budget one call of estimate tokens would exceed, as
// begin does, and charges nothing.
func (u *llmUsage) check(tool string, run *runLog, principal string, estimate int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var b *llmBudget
	if run != nil {
		b = &run.llm
	}
	return u.fits(tool, b, u.principalLocked(principal), estimate)
}

// principalLocked is principal's budgets, its minute and day windows
// turned to now's.
func (u *llmUsage) principalLocked(principal string) *principalLLM {
	now := u.now().UTC()
	p := u.principals[principal]
	if p == nil {
		p = &principalLLM{}
		u.principals[principal] = p
	}
	if now.Sub(p.minute) >= time.Minute {
		p.minute, p.minuteCalls = now, 0
	}
	if day := now.Format(time.DateOnly); p.day != day {
		p.day, p.dayTokens = day, 0
	}
	return p
}

// fits says which budget — the run's b (nil for a direct call), the
// principal's p — one call of estimate tokens would exceed.
func (u *llmUsage) fits(tool string, b *llmBudget, p *principalLLM, estimate int) error {
	switch {
	case b != nil && b.calls+1 > u.cfg.MaxCallsPerRun:
		return &tools.Error{Code: CodeQuotaExceeded, Tool: tool, Message: fmt.Sprintf("this run made its %d llm calls, the most a run may make (llm.max_calls_per_run); batch items into one call (llm.classify takes many)", u.cfg.MaxCallsPerRun)}
	case b != nil && b.tokens+estimate > u.cfg.MaxTokensPerRun:
		return &tools.Error{Code: CodeQuotaExceeded, Tool: tool, Message: fmt.Sprintf("this call (about %d tokens with its maxTokens) would take the run past its %d llm tokens (llm.max_tokens_per_run, %d used); send less or lower maxTokens", estimate, u.cfg.MaxTokensPerRun, b.tokens)}
	case p.minuteCalls+1 > u.cfg.CallsPerMinute:
		return &tools.Error{Code: CodeRateLimited, Tool: tool, Message: fmt.Sprintf("more than %d llm calls in a minute (llm.calls_per_minute); wait and run again", u.cfg.CallsPerMinute)}
	case p.dayTokens+estimate > u.cfg.TokensPerDay:
		return &tools.Error{Code: CodeQuotaExceeded, Tool: tool, Message: fmt.Sprintf("the principal's %d llm tokens of the day (UTC) are spent (llm.tokens_per_day)", u.cfg.TokensPerDay)}
	}
	return nil
}

// end replaces a call's estimate by the tokens it used.
func (u *llmUsage) end(run *runLog, principal string, estimate, used int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := u.principals[principal]; p != nil {
		p.dayTokens += used - estimate
	}
	if run != nil {
		run.llm.tokens += used - estimate
	}
}
