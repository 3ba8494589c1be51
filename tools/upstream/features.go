package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
)

// Prompts and resources of the servers, besides their tools: the source
// keeps what each ready server offers (listed at the handshake and again
// when the server says a list changed), forwards prompts/get,
// resources/read and resources/subscribe to it, and tells a listener
// (SetListener) when a list changed or a subscribed resource was updated.
// It serves nothing itself: package mcpserver names them by category,
// filters what they say and applies the callers' toolsets.

// Prompt is a prompt of the server whose tools form Category.
type Prompt struct {
	Category string
	Prompt   mcp.Prompt
}

// Resource is a resource of the server whose tools form Category; its
// URI is the server's own.
type Resource struct {
	Category string
	Resource mcp.Resource
}

// ResourceTemplate is a resource template of the server whose tools form
// Category; its URI template is the server's own.
type ResourceTemplate struct {
	Category string
	Template mcp.ResourceTemplate
}

// Event is what SetListener's function is told.
type Event struct {
	// Category is the server's category.
	Category string
	// Prompts and Resources say the server's prompts, or its resources
	// and templates, changed (it connected, disconnected, or said so).
	Prompts, Resources bool
	// Updated is a subscribed resource's URI (the server's) that the
	// server says was updated.
	Updated string
}

// features is what a connected server offers besides tools.
type features struct {
	prompts   []mcp.Prompt
	resources []mcp.Resource
	templates []mcp.ResourceTemplate
}

// SetListener sets the function told of changes to the servers' prompts
// and resources; nil stops telling. It is called off the servers'
// reading goroutines, and must not block for long.
func (s *Source) SetListener(fn func(Event)) {
	s.listenMu.Lock()
	s.listener = fn
	s.listenMu.Unlock()
}

func (s *Source) tell(e Event) {
	s.listenMu.Lock()
	fn := s.listener
	s.listenMu.Unlock()
	if fn != nil {
		fn(e)
	}
}

// Prompts returns the prompts of the ready servers, by category and name.
func (s *Source) Prompts() []Prompt {
	var out []Prompt
	for _, u := range s.upstreams {
		u.mu.Lock()
		for _, p := range u.feat.prompts {
			out = append(out, Prompt{Category: u.category, Prompt: p})
		}
		u.mu.Unlock()
	}
	return out
}

// Resources returns the resources of the ready servers, by category and
// URI.
func (s *Source) Resources() []Resource {
	var out []Resource
	for _, u := range s.upstreams {
		u.mu.Lock()
		for _, r := range u.feat.resources {
			out = append(out, Resource{Category: u.category, Resource: r})
		}
		u.mu.Unlock()
	}
	return out
}

// ResourceTemplates returns the resource templates of the ready servers,
// by category and template.
func (s *Source) ResourceTemplates() []ResourceTemplate {
	var out []ResourceTemplate
	for _, u := range s.upstreams {
		u.mu.Lock()
		for _, t := range u.feat.templates {
			out = append(out, ResourceTemplate{Category: u.category, Template: t})
		}
		u.mu.Unlock()
	}
	return out
}

// ErrNoSuchServer is a category that no configured server's tools form.
var ErrNoSuchServer = errors.New("no upstream server has that category")

func (s *Source) byCategory(category string) (*upstream, error) {
	for _, u := range s.upstreams {
		if u.category == category {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoSuchServer, category)
}

// GetPrompt gets a prompt of category's server, with its arguments.
func (s *Source) GetPrompt(ctx context.Context, category, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	u, err := s.byCategory(category)
	if err != nil {
		return nil, err
	}
	raw, err := u.forward(ctx, string(mcp.MethodPromptsGet), map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	res, err := mcp.ParseGetPromptResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: the answer to prompts/get is not a prompt: %w", u.name, err)
	}
	return res, nil
}

// ReadResource reads a resource of category's server by its own URI.
func (s *Source) ReadResource(ctx context.Context, category, uri string) (*mcp.ReadResourceResult, error) {
	u, err := s.byCategory(category)
	if err != nil {
		return nil, err
	}
	raw, err := u.forward(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	res, err := mcp.ParseReadResourceResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: the answer to resources/read is not a resource: %w", u.name, err)
	}
	return res, nil
}

// Subscribe asks category's server to say when the resource at uri (its
// own URI) is updated, if it can; it asks again after each reconnection.
// It reports whether the server offers subscriptions.
func (s *Source) Subscribe(ctx context.Context, category, uri string) (bool, error) {
	u, err := s.byCategory(category)
	if err != nil {
		return false, err
	}
	u.mu.Lock()
	can := u.conn != nil && u.conn.caps.Resources != nil && u.conn.caps.Resources.Subscribe
	first := !u.subscribed[uri]
	if can {
		u.subscribed[uri] = true
	}
	u.mu.Unlock()
	if !can || !first {
		return can, nil
	}
	_, err = u.forward(ctx, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri})
	return true, err
}

