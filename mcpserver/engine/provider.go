package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
)

// The llm runtime reaches a model one of two ways: the MCP client's, by
// sampling (deprecated by protocol 2026-07-28 and impossible on its
// stateless requests), or a provider the server is configured with: an
// OpenAI-compatible chat completions endpoint (Ollama, LM Studio, vLLM,
// a hosted API). Both sit behind model; llm.go picks one per call and
// keeps the budgets, the filter and the audit the same for both.

// ProviderConfig names an OpenAI-compatible chat completions endpoint
// that the llm runtime uses directly.
type ProviderConfig struct {
	// URL is the API base, such as http://localhost:11434/v1 (Ollama),
	// http://localhost:1234/v1 (LM Studio), http://localhost:8000/v1
	// (vLLM) or https://api.openai.com/v1; "/chat/completions" is
	// appended unless the URL already ends with it.
	URL string
	// Model is the chat model's name as the server knows it.
	Model string
	// APIKeyEnv names the environment variable holding the API key, sent
	// as a bearer token; "" sends none (local servers need none). The
	// key is read at each request, never logged nor put in an error.
	APIKeyEnv string
	// MaxRetries is how many times a failed request is retried within
	// the run's deadline: network errors, 408, 429 and 5xx. Default 2;
	// negative: none.
	MaxRetries int
	// Timeout bounds one request, for callers without a deadline of
	// their own (a run's is shorter). Default 2 minutes.
	Timeout time.Duration
	// Client sends the requests; nil uses a client of its own.
	Client *http.Client
	// Getenv reads the key's variable; nil means os.Getenv.
	Getenv func(string) string
}

// Where a program's llm calls go, when both ways are open.
const (
	// PreferClient asks the client's model (sampling) when the client
	// of the request can be asked, and the provider otherwise: the
	// default.
	PreferClient = "client"
	// PreferProvider always asks the provider.
	PreferProvider = "provider"
)

// modelRequest is one question to a model, already filtered.
type modelRequest struct {
	System        string
	Messages      []llmMessage
	MaxTokens     int
	Temperature   *float64
	StopSequences []string
	// Preferences are the program's model preferences; only sampling
	// uses them (a provider has its one model).
	Preferences *mcp.ModelPreferences
}

// modelAnswer is a model's answer; Tokens is what the model says the
// exchange used, 0 when it does not say.
type modelAnswer struct {
	Text, Model, StopReason string
	Tokens                  int
}

// model is one way to reach a model.
type model interface {
	// via names the way in results and errors: "sampling" or "provider".
	via() string
	complete(ctx context.Context, r modelRequest) (modelAnswer, error)
}

// provider is a configured OpenAI-compatible chat endpoint.
type provider struct {
	cfg      ProviderConfig
	endpoint string
}

var _ model = (*provider)(nil)

// newProvider checks cfg; it makes no request.
func newProvider(cfg ProviderConfig) (*provider, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm provider: URL %q: want http(s)://host[:port]/v1", cfg.URL)
	}
	if u.User != nil {
		return nil, errors.New("llm provider: the URL must not carry credentials; name the key's variable in provider_key_env")
	}
	if cfg.Model == "" {
		return nil, errors.New("llm provider: no model")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	return &provider{cfg: cfg, endpoint: endpoint}, nil
}

func (p *provider) via() string { return "provider" }

