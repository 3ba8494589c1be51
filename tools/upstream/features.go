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

// GetPrompt gets a prompt of category's server, with its arguments: its
// description and messages, decoded as answerOf says.
func (s *Source) GetPrompt(ctx context.Context, category, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	u, err := s.byCategory(category)
	if err != nil {
		return nil, err
	}
	raw, err := u.answerOf(ctx, string(mcp.MethodPromptsGet), map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var w struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    mcp.Role    `json:"role"`
			Content wireContent `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("upstream %q: the answer to prompts/get is not a prompt: %w", u.name, err)
	}
	res := &mcp.GetPromptResult{Description: w.Description, Messages: make([]mcp.PromptMessage, 0, len(w.Messages))}
	for i, m := range w.Messages {
		c, err := m.Content.content()
		if err != nil {
			return nil, fmt.Errorf("upstream %q: the answer to prompts/get is not a prompt: its message %d %w", u.name, i, err)
		}
		res.Messages = append(res.Messages, mcp.PromptMessage{Role: m.Role, Content: c})
	}
	return res, nil
}

// ReadResource reads a resource of category's server by its own URI: its
// contents, decoded as answerOf says.
func (s *Source) ReadResource(ctx context.Context, category, uri string) (*mcp.ReadResourceResult, error) {
	u, err := s.byCategory(category)
	if err != nil {
		return nil, err
	}
	raw, err := u.answerOf(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	var w struct {
		Contents []wireResource `json:"contents"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("upstream %q: the answer to resources/read is not a resource: %w", u.name, err)
	}
	if w.Contents == nil {
		return nil, fmt.Errorf("upstream %q: the answer to resources/read is not a resource: it has no contents", u.name)
	}
	res := &mcp.ReadResourceResult{Contents: make([]mcp.ResourceContents, 0, len(w.Contents))}
	for i, c := range w.Contents {
		rc, err := c.contents()
		if err != nil {
			return nil, fmt.Errorf("upstream %q: the answer to resources/read is not a resource: its contents %d %w", u.name, i, err)
		}
		res.Contents = append(res.Contents, rc)
	}
	return res, nil
}

// answerOf forwards a request whose answer is decoded whole — a prompt,
// a resource — and holds, for the caller of ctx, what it decodes into
// (issue 19, attack10 E3): the server's max_response_bytes up front, as
// a tool call's result, then the answer's bytes and its JSON values
// (tools.HoldJSON), before it is decoded. The hold is ctx's
// tools.DecodedHolder's (package mcpserver's, for the request), given
// back when the request is answered; a hold waits within the server's
// timeout. The answer is decoded into types that keep what codecell
// passes on — a prompt's description and messages, a resource's
// contents — and nothing else: the answer's _meta, and its contents',
// are metadata between the server and its client, codecell, and the
// JSON decoder skips them without building them.
func (u *upstream) answerOf(ctx context.Context, method string, params any) (json.RawMessage, error) {
	hold := func(f func(context.Context) error) error {
		hctx, cancel := context.WithTimeoutCause(ctx, u.timeout, errCallTimeout)
		defer cancel()
		return f(hctx)
	}
	if err := hold(func(ctx context.Context) error { return tools.HoldDecoded(ctx, u.maxResponse, 0) }); err != nil {
		return nil, err
	}
	raw, err := u.forward(ctx, method, params)
	if err != nil {
		return nil, err
	}
	if err := hold(func(ctx context.Context) error { return tools.HoldJSON(ctx, raw) }); err != nil {
		return nil, err
	}
	return raw, nil
}

// wireResource is a resource's contents as a server sends them: text or
// blob, by which of them is a string.
type wireResource struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType"`
	Text     *string `json:"text"`
	Blob     *string `json:"blob"`
}

func (w wireResource) contents() (mcp.ResourceContents, error) {
	switch {
	case w.URI == "":
		return nil, errors.New("has no uri")
	case w.Text != nil:
		return mcp.TextResourceContents{URI: w.URI, MIMEType: w.MIMEType, Text: *w.Text}, nil
	case w.Blob != nil:
		return mcp.BlobResourceContents{URI: w.URI, MIMEType: w.MIMEType, Blob: *w.Blob}, nil
	}
	return nil, errors.New("has neither text nor blob")
}

// wireContent is a prompt message's content as a server sends it, of any
// of the types a prompt may hold.
type wireContent struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Data        string          `json:"data"`
	MIMEType    string          `json:"mimeType"`
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Resource    *wireResource   `json:"resource"`
	Annotations json.RawMessage `json:"annotations"`
}

func (w wireContent) content() (mcp.Content, error) {
	// Annotations a client would not understand are dropped, as mcp-go
	// drops the fields it does not know.
	var ann *mcp.Annotations
	if len(w.Annotations) > 0 && json.Unmarshal(w.Annotations, &ann) != nil {
		ann = nil
	}
	a := mcp.Annotated{Annotations: ann}
	switch w.Type {
	case mcp.ContentTypeText:
		return mcp.TextContent{Annotated: a, Type: w.Type, Text: w.Text}, nil
	case mcp.ContentTypeImage:
		return mcp.ImageContent{Annotated: a, Type: w.Type, Data: w.Data, MIMEType: w.MIMEType}, nil
	case mcp.ContentTypeAudio:
		return mcp.AudioContent{Annotated: a, Type: w.Type, Data: w.Data, MIMEType: w.MIMEType}, nil
	case mcp.ContentTypeLink:
		return mcp.ResourceLink{Annotated: a, Type: w.Type, URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description, MIMEType: w.MIMEType}, nil
	case mcp.ContentTypeResource:
		if w.Resource == nil {
			return nil, errors.New("is a resource without one")
		}
		rc, err := w.Resource.contents()
		if err != nil {
			return nil, fmt.Errorf("is a resource that %w", err)
		}
		return mcp.EmbeddedResource{Annotated: a, Type: w.Type, Resource: rc}, nil
	}
	return nil, errors.New("has a content of a type codecell does not know")
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
	if te := (*tools.Error)(nil); errors.As(err, &te) {
		return nil, err // the bytes it gave back while it waited (tools.SlotWait)
	}
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
	var refused *refusedError
	if errors.As(err, &refused) {
		// The answer could not be held as it was read (holdCopies; a
		// resource or prompt read for a request, answerOf): the
		// holder's error says which bound, and what to change.
		return nil, refused.err
	}
	var big *tooLargeError
	if errors.As(err, &big) {
		return nil, &tools.Error{Code: CodeUpstreamTooLarge, Tool: what,
			Message: fmt.Sprintf("upstream %q sent %s, more than its max_response_bytes (%s)", u.name, big.what("an answer"), sizeText(big.max))}
	}
	var rpc *rpcError
	if errors.As(err, &rpc) {
		return nil, &tools.Error{Code: CodeUpstreamError, Tool: what, Message: fmt.Sprintf("upstream %q answered with an error: %s", u.name, u.red.String(rpc.Error())), Err: err}
	}
	return nil, &tools.Error{Code: CodeUpstreamError, Tool: what, Message: fmt.Sprintf("upstream %q: %s", u.name, describe(err, u.red))}
}

// refreshFeatures lists what the server offers besides tools, as its
// capabilities say it does, and tells the listener what changed. A list
// that fails is left empty (one cut keeps its first entries), and logged;
// one larger than max_list_bytes is the error returned, and nothing is
// changed.
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
