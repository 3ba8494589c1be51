package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
)

// upstream is one configured server: it keeps a connection to it (run),
// its tools in the registry, and forwards calls.
type upstream struct {
	src      *Source
	name     string
	category string
	cfg      Server
	kind     Transport
	detect   bool // try Streamable HTTP, then SSE
	log      *slog.Logger
	red      redactor
	res      resolved
	resErr   error // a ${VAR} that could not be resolved
	timeout  time.Duration
	slots    *tools.Slots
	// maxResponse bounds each message from the server, maxList each of
	// its lists.
	maxResponse, maxList int64

	settled     chan struct{} // closed when the first attempt ended
	settledOnce sync.Once

	// regMu orders the changes of the server's tools in the registry:
	// a refresh, and a tool registered again with a learned shape.
	regMu sync.Mutex

	mu       sync.Mutex
	state    State
	reason   string
	conn     *conn
	changed  chan struct{} // closed and replaced at every state change
	tools    map[string]*remoteTool
	names    map[string]string // original → short name
	notes    map[string]string // original → what ToolNames noted of its name
	printed  map[string][32]byte
	learned  map[string]*learning // original → what is learned of its results
	restarts int
	lastWhy  string // the last failure logged
	skipped  string // the tools skipped for their names, as last logged
	server   string
	summary  string
	// feat is what the server offers besides tools; subscribed the
	// URIs of its resources subscribed to (features.go).
	feat       features
	subscribed map[string]bool
}

func newUpstream(s *Source, name string, cfg Server) *upstream {
	kind, detect := cfg.Transport()
	u := &upstream{
		src:      s,
		name:     name,
		category: CategoryFor(name, cfg),
		cfg:      cfg,
		kind:     kind,
		detect:   detect,
		log:      s.log.With("upstream", name),
		timeout:  cfg.Timeout.D(),
		settled:  make(chan struct{}),
		state:    "",
		changed:  make(chan struct{}),
		tools:    map[string]*remoteTool{},
		names:    map[string]string{},
		notes:    map[string]string{},
		printed:  map[string][32]byte{},
		learned:  map[string]*learning{},

		subscribed: map[string]bool{},
	}
	if u.timeout <= 0 {
		u.timeout = DefaultCallTimeout
	}
	n := cfg.MaxConcurrentCalls
	if n <= 0 {
		n = DefaultMaxConcurrentCalls
	}
	share := cfg.MaxCallsPerPrincipal
	if share <= 0 && !s.cfg.Shared {
		share = n // one principal: nobody to keep room for
	}
	u.slots = tools.NewSlots(n, share)
	u.maxResponse = cfg.MaxResponseBytes
	if u.maxResponse <= 0 {
		u.maxResponse = DefaultMaxResponseBytes
	}
	u.maxList = cfg.MaxListBytes
	if u.maxList <= 0 {
		u.maxList = DefaultMaxListBytes
	}
	u.res, u.resErr = resolve(cfg, s.cfg.Lookup)
	u.red = newRedactor(u.res.secrets, s.cfg.Scrub)
	u.summary = fmt.Sprintf("Tools of the MCP server %q (%s).", name, u.where())
	if cfg.Disabled {
		u.state = StateDisabled
		u.reason = "disabled in the configuration"
		u.settledOnce.Do(func() { close(u.settled) })
	}
	return u
}

// where names the server for people: its command or its URL without
// query and credentials, never its arguments or headers.
func (u *upstream) where() string {
	if u.kind == Stdio {
		return "stdio: " + path.Base(u.cfg.Command)
	}
	return string(u.kind) + ": " + u.red.String(tools.URLOrigin(u.cfg.URL))
}

func (u *upstream) status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return Status{
		Name: u.name, Category: u.category, Transport: u.kind, State: u.state, Reason: u.reason,
		Tools: len(u.names), Restarts: u.restarts, Server: u.server,
	}
}