// ProviderError is a failed request to the provider. It names the
// endpoint (never the key), the HTTP status if there was one, what the
// provider said, and the attempts made.
type ProviderError struct {
	Endpoint string
	Status   int
	Detail   string
	Attempts int
	Err      error
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the llm provider %s", e.Endpoint)
	if e.Status != 0 {
		fmt.Fprintf(&b, " answered HTTP %d", e.Status)
	} else {
		b.WriteString(" could not be reached")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	} else if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
	Stop        []string      `json:"stop,omitempty"`
	Stream      bool          `json:"stream"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal string  `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// complete sends r to the provider, retrying what may pass within ctx.
func (p *provider) complete(ctx context.Context, r modelRequest) (modelAnswer, error) {
	req := chatRequest{Model: p.cfg.Model, MaxTokens: r.MaxTokens, Temperature: r.Temperature, Stop: r.StopSequences}
	if r.System != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: r.System})
	}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, chatMessage(m))
	}
	body, err := json.Marshal(req)
	if err != nil {
		return modelAnswer{}, fmt.Errorf("encode chat request: %w", err)
	}
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ans, retryAfter, err := p.post(ctx, body)
		if err == nil {
			return ans, nil
		}
		var pe *ProviderError
		if !errors.As(err, &pe) {
			return modelAnswer{}, err
		}
		pe.Attempts = attempt
		if ctx.Err() != nil || attempt > p.cfg.MaxRetries || !pe.retryable() {
			return modelAnswer{}, pe
		}
		d := wait/2 + rand.N(wait/2+1)
		if retryAfter > 0 {
			d = retryAfter
		}
		// A wait that would outlast the run is not worth starting.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return modelAnswer{}, pe
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return modelAnswer{}, pe
		case <-t.C:
		}
		wait = min(wait*2, 5*time.Second)
	}
}

func (e *ProviderError) retryable() bool {
	switch {
	case e.Status == 0:
		return e.Err != nil
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return true
	}
	return e.Status >= 500
}

// maxProviderAnswer bounds what is read of a provider's answer.
const maxProviderAnswer = 8 << 20

// post sends one request; it returns a *ProviderError for anything that
// went wrong, and how long the provider asked to wait before a retry.
func (p *provider) post(ctx context.Context, body []byte) (modelAnswer, time.Duration, error) {
	fail := func(status int, detail string, err error) (modelAnswer, time.Duration, error) {
		return modelAnswer{}, 0, &ProviderError{Endpoint: p.endpoint, Status: status, Detail: detail, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return fail(0, "", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	key := ""
	if p.cfg.APIKeyEnv != "" {
		key = p.cfg.Getenv(p.cfg.APIKeyEnv)
	}
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := p.cfg.Client.Do(hreq)
	if err != nil {
		// The URL's error repeats the URL and says nothing of headers;
		// strip the wrapper for a shorter message.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail(0, "", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderAnswer))
	if err != nil {
		return fail(resp.StatusCode, "reading the answer failed", err)
	}
	if resp.StatusCode != http.StatusOK {
		detail := providerDetail(data, key)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint := "no API key was sent"
			if p.cfg.APIKeyEnv != "" && key == "" {
				hint = "no API key was sent: $" + p.cfg.APIKeyEnv + " is not set in codecell's environment (MCP hosts start servers with few variables; set it in the host's env for codecell)"
			} else if key != "" {
				hint = "the key in $" + p.cfg.APIKeyEnv + " was refused"
			}
			detail = strings.TrimPrefix(detail+"; "+hint, "; ")
		}
		var ra time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			ra = time.Duration(min(s, 30)) * time.Second
		}
		a, _, e := fail(resp.StatusCode, detail, nil)
		return a, ra, e
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return fail(resp.StatusCode, "the answer is not a chat completion: "+err.Error(), nil)
	}
	if len(cr.Choices) == 0 {
		return fail(resp.StatusCode, "the answer has no choices", nil)
	}
	c := cr.Choices[0]
	if c.Message.Content == nil {
		if c.Message.Refusal != "" {
			return fail(resp.StatusCode, "the model refused: "+scrub(c.Message.Refusal, key), nil)
		}
		return fail(resp.StatusCode, "the answer has no text content", nil)
	}
	ans := modelAnswer{Text: *c.Message.Content, Model: cr.Model, StopReason: stopReason(c.FinishReason)}
	if ans.Model == "" {
		ans.Model = p.cfg.Model
	}
	if cr.Usage != nil {
		ans.Tokens = cr.Usage.PromptTokens + cr.Usage.CompletionTokens
	}
	return ans, 0, nil
}

// stopReason is an OpenAI finish_reason in MCP's words.
func stopReason(finish string) string {
	switch finish {
	case "stop":
		return "endTurn"
	case "length":
		return "maxTokens"
	}
	return finish
}

// providerDetail is what an error answer says: its error message when it
// is OpenAI's error shape, else its start, without the key should the
// provider have echoed it.
func providerDetail(data []byte, key string) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(e.Error, &s) == nil:
			msg = s
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(data))
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return scrub(msg, key)
}

