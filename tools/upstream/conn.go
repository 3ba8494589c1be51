package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/time/rate"
)

// conn is one live connection to an upstream server: its MCP client, the
// child process for stdio, and what the server said at the handshake.
// Requests other than the handshake and pings go straight to the
// transport, so that codecell keeps the raw JSON of schemas and results,
// chooses the request IDs it cancels and the progress tokens it routes.
type conn struct {
	kind    Transport
	client  *client.Client
	tr      transport.Interface
	proc    *process // stdio only
	info    mcp.Implementation
	instr   string
	listsCh bool // the server announces tool list changes
	caps    mcp.ServerCapabilities

	ids      atomic.Int64
	mu       sync.Mutex
	progress map[string]progressFunc // progress token → the call's reporter
	tooLarge map[string]dropped      // request id → its oversized, or refused, response
	maxMsg   int64                   // the server's max_response_bytes
	maxList  int64                   // the server's max_list_bytes
	dropLog  *rate.Limiter           // of the warnings about dropped messages

	lost     chan struct{} // closed when the connection ended
	lostOnce sync.Once
	lostWhy  string

	listChanged chan struct{} // notifications/tools/list_changed, coalesced
	// featChanged: notifications/prompts/list_changed or
	// resources/list_changed, coalesced; updated receives the URIs of
	// notifications/resources/updated.
	featChanged chan struct{}
	updated     atomic.Pointer[func(uri string)]
	logs        *rate.Limiter // of the log notifications logged
	logsDropped atomic.Int64  // log notifications not logged since the last one that was
	stop        context.CancelFunc
	wg          sync.WaitGroup // goroutines the connection started
	grace       time.Duration
}

// progressFunc receives one progress notification of a call.
type progressFunc func(progress, total float64, message string)

// dialer is what a connection needs from its upstream.
type dialer struct {
	name    string
	server  Server
	kind    Transport
	res     resolved
	confine Confine
	// maxResponse bounds each message from the server.
	maxResponse int64
	// maxList bounds each of its lists, all pages together (list.go).
	maxList   int64
	red       redactor
	log       *slog.Logger
	version   string
	handshake time.Duration
	grace     time.Duration
	ping      time.Duration
	// shared says several principals call the server (Config.Shared):
	// once it has served calls, how it ended shows no stderr.
	shared bool
}

// errLegacySSE is an HTTP server that refused Streamable HTTP's
// initialize with a 4xx status: it may speak SSE.
var errLegacySSE = transport.ErrLegacySSEServer

// errHandshakeTimeout is a server that did not answer initialize in time.
var errHandshakeTimeout = errors.New("handshake timeout")