// setState records a state change, tells waiting calls and the registry.
func (u *upstream) setState(st State, reason string) {
	// Every principal reads a source's status, and /readyz shows it: no
	// secret of the server's configuration (its URL's key included).
	reason = u.red.String(reason)
	u.mu.Lock()
	if u.state == st && u.reason == reason {
		u.mu.Unlock()
		return
	}
	u.state, u.reason = st, reason
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
	cs := tools.CategoryStatus{}
	switch st {
	case StateConnecting:
		cs = tools.CategoryStatus{Unavailable: true, Reason: "connecting: " + reason}
	case StateUnavailable, StateDisabled:
		cs = tools.CategoryStatus{Unavailable: true, Reason: reason}
	}
	if err := u.src.reg.SetCategoryStatus(u.category, cs); err != nil {
		u.log.Error("set category status", "err", err)
	}
}

// stableAfter is how long a connection must have lasted for the next
// attempt after it ends to start without delay.
const stableAfter = time.Minute

// begin describes the category and marks it connecting, before run
// starts: from Start's return on, the server is listed.
func (u *upstream) begin() {
	if err := u.src.reg.DescribeCategory(u.category, u.summary); err != nil {
		u.log.Error("describe category", "err", err)
	}
	u.setState(StateConnecting, "starting")
}

// run keeps the server connected until ctx ends: connect, serve until the
// connection ends, wait a growing delay after failures, again.
func (u *upstream) run(ctx context.Context) {
	defer u.settledOnce.Do(func() { close(u.settled) })
	if u.resErr != nil {
		u.fail(fmt.Sprintf("cannot start: %v", u.resErr))
		return // the environment does not change while codecell runs
	}
	u.loadShapes(ctx)
	failures := 0
	for attempt := 0; ctx.Err() == nil; attempt++ {
		c, err := u.connect(ctx, attempt > 0)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		var reason string
		if err == nil {
			u.settledOnce.Do(func() { close(u.settled) })
			started := time.Now()
			reason = u.serve(ctx, c)
			if ctx.Err() != nil {
				return
			}
			if time.Since(started) >= stableAfter {
				failures = 0
			}
		} else {
			reason = u.red.String(err.Error())
			if errors.Is(err, errConflict) {
				u.fail(reason)
				return
			}
		}
		delay := time.Duration(0)
		if failures > 0 || err != nil {
			delay = min(u.src.cfg.Backoff<<min(failures, 16), u.src.cfg.MaxBackoff)
		}
		failures++
		if delay > 0 {
			u.failAgain(reason, fmt.Sprintf("%s; trying again in %s", reason, delay.Round(100*time.Millisecond)))
		}
		u.settledOnce.Do(func() { close(u.settled) })
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else {
			u.log.Warn("connection ended; reconnecting", "reason", u.red.String(reason))
		}
		u.setState(StateConnecting, "reconnecting after: "+reason)
	}
}

// fail records an unavailable server that will not be tried again.
func (u *upstream) fail(reason string) { u.failAgain(reason, reason) }

// failAgain records an unavailable server with the reason shown, logging
// why it failed when that is not why it failed the last time.
func (u *upstream) failAgain(why, shown string) {
	u.mu.Lock()
	same := u.lastWhy == why
	u.lastWhy = why
	u.mu.Unlock()
	if !same {
		u.log.Warn("upstream unavailable", "reason", u.red.String(why))
	}
	u.setState(StateUnavailable, shown)
}

// errConflict is a category that holds tools of another source.
var errConflict = errors.New("category conflict")