// scrub removes key from s.
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// samplingModel is the model of the MCP client whose request runs the
// program (sampling/createMessage), asked through the Client.
type samplingModel struct{ client Client }

var _ model = samplingModel{}

func (samplingModel) via() string { return "sampling" }

func (m samplingModel) complete(ctx context.Context, r modelRequest) (modelAnswer, error) {
	req := mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
		SystemPrompt:     r.System,
		MaxTokens:        r.MaxTokens,
		StopSequences:    r.StopSequences,
		ModelPreferences: r.Preferences,
	}}
	if r.Temperature != nil {
		req.Temperature = *r.Temperature
	}
	for _, msg := range r.Messages {
		req.Messages = append(req.Messages, mcp.SamplingMessage{Role: mcp.Role(msg.Role), Content: mcp.NewTextContent(msg.Content)})
	}
	res, err := m.client.Sample(ctx, req)
	if err != nil {
		return modelAnswer{}, err
	}
	text, err := samplingText(res.Content)
	if err != nil {
		return modelAnswer{}, err
	}
	return modelAnswer{Text: text, Model: res.Model, StopReason: res.StopReason}, nil
}

// modelFor picks how tool's call reaches a model: the provider when the
// server prefers it, else the client's model when the client of ctx's
// request can be asked, else the provider when there is one. Without
// either it says what to enable.
func (m *llm) modelFor(ctx context.Context, tool string) (model, error) {
	if m.provider != nil && m.cfg.Prefer == PreferProvider {
		return m.provider, nil
	}
	err := m.client.Can(ctx, tool, Sampling)
	if err == nil {
		return samplingModel{m.client}, nil
	}
	if m.provider != nil {
		return m.provider, nil
	}
	var te *tools.Error
	if errors.As(err, &te) {
		te.Message += "; or configure a model of codecell's own ([llm] provider, an OpenAI-compatible endpoint), which programs use when the client cannot be asked"
	}
	return nil, err
}

// Question is one question Go code asks a model through Ask.
type Question struct {
	// System is the system prompt; Prompt the user's message.
	System, Prompt string
	// MaxTokens bounds the answer; 0 is llm.default_max_tokens.
	MaxTokens int
}

// Answer is a model's answer to a Question.
type Answer struct {
	Text, Model, StopReason string
	// Via is "sampling" (the client's model) or "provider".
	Via string
}

// Ask asks a model one question from the handler of a tool a program
// called (a recall that expands a query): it is a call of llm.call
// through the gate the handler's call passed (tools.CallThrough), so the
// prompt passes the output filter (tokens stay tokens), the call is
// charged to the budgets of the program's run and principal and is a row
// of its audit log, and it goes to the client's model or the provider as
// modelFor decides. Errors are tool errors with the runtime's codes
// (capability_missing, quota_exceeded, rate_limited, tool_failed), and
// no_gate outside a program's call.
func Ask(ctx context.Context, q Question) (Answer, error) {
	args, err := json.Marshal(struct {
		Prompt    string `json:"prompt"`
		System    string `json:"system,omitempty"`
		MaxTokens int    `json:"maxTokens,omitempty"`
	}{q.Prompt, q.System, q.MaxTokens})
	if err != nil {
		return Answer{}, err
	}
	out, err := tools.CallThrough(ctx, "llm.call", args)
	if err != nil {
		return Answer{}, err
	}
	var res llmCallResult
	if err := json.Unmarshal(out, &res); err != nil {
		return Answer{}, fmt.Errorf("decode llm.call's answer: %w", err)
	}
	return Answer(res), nil
}