// dial connects and completes the handshake. It returns a reason, for the
// server's status, with every error.
func (d dialer) dial(ctx context.Context) (*conn, error) {
	life, stop := context.WithCancel(context.Background())
	c := &conn{
		kind:        d.kind,
		progress:    map[string]progressFunc{},
		tooLarge:    map[string]dropped{},
		maxMsg:      d.maxResponse,
		maxList:     d.maxList,
		dropLog:     rate.NewLimiter(rate.Every(10*time.Second), 3),
		lost:        make(chan struct{}),
		listChanged: make(chan struct{}, 1),
		featChanged: make(chan struct{}, 1),
		logs:        rate.NewLimiter(logRate, logBurst),
		stop:        stop,
		grace:       d.grace,
	}
	quiet := slog.New(minLevel{d.log.Handler(), slog.LevelWarn})
	var err error
	switch d.kind {
	case Stdio:
		c.proc, err = startProcess(d.name, d.server, d.res, d.confine, d.log, d.red)
		if err != nil {
			stop()
			return nil, err
		}
		c.tr = transport.NewIO(newLimitReader(c.proc.stdout, jsonLines, d.maxResponse, c.oversized(d)), c.proc.stdin, nil)
	case StreamableHTTP:
		c.tr, err = transport.NewStreamableHTTP(d.server.URL,
			transport.WithHTTPBasicClient(c.httpClient(d)),
			transport.WithHTTPHeaders(d.res.headers),
			//lint:ignore SA1019 upstream servers speak protocol versions before 2026-07-28, where the GET stream carries list_changed.
			transport.WithContinuousListening(),
			transport.WithHTTPLogger(quiet))
	case SSE:
		var sse *transport.SSE
		sse, err = transport.NewSSE(d.server.URL, transport.WithHTTPClient(c.httpClient(d)), transport.WithHeaders(d.res.headers), transport.WithSSELogger(quiet))
		if err == nil {
			sse.SetConnectionLostHandler(func(err error) { c.markLost("the SSE stream ended: " + d.red.String(err.Error())) })
			c.tr = sse
		}
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("transport: %w", err)
	}
	c.client = client.NewClient(c.tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	hctx, cancel := context.WithTimeoutCause(ctx, d.handshake, errHandshakeTimeout)
	defer cancel()
	if err = c.start(life, hctx, d); err != nil {
		if c.proc != nil && c.proc.waitExit(ctx, 500*time.Millisecond) {
			// Before initialize nobody's call reached it: its stderr
			// says why it would not start.
			why := c.proc.exitReason(true)
			if c.proc.confined && deniedRE.MatchString(why) {
				why += confinedHint
			}
			err = fmt.Errorf("%s", why)
		} else if errors.Is(context.Cause(hctx), errHandshakeTimeout) {
			err = fmt.Errorf("%w: no answer to initialize within %s", errHandshakeTimeout, d.handshake)
		}
		c.close()
		return nil, err
	}
	if c.proc != nil {
		c.wg.Go(func() {
			select {
			case <-c.proc.exited:
				c.proc.lastWords()
				c.markLost(c.proc.exitReason(!d.shared))
			case <-life.Done():
			}
		})
	}
	if d.kind != Stdio && d.ping > 0 {
		c.wg.Go(func() { c.pingEvery(life, d.ping, d.red) })
	}
	return c, nil
}

// httpClient is the HTTP client of a connection to an HTTP server: its
// responses' messages are bounded as they are read.
func (c *conn) httpClient(d dialer) *http.Client {
	return &http.Client{
		Transport:     limitTransport{base: http.DefaultTransport, max: d.maxResponse, drop: c.oversized(d)},
		CheckRedirect: sameOrigin(d.server.URL),
	}
}

// sameOrigin follows a server's redirects only within the scheme, host
// and port of its configured URL: a server cannot send codecell's
// requests, with its headers and the calls' arguments, to another host
// (an internal service, say), nor from https to http.
func sameOrigin(configured string) func(*http.Request, []*http.Request) error {
	base, err := url.Parse(configured)
	return func(r *http.Request, via []*http.Request) error {
		switch {
		case len(via) >= 10:
			return errors.New("stopped after 10 redirects")
		case err != nil || r.URL.Scheme != base.Scheme || r.URL.Host != base.Host:
			return fmt.Errorf("the server redirected to another origin (%s://%s), which codecell does not follow; configure its url there if it moved", r.URL.Scheme, r.URL.Host)
		}
		return nil
	}
}

// oversized records a message the server sent that was larger than its
// max_response_bytes, or that no call held and decodes into more: a
// response, for the request that waits for it; a notification or
// request, or a message without an id, is dropped, with a warning now and
// then.
func (c *conn) oversized(d dialer) oversized {
	return func(id json.RawMessage, method bool, why dropped) {
		var rid mcp.RequestId
		if id != nil && !method && json.Unmarshal(id, &rid) == nil {
			c.mu.Lock()
			// An answer to no request stays until the connection ends:
			// a server sending such answers cannot grow the map without
			// end. A request waiting still fails, the replacement's
			// message saying why.
			if len(c.tooLarge) < maxDropped {
				c.tooLarge[rid.String()] = why
			}
			c.mu.Unlock()
			return
		}
		if why.refused != nil {
			return // a message for no call, which no call held
		}
		if !c.dropLog.Allow() {
			return
		}
		if why.decoded > 0 {
			d.log.Warn("dropped a message that decodes into more than max_response_bytes", "bytes", why.size, "decoded_bytes", why.decoded, "max_response_bytes", d.maxResponse, "request_or_notification", method)
			return
		}
		d.log.Warn("dropped a message larger than max_response_bytes", "bytes", why.size, "max_response_bytes", d.maxResponse, "request_or_notification", method)
	}
}

// refusedError is a call whose response was dropped as it was read
// because it could not be held (holdCopies): err is the holder's.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// tooLargeError is a call whose response was larger than the server's
// max_response_bytes, and was not read into memory; or, when decoded is
// set, whose response no call held and would decode into more (an error
// with data of many values, over stdio).
type tooLargeError struct {
	size, decoded, max int64
}

func (e *tooLargeError) Error() string {
	return "the server sent " + e.what("a response") + fmt.Sprintf(", more than max_response_bytes (%s)", sizeText(e.max))
}

// what says what the server sent, a noun such as "a result", and its size.
func (e *tooLargeError) what(noun string) string {
	if e.decoded > 0 {
		return fmt.Sprintf("%s that decodes into about %s (its %s and %d bytes a JSON value)", noun, sizeText(e.decoded), sizeText(e.size), tools.DecodedValueBytes)
	}
	return fmt.Sprintf("%s of %s", noun, sizeText(e.size))
}

// sizeText writes a byte count for people.
func sizeText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// maxDropped bounds the dropped answers a connection remembers, far more
// than its requests in flight.
const maxDropped = 1024

// droppedAnswer returns, of the answers limitReader dropped and no call
// took, one, or nil.
func (c *conn) droppedAnswer() *tooLargeError {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.tooLarge {
		return &tooLargeError{size: d.size, decoded: d.decoded, max: c.maxMsg}
	}
	return nil
}

// start starts the transport on the connection's lifetime and performs
// the handshake within hctx.
func (c *conn) start(life, hctx context.Context, d dialer) error {
	if err := c.client.Start(life); err != nil {
		return err
	}
	c.client.OnNotification(func(n mcp.JSONRPCNotification) { c.notified(n, d) })
	res, err := c.client.Initialize(hctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "codecell", Version: d.version},
	}})
	if err != nil {
		if big := c.droppedAnswer(); big != nil {
			// The only request yet: its answer was dropped as it was read.
			return fmt.Errorf("the server sent %s, more than max_response_bytes (%s): codecell dropped it (raise max_response_bytes for this server if it must send that)", big.what("an answer to initialize"), sizeText(big.max))
		}
		return err
	}
	c.info = res.ServerInfo
	c.instr = res.Instructions
	c.listsCh = res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged
	c.caps = res.Capabilities
	return nil
}