// connect dials the server and registers its tools; again says it was
// connected before.
func (u *upstream) connect(ctx context.Context, again bool) (*conn, error) {
	d := dialer{
		name: u.name, server: u.cfg, kind: u.kind, res: u.res, red: u.red, log: u.log, confine: u.src.cfg.Confine, maxResponse: u.maxResponse, maxList: u.maxList,
		version: u.src.cfg.Version, handshake: u.src.cfg.HandshakeTimeout, grace: u.src.cfg.Grace, ping: u.src.cfg.PingInterval, shared: u.src.cfg.Shared,
	}
	c, err := d.dial(ctx)
	if err != nil && u.detect && errors.Is(err, errLegacySSE) {
		d.kind = SSE
		c, err = d.dial(ctx)
		if err == nil {
			u.kind = SSE // remembered for reconnections
			u.log.Info("the server speaks SSE, not Streamable HTTP")
		}
	}
	if err != nil {
		return nil, errors.New(describe(err, u.red))
	}
	lctx, cancel := context.WithTimeout(ctx, u.src.cfg.HandshakeTimeout)
	defer cancel()
	if err := u.refresh(lctx, c); err != nil {
		c.close()
		return nil, err
	}
	updated := func(uri string) {
		u.mu.Lock()
		sub := u.subscribed[uri]
		u.mu.Unlock()
		if sub {
			u.src.tell(Event{Category: u.category, Updated: uri})
		}
	}
	c.updated.Store(&updated)
	if err := u.refreshFeatures(lctx, c); err != nil {
		c.close()
		return nil, err
	}
	u.resubscribe(lctx, c)
	u.mu.Lock()
	u.conn = c
	if again {
		u.restarts++
	}
	u.server = strings.TrimSpace(c.info.Name + " " + c.info.Version)
	n := len(u.names)
	u.mu.Unlock()
	if sum := serverSummary(c); sum != "" && sum != u.summary {
		u.summary = sum
		if err := u.src.reg.DescribeCategory(u.category, sum); err != nil {
			u.log.Error("describe category", "err", err)
		}
	}
	u.setState(StateReady, "")
	u.log.Info("upstream ready", "server", u.server, "transport", c.kind, "tools", n)
	return c, nil
}

// serve waits for the connection to end, refreshing the tools when the
// server says they changed, and returns why it ended.
func (u *upstream) serve(ctx context.Context, c *conn) string {
	defer func() {
		u.mu.Lock()
		u.conn = nil
		u.mu.Unlock()
		c.close()
		u.setFeatures(features{}) // offered again once connected
	}()
	for {
		select {
		case <-ctx.Done():
			return "closing"
		case <-c.lost:
			return c.lostWhy
		case <-c.listChanged:
			lctx, cancel := context.WithTimeout(ctx, u.src.cfg.HandshakeTimeout)
			err := u.refresh(lctx, c)
			cancel()
			var big *listTooLarge
			if errors.As(err, &big) {
				return big.Error()
			}
			if err != nil {
				u.log.Warn("refresh tools after list_changed", "err", u.red.String(err.Error()))
			}
		case <-c.featChanged:
			lctx, cancel := context.WithTimeout(ctx, u.src.cfg.HandshakeTimeout)
			err := u.refreshFeatures(lctx, c)
			cancel()
			if err != nil {
				return err.Error()
			}
		}
	}
}

