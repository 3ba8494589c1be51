package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OpenAIConfig configures an OpenAIEmbedder.
type OpenAIConfig struct {
	// URL is the API base, such as http://localhost:11434/v1 (Ollama),
	// http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM
	// Studio) or https://api.openai.com/v1; "/embeddings" is appended
	// unless the URL already ends with it.
	URL string
	// Model is the embedding model's name as the server knows it.
	Model string
	// Dimensions is the length of the model's vectors. Required: the
	// store sizes its index by it, and a response of another size is an
	// error.
	Dimensions int
	// SendDimensions asks the server for Dimensions-long vectors (the
	// "dimensions" request field, for models that can shorten theirs).
	SendDimensions bool
	// APIKeyEnv names the environment variable that holds the API key,
	// sent as a bearer token; "" sends none. The key is read at each
	// request and never logged nor put in an error.
	APIKeyEnv string
	// BatchSize is the most texts sent in one request (default 64).
	BatchSize int
	// MaxRetries is how many times a failed request is retried: network
	// errors, time-outs, 408, 425, 429 and 5xx (default 3; negative: none).
	MaxRetries int
	// Timeout bounds one request (default 30s).
	Timeout time.Duration
	// Backoff is the wait before the first retry; it doubles up to 10s,
	// with jitter, and a Retry-After header takes precedence (default
	// 250ms).
	Backoff time.Duration
	// Client sends the requests; nil uses a client of its own.
	Client *http.Client
	// Getenv reads the API key variable; nil means os.Getenv.
	Getenv func(string) string
	// Logger receives retry warnings; nil discards.
	Logger *slog.Logger
}

// OpenAIEmbedder calls an OpenAI-compatible POST /v1/embeddings endpoint.
type OpenAIEmbedder struct {
	cfg      OpenAIConfig
	endpoint string
	log      *slog.Logger
}

// NewOpenAIEmbedder checks cfg and returns an embedder. It makes no
// request.
func NewOpenAIEmbedder(cfg OpenAIConfig) (*OpenAIEmbedder, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai embedder: URL %q: want http(s)://host[:port]/v1", cfg.URL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("openai embedder: URL must not carry credentials; set APIKeyEnv")
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai embedder: no model")
	}
	if cfg.Dimensions <= 0 {
		return nil, fmt.Errorf("openai embedder: dimensions must be set to the model's vector size")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 250 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, "/embeddings") {
		endpoint += "/embeddings"
	}
	return &OpenAIEmbedder{cfg: cfg, endpoint: endpoint, log: log.With("component", "memory.embedder")}, nil
}

// Name implements Embedder: "openai:" and the model.
func (o *OpenAIEmbedder) Name() string { return "openai:" + o.cfg.Model }

// Remote implements Remote: the endpoint is another party, given texts as
// the output filter shows them (Embed, WithShown).
func (o *OpenAIEmbedder) Remote() bool { return true }

// Dimensions implements Embedder.
func (o *OpenAIEmbedder) Dimensions() int { return o.cfg.Dimensions }

// EmbedError is a failed call of an embedding service. It names the
// endpoint (never the key), the HTTP status if there was one and the
// number of attempts.
type EmbedError struct {
	Endpoint string
	Status   int
	Attempts int
	Detail   string
	Err      error
}