// notified handles a notification from the server. It runs on the
// transport's reading goroutine and never blocks.
func (c *conn) notified(n mcp.JSONRPCNotification, d dialer) {
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged):
		select {
		case c.listChanged <- struct{}{}:
		default:
		}
	case string(mcp.MethodNotificationPromptsListChanged), string(mcp.MethodNotificationResourcesListChanged):
		select {
		case c.featChanged <- struct{}{}:
		default:
		}
	case string(mcp.MethodNotificationResourceUpdated):
		if uri, ok := n.Params.AdditionalFields["uri"].(string); ok {
			if fn := c.updated.Load(); fn != nil {
				(*fn)(uri)
			}
		}
	case string(mcp.MethodNotificationProgress):
		f := n.Params.AdditionalFields
		token := fmt.Sprint(f["progressToken"])
		c.mu.Lock()
		fn := c.progress[token]
		c.mu.Unlock()
		if fn != nil {
			p, _ := f["progress"].(float64)
			total, _ := f["total"].(float64)
			msg, _ := f["message"].(string)
			fn(p, total, d.red.String(msg))
		}
	case "notifications/message":
		if !d.log.Enabled(context.Background(), slog.LevelDebug) {
			return
		}
		dropped := func() {
			if n := c.logsDropped.Swap(0); n > 0 {
				d.log.Debug(fmt.Sprintf("%s: %d log notifications not logged (more than %d a second)", d.name, n, logRate), "stream", "log")
			}
		}
		if !c.logs.Allow() {
			if c.logsDropped.Add(1) == 1 {
				// Said with the next one logged, or in a second.
				time.AfterFunc(time.Second, dropped)
			}
			return
		}
		dropped()
		f := n.Params.AdditionalFields
		level, _ := f["level"].(string)
		logger, _ := f["logger"].(string)
		d.log.Debug(d.name+": "+logText(f["data"], d.red, maxLogText), "stream", "log",
			"level", logText(level, d.red, 16), "logger", logText(logger, d.red, 64))
	}
}

// A server's log notifications are logged at debug level, at most logRate
// a second in bursts of logBurst, each cut to maxLogText bytes.
const (
	logRate    = 20
	logBurst   = 100
	maxLogText = 300
)

// logText is the data of a log notification as one line of at most limit
// bytes, its secrets replaced: a string as it is, anything else as JSON.
func logText(data any, red redactor, limit int) string {
	s, ok := data.(string)
	if !ok {
		b, _ := json.Marshal(data)
		s = string(b)
	}
	// Cut before the scrubbing, which need not read megabytes, and after
	// it, so that no secret is cut in two.
	s = cutBytes(s, 4<<10)
	s = strings.Join(strings.Fields(red.String(s)), " ")
	if len(s) > limit {
		s = cutBytes(s, limit) + "…"
	}
	return s
}

// cutBytes cuts s to at most n bytes, on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// pingEvery checks an HTTP connection's health: a server that stopped
// answering is lost, and reconnected.
func (c *conn) pingEvery(life context.Context, every time.Duration, red redactor) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-life.Done():
			return
		case <-c.lost:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(life, max(every/2, time.Second))
		_, err := c.request(ctx, string(mcp.MethodPing), nil)
		cancel()
		if err != nil && life.Err() == nil {
			c.markLost("no answer to ping: " + red.String(err.Error()))
			return
		}
	}
}

// markLost records that the connection ended, and why; the first reason
// is kept.
func (c *conn) markLost(why string) {
	c.lostOnce.Do(func() {
		c.lostWhy = why
		close(c.lost)
	})
}

// lostReason waits up to d for the connection to be known lost and
// returns why, or "" when it is not.
func (c *conn) lostReason(d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.lost:
		return c.lostWhy
	case <-t.C:
		return ""
	}
}