// refresh lists the server's tools and brings the registry up to date:
// new and changed tools registered, vanished ones removed.
func (u *upstream) refresh(ctx context.Context, c *conn) error {
	list, err := c.listTools(ctx)
	if errors.Is(err, errListCut) {
		u.log.Warn("the server lists more tools than codecell keeps; kept the first", "kept", len(list))
		err = nil
	}
	var big *listTooLargeError
	if errors.As(err, &big) {
		return u.tooLarge(big)
	}
	if err != nil {
		if c.proc != nil && c.proc.waitExit(ctx, 200*time.Millisecond) {
			return errors.New(c.proc.exitReason(!u.src.cfg.Shared))
		}
		return fmt.Errorf("list tools: %s", describe(err, u.red))
	}
	byName := map[string]*remoteTool{}
	var origs, skipped []string
	for i := range list {
		t := &list[i]
		if why := nameProblem(t.Name); why != "" {
			skipped = append(skipped, fmt.Sprintf("tool %d of its list (%s)", i+1, why))
			continue
		}
		if byName[t.Name] != nil || !u.allowed(t.Name) {
			continue
		}
		byName[t.Name] = t
		origs = append(origs, t.Name)
	}
	if s := strings.Join(skipped, "; "); s != "" {
		u.mu.Lock()
		again := u.skipped == s
		u.skipped = s
		u.mu.Unlock()
		if !again {
			u.log.Warn("skipped tools whose names cannot be registered", "count", len(skipped), "tools", s)
		}
	}
	short, notes := ToolNames(u.category, origs)
	u.regMu.Lock()
	defer u.regMu.Unlock()
	// Only tools of this source may live in the category.
	mine := map[string]bool{}
	u.mu.Lock()
	for _, s := range u.names {
		mine[u.category+"."+s] = true
	}
	u.mu.Unlock()
	for _, t := range u.src.reg.ListCategory(u.category) {
		if !mine[t.Name] {
			return fmt.Errorf("%w: category %q already holds %s, which is not from this server; set category for upstream %q", errConflict, u.category, t.Name, u.name)
		}
	}
	var add []tools.Tool
	var addOrig []string
	printed := map[string][32]byte{}
	learned := map[string]*learning{}
	for _, o := range origs {
		t := byName[o]
		fp := fingerprint(t, short[o])
		printed[o] = fp
		u.mu.Lock()
		reset := false
		if declared, _ := schemaOf(t.OutputSchema); declared == nil {
			learned[o], reset = u.learningFor(t, basisOf(c.info.Name, c.info.Version, t))
		}
		same := u.printed[o] == fp && u.names[o] == short[o] && u.notes[o] == notes[o] && !reset
		u.mu.Unlock()
		if same {
			continue
		}
		add = append(add, u.tool(t, short[o], notes[o]))
		addOrig = append(addOrig, o)
	}
	keep := map[string]bool{}
	for _, o := range origs {
		keep[u.category+"."+short[o]] = true
	}
	var remove []string
	u.mu.Lock()
	for _, s := range u.names {
		if n := u.category + "." + s; !keep[n] {
			remove = append(remove, n)
		}
	}
	u.mu.Unlock()
	slices.Sort(remove)
	if len(remove) > 0 {
		u.src.reg.Unregister(remove...)
	}
	if len(add) > 0 {
		if err := u.src.reg.Register(add...); err != nil {
			// One tool the registry refuses does not take the others
			// with it: each is registered alone, and those refused are
			// left out.
			for i, t := range add {
				if err := u.src.reg.Register(t); err != nil {
					o := addOrig[i]
					u.log.Warn("skipped a tool the catalogue refuses", "tool", t.Name, "err", u.red.String(err.Error()))
					u.src.reg.Unregister(t.Name)
					delete(byName, o)
					delete(short, o)
					delete(notes, o)
					delete(printed, o)
					delete(learned, o)
					origs = slices.DeleteFunc(origs, func(x string) bool { return x == o })
				}
			}
		}
	}
	u.mu.Lock()
	u.tools, u.names, u.notes, u.printed, u.learned = byName, short, notes, printed, learned
	u.mu.Unlock()
	if len(add) > 0 || len(remove) > 0 {
		u.log.Info("tools updated", "registered", len(add), "removed", len(remove), "tools", len(origs))
	}
	return nil
}

// listTooLarge is a list of the server's that was larger than its
// max_list_bytes: the server is not used while it lists that much.
type listTooLarge struct{ msg string }

func (e *listTooLarge) Error() string { return e.msg }

// tooLarge is the error of a list larger than the server's
// max_list_bytes, naming the server and the bound.
func (u *upstream) tooLarge(big *listTooLargeError) error {
	return &listTooLarge{msg: fmt.Sprintf("upstream %q: %s", u.name, big.Error())}
}

// maxToolName bounds an upstream tool's original name, in bytes, as MCP
// does (1 to 128 characters).
const maxToolName = 128