func (e *EmbedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "embedding service %s", e.Endpoint)
	if e.Status != 0 {
		fmt.Fprintf(&b, " answered HTTP %d", e.Status)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil && e.Status == 0 {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *EmbedError) Unwrap() []error { return []error{ErrEmbedder, e.Err} }

// Embed implements Embedder: it sends the texts in batches of BatchSize.
func (o *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		end := min(start+o.cfg.BatchSize, len(texts))
		vs, err := o.batch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (o *OpenAIEmbedder) batch(ctx context.Context, texts []string) ([][]float32, error) {
	req := embedRequest{Model: o.cfg.Model, Input: texts, EncodingFormat: "float"}
	if o.cfg.SendDimensions {
		req.Dimensions = o.cfg.Dimensions
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	wait := o.cfg.Backoff
	for attempt := 1; ; attempt++ {
		vs, retryAfter, err := o.post(ctx, body, len(texts))
		if err == nil {
			return vs, nil
		}
		var ee *EmbedError
		if !errors.As(err, &ee) {
			return nil, err
		}
		ee.Attempts = attempt
		if ctx.Err() != nil || attempt > o.cfg.MaxRetries || !retryable(ee) {
			return nil, ee
		}
		d := wait/2 + rand.N(wait/2+1)
		if retryAfter > 0 {
			d = min(retryAfter, 30*time.Second)
		}
		o.log.Warn("embedding request failed; retrying", "endpoint", o.endpoint, "status", ee.Status, "attempt", attempt, "wait", d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ee
		case <-t.C:
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func retryable(e *EmbedError) bool {
	switch {
	case e.Status == 0:
		return !errors.Is(e.Err, ErrEmbedderMismatch)
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooEarly, e.Status == http.StatusTooManyRequests:
		return true
	case e.Status >= 500:
		return true
	}
	return false
}

// post sends one request. It returns an *EmbedError for anything that went
// wrong, and how long the server asked to wait before retrying.
func (o *OpenAIEmbedder) post(ctx context.Context, body []byte, n int) ([][]float32, time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.cfg.APIKeyEnv != "" {
		if key := o.cfg.Getenv(o.cfg.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := o.cfg.Client.Do(req)
	if err != nil {
		return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: describeNetErr(rctx, err, o.cfg.Timeout)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, 0, &EmbedError{Endpoint: o.endpoint, Status: resp.StatusCode, Err: describeNetErr(rctx, err, o.cfg.Timeout), Detail: "reading the response failed"}
	}
	if resp.StatusCode != http.StatusOK {
		var retryAfter time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
		return nil, retryAfter, &EmbedError{Endpoint: o.endpoint, Status: resp.StatusCode, Detail: o.excerpt(data), Err: fmt.Errorf("http status %d", resp.StatusCode)}
	}
	var er embedResponse
	if err := json.Unmarshal(data, &er); err != nil {
		return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: fmt.Errorf("response is not an embeddings object: %w", err)}
	}
	if len(er.Data) != n {
		return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: fmt.Errorf("%w: response has %d embeddings for %d inputs", ErrEmbedderMismatch, len(er.Data), n)}
	}
	sort.SliceStable(er.Data, func(i, j int) bool { return er.Data[i].Index < er.Data[j].Index })
	out := make([][]float32, n)
	for i, d := range er.Data {
		if d.Index != i {
			return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: fmt.Errorf("%w: response embeddings are not indexed 0..%d", ErrEmbedderMismatch, n-1)}
		}
		if len(d.Embedding) != o.cfg.Dimensions {
			return nil, 0, &EmbedError{Endpoint: o.endpoint, Err: fmt.Errorf("%w: model %s returned %d-dimension vectors, configured dimensions are %d", ErrEmbedderMismatch, o.cfg.Model, len(d.Embedding), o.cfg.Dimensions)}
		}
		out[i] = d.Embedding
	}
	return out, 0, nil
}

// excerpt returns the start of an error body, with the API key removed in
// case the server echoed it.
func (o *OpenAIEmbedder) excerpt(body []byte) string {
	s := strings.TrimSpace(string(body))
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var msg struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &msg) == nil && msg.Message != "" {
			s = msg.Message
		} else {
			var str string
			if json.Unmarshal(e.Error, &str) == nil {
				s = str
			}
		}
	}
	if o.cfg.APIKeyEnv != "" {
		if key := o.cfg.Getenv(o.cfg.APIKeyEnv); len(key) >= 4 {
			s = strings.ReplaceAll(s, key, "[redacted]")
		}
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func describeNetErr(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: %w", timeout, context.DeadlineExceeded)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("timed out: %w", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

var _ Embedder = (*OpenAIEmbedder)(nil)
var _ Embedder = (*HashEmbedder)(nil)