// close ends the connection: the client, then the child process group
// (SIGTERM, SIGKILL after the grace), then the goroutines it started.
func (c *conn) close() {
	c.markLost("closed")
	c.stop()
	if c.client != nil {
		_ = c.client.Close()
	}
	if c.proc != nil {
		c.proc.terminate(c.grace)
	}
	c.wg.Wait()
}

// rpcError is an error response from the server.
type rpcError struct {
	Code    int
	Message string
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code) }

// request sends one request and returns its result. When ctx ends first,
// the server is told with notifications/cancelled.
func (c *conn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID()
	return c.send(ctx, id, method, params)
}

func (c *conn) nextID() mcp.RequestId {
	return mcp.NewRequestId("codecell-" + strconv.FormatInt(c.ids.Add(1), 10))
}

func (c *conn) send(ctx context.Context, id mcp.RequestId, method string, params any) (json.RawMessage, error) {
	defer func() {
		c.mu.Lock()
		delete(c.tooLarge, id.String())
		c.mu.Unlock()
	}()
	resp, err := c.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params})
	if err != nil {
		if ctx.Err() != nil {
			c.cancel(id, context.Cause(ctx))
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if resp.Error != nil {
		c.mu.Lock()
		d, over := c.tooLarge[id.String()]
		c.mu.Unlock()
		switch {
		case over && d.refused != nil:
			return nil, &refusedError{err: d.refused}
		case over:
			return nil, &tooLargeError{size: d.size, decoded: d.decoded, max: c.maxMsg}
		}
		return nil, &rpcError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

// cancel tells the server to stop working on request id, off the caller's
// path: the caller already has its answer.
func (c *conn) cancel(id mcp.RequestId, cause error) {
	reason := "cancelled"
	if errors.Is(cause, context.DeadlineExceeded) {
		reason = "deadline exceeded"
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	c.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.tr.SendNotification(ctx, n)
	})
}

// remoteTool is a tool as the server lists it, its schemas kept raw.
type remoteTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *annotations    `json:"annotations,omitempty"`
}

type annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// callParams are the parameters of tools/call.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      *callMeta       `json:"_meta,omitempty"`
}

type callMeta struct {
	ProgressToken string `json:"progressToken,omitempty"`
	// Traceparent and Tracestate continue the caller's W3C trace context
	// (a run's tool call span, when codecell traces) in the server.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// callTool calls the tool by its original name and returns the raw
// CallToolResult. Progress notifications for the call go to onProgress;
// ctx's trace context, if any, goes with the call in its _meta.
func (c *conn) callTool(ctx context.Context, name string, args json.RawMessage, onProgress progressFunc) (json.RawMessage, error) {
	id := c.nextID()
	p := callParams{Name: name, Arguments: args}
	var meta callMeta
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	meta.Traceparent, meta.Tracestate = carrier["traceparent"], carrier["tracestate"]
	if onProgress != nil {
		token := id.String()
		meta.ProgressToken = token
		c.mu.Lock()
		c.progress[token] = onProgress
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.progress, token)
			c.mu.Unlock()
		}()
	}
	if meta != (callMeta{}) {
		p.Meta = &meta
	}
	return c.send(ctx, id, string(mcp.MethodToolsCall), p)
}

// minLevel is a slog handler that drops records below a level: the
// transports' informational logs are noise in codecell's.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// describe is a one-line reason for an error of dial or of a call, with
// secrets replaced.
func describe(err error, red redactor) string {
	var auth *transport.AuthorizationRequiredError
	var oauth *transport.OAuthAuthorizationRequiredError
	switch {
	case errors.As(err, &auth) || errors.As(err, &oauth) || errors.Is(err, transport.ErrUnauthorized):
		return "HTTP 401 Unauthorized: the server wants credentials; set its headers (such as Authorization) in the configuration"
	case errors.Is(err, transport.ErrLegacySSEServer):
		return `the server refused Streamable HTTP (HTTP 4xx for initialize); if it speaks the older SSE transport, set type = "sse"`
	case errors.Is(err, transport.ErrTransportClosed):
		return "the connection closed"
	}
	msg := err.Error()
	for _, p := range []string{"transport error: ", "failed to send request: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	// An HTTP error's body may quote the request — a call's arguments,
	// resolved — and this text becomes the server's status, which every
	// principal reads, and a log line: its size only.
	if m := httpStatusBody.FindStringSubmatchIndex(msg); m != nil {
		msg = msg[:m[3]] + fmt.Sprintf(" (its body, %d bytes, is not shown)", len(strings.TrimSpace(msg[m[1]:])))
	}
	return red.String(msg)
}

// httpStatusBody finds mcp-go's "request failed with status N: body".
var httpStatusBody = regexp.MustCompile(`(?s)(request failed with status \d+):`)