// nameProblem says why an upstream's tool name cannot be registered (it
// becomes the tool's alias, and names it in the catalogue), or "". It
// never quotes the name: what is wrong with it may be what it would do to
// a log or a reader.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "an empty name"
	case len(name) > maxToolName:
		return fmt.Sprintf("a name of %d bytes, more than %d", len(name), maxToolName)
	case !utf8.ValidString(name):
		return "a name that is not UTF-8"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) >= 0:
		return "a name with a control character or a line break"
	}
	return ""
}

// allowed applies the allow and deny globs to an original name and the
// name it would be registered under.
func (u *upstream) allowed(orig string) bool {
	s := snakeName(orig, 128)
	match := func(globs []string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, orig); ok {
				return true
			}
			if ok, _ := path.Match(g, s); ok {
				return true
			}
		}
		return false
	}
	if match(u.cfg.Deny) {
		return false
	}
	return len(u.cfg.Allow) == 0 || match(u.cfg.Allow)
}

// fingerprint is what a tool is as the server lists it, and its short
// name: a registration replaces the tools whose fingerprint changed. Its
// fields are hashed as they are, each after its length: marshalling the
// tool copied its schemas two or three times over (a schema of 15 MB
// took 50 MB more at each registration).
func fingerprint(t *remoteTool, short string) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	ann, _ := json.Marshal(t.Annotations) // plain data always marshals
	for _, f := range [][]byte{[]byte(t.Name), []byte(t.Title), []byte(t.Description), t.InputSchema, t.OutputSchema, ann, []byte(short)} {
		field(f)
	}
	return [32]byte(h.Sum(nil))
}

// maxSummary bounds a tool's one-line summary, in runes.
const maxSummary = 200

// tool describes an upstream tool for the registry.
func (u *upstream) tool(t *remoteTool, short, note string) tools.Tool {
	name := u.category + "." + short
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	out := tools.Tool{
		Name:        name,
		Title:       title,
		Summary:     summaryOf(t.Description, title, t.Name, u.name),
		Description: strings.TrimSpace(t.Description),
		Handler:     u.handler(t.Name, name),
		// Each result is one message of the server's, bounded while it
		// is read.
		MaxResultBytes: u.maxResponse,
	}
	if t.Name != short {
		out.Aliases = []string{t.Name}
	}
	var notes []string
	notes = append(notes, fmt.Sprintf("From the MCP server %q (%s), where it is named %q.", u.name, u.where(), t.Name))
	if note != "" {
		notes = append(notes, note)
	}
	in, err := schemaOf(t.InputSchema)
	switch {
	case in != nil:
		out.InputSchema = in
	case errors.Is(err, tools.ErrSchemaTooLarge):
		out.InputSchema = json.RawMessage(`{"type":"object"}`)
		notes = append(notes, fmt.Sprintf("Its input schema is not used here (%v), so arguments are checked by the server only.", err))
		u.log.Warn("left out a tool's input schema", "tool", t.Name, "err", err)
	case err != nil:
		out.InputSchema = json.RawMessage(`{"type":"object"}`)
		notes = append(notes, "Its input schema could not be compiled here, so arguments are checked by the server only.")
	}
	if s, err := schemaOf(t.OutputSchema); s != nil {
		out.OutputSchema = s
	} else {
		out.InferredOutput = u.inferred(t.Name)
		if errors.Is(err, tools.ErrSchemaTooLarge) {
			notes = append(notes, fmt.Sprintf("Its output schema is not used here (%v).", err))
			u.log.Warn("left out a tool's output schema", "tool", t.Name, "err", err)
		}
	}
	if a := t.Annotations; a != nil {
		yes := func(p *bool, def bool) bool {
			if p == nil {
				return def
			}
			return *p
		}
		out.Annotations = tools.Annotations{
			ReadOnly:    yes(a.ReadOnlyHint, false),
			Destructive: !yes(a.ReadOnlyHint, false) && yes(a.DestructiveHint, true),
			Idempotent:  yes(a.IdempotentHint, false),
			OpenWorld:   yes(a.OpenWorldHint, true),
		}
	} else {
		// MCP's defaults: may change things, may be destructive, reaches
		// the outside world.
		out.Annotations = tools.Annotations{Destructive: true, OpenWorld: true}
	}
	out.Annotations.Untrusted = !u.cfg.TrustAnnotations
	out.Errors = []tools.ErrorDoc{
		{Code: CodeUpstreamError, Description: "The server answered with an error, or the call failed on the way to or from it; the message is the server's."},
		{Code: CodeUpstreamUnavailable, Description: "The server is not connected (it could not be started or reached, or is restarting); the message says why."},
		{Code: CodeUpstreamTimeout, Description: fmt.Sprintf("The server did not answer within %s.", u.timeout)},
		{Code: CodeUpstreamTooLarge, Description: fmt.Sprintf("The result was larger than %s (the server's max_response_bytes); ask for less, such as a smaller page or range.", sizeText(u.maxResponse))},
	}
	out.Notes = strings.Join(notes, "\n")
	return out
}