// forward sends one request to the server within its timeout and
// concurrency limit, waiting for a server that is connecting; errors are
// tool errors with the source's codes, secrets replaced.
func (u *upstream) forward(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, u.timeout, errCallTimeout)
	defer cancel()
	what := u.category + " " + method
	release, _, err := u.slots.Acquire(ctx)
	if err != nil {
		return nil, u.ended(ctx, what, "")
	}
	defer release()
	c, err := u.connection(ctx, what)
	if err != nil {
		return nil, err
	}
	raw, err := c.request(ctx, method, params)
	if err == nil {
		return raw, nil
	}
	if ctx.Err() != nil {
		return nil, u.ended(ctx, what, "")
	}
	var big *tooLargeError
	if errors.As(err, &big) {
		return nil, &tools.Error{Code: CodeUpstreamTooLarge, Tool: what,
			Message: fmt.Sprintf("upstream %q sent an answer of %s, more than its max_response_bytes (%s)", u.name, sizeText(big.size), sizeText(big.max))}
	}
	var rpc *rpcError
	if errors.As(err, &rpc) {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: what, Message: fmt.Sprintf("upstream %q answered with an error: %s", u.name, u.red.String(rpc.Error())), Err: err}
	}
	return nil, &tools.Error{Code: CodeUpstreamError, Tool: what, Message: fmt.Sprintf("upstream %q: %s", u.name, describe(err, u.red))}
}

// refreshFeatures lists what the server offers besides tools, as its
// capabilities say it does, and tells the listener what changed. A list
// that fails is left empty, and logged; one larger than max_list_bytes
// is the error returned, and nothing is changed.
func (u *upstream) refreshFeatures(ctx context.Context, c *conn) error {
	var f features
	var big *listTooLargeError
	failed := func(what string, err error) bool {
		if errors.As(err, &big) {
			return true
		}
		if err != nil {
			u.log.Warn(what, "err", describe(err, u.red))
		}
		return false
	}
	if c.caps.Prompts != nil {
		if failed("list prompts", listAll(ctx, c, string(mcp.MethodPromptsList), "prompts", &f.prompts)) {
			return u.tooLarge(big)
		}
	}
	if c.caps.Resources != nil {
		if failed("list resources", listAll(ctx, c, string(mcp.MethodResourcesList), "resources", &f.resources)) ||
			failed("list resource templates", listAll(ctx, c, string(mcp.MethodResourcesTemplatesList), "resourceTemplates", &f.templates)) {
			return u.tooLarge(big)
		}
	}
	slices.SortFunc(f.prompts, func(a, b mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(f.resources, func(a, b mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(f.templates, func(a, b mcp.ResourceTemplate) int {
		return strings.Compare(templateText(a), templateText(b))
	})
	u.setFeatures(f)
	return nil
}

// setFeatures records f and tells the listener which lists changed.
func (u *upstream) setFeatures(f features) {
	u.mu.Lock()
	old := u.feat
	u.feat = f
	u.mu.Unlock()
	e := Event{Category: u.category,
		Prompts:   !sameJSON(old.prompts, f.prompts),
		Resources: !sameJSON(old.resources, f.resources) || !sameJSON(old.templates, f.templates)}
	if e.Prompts || e.Resources {
		u.src.tell(e)
	}
}

// resubscribe asks a reconnected server again for the updates of the
// resources subscribed before.
func (u *upstream) resubscribe(ctx context.Context, c *conn) {
	if c.caps.Resources == nil || !c.caps.Resources.Subscribe {
		return
	}
	u.mu.Lock()
	uris := make([]string, 0, len(u.subscribed))
	for uri := range u.subscribed {
		uris = append(uris, uri)
	}
	u.mu.Unlock()
	for _, uri := range uris {
		if _, err := c.request(ctx, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri}); err != nil {
			u.log.Debug("subscribe again", "err", describe(err, u.red))
		}
	}
}

func templateText(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