// schemaOf returns a schema from the server when it can be used as one of
// a tool's: an object that the validator compiles (within its bounds,
// counted before it is decoded: tools.ErrSchemaTooLarge). Otherwise it
// returns why not, or nil for no schema.
func schemaOf(s json.RawMessage) (json.RawMessage, error) {
	s = bytes.TrimSpace(s)
	switch {
	case len(s) == 0:
		return nil, nil
	case s[0] != '{':
		return nil, errors.New("not a JSON object")
	}
	if _, err := tools.CompileSchema(s); err != nil {
		return nil, err
	}
	return s, nil
}

// summaryOf is a tool's one-line summary: the first sentence of its
// description, else its title, else a sentence naming it.
func summaryOf(desc, title, orig, server string) string {
	line := strings.TrimSpace(desc)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	if i := strings.Index(line, ". "); i >= 0 {
		line = line[:i+1]
	}
	if line == "" {
		line = strings.TrimSpace(strings.ReplaceAll(title, "\n", " "))
	}
	if line == "" {
		line = fmt.Sprintf("The tool %s of the MCP server %s.", orig, server)
	}
	if utf8.RuneCountInString(line) > maxSummary {
		line = string([]rune(line)[:maxSummary-1]) + "…"
	}
	return line
}

// serverSummary describes a category by what its server said of itself:
// the first sentence of its instructions, else its title or name.
func serverSummary(c *conn) string {
	name := c.info.Title
	if name == "" {
		name = c.info.Name
	}
	prose := proseOf(c.instr)
	line := summaryOf(prose, "", "", "")
	if prose == "" {
		if name == "" {
			return ""
		}
		line = "The MCP server " + name + "."
	}
	return line
}

// proseOf drops the Markdown headings, rules and blank lines that open a
// server's instructions ("# Everything Server – Server Instructions"), so
// that a summary starts at its first sentence.
func proseOf(instr string) string {
	rest := instr
	for rest != "" {
		line, next, _ := strings.Cut(rest, "\n")
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && strings.Trim(t, "-=*_ ") != "" {
			return strings.TrimSpace(rest)
		}
		rest = next
	}
	return ""
}

// unregisterAll removes the server's tools and category status.
func (u *upstream) unregisterAll() {
	u.mu.Lock()
	var names []string
	for _, s := range u.names {
		names = append(names, u.category+"."+s)
	}
	u.names, u.tools, u.printed = map[string]string{}, map[string]*remoteTool{}, map[string][32]byte{}
	u.notes, u.learned = map[string]string{}, map[string]*learning{}
	u.mu.Unlock()
	if len(names) > 0 {
		u.src.reg.Unregister(names...)
	}
	_ = u.src.reg.SetCategoryStatus(u.category, tools.CategoryStatus{})
}
