package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// Prompts and resources of the MCP servers codecell bridges, served as
// codecell's own so that it can be the one server a host needs. Each is
// named by the category of its server's tools: the prompt "summarize" of
// the server whose tools are everything.* is everything__summarize, and
// its resource "test://static/resource/1" is
// codecell://upstream/everything/test://static/resource/1. A caller
// reaches them when its toolset reaches their category, and what they say
// — a prompt's messages, a resource's text — passes the output filter
// with the caller's session tokens, as any third-party text the model
// reads. Binary contents pass it as an artifact's bytes do.

// UpstreamPrefix begins the URI of every bridged server's resource.
const UpstreamPrefix = "codecell://upstream/"

// Bridge is what the server serves of the MCP servers a tool source
// bridges, besides their tools (tools/upstream.Source).
type Bridge interface {
	Prompts() []upstream.Prompt
	Resources() []upstream.Resource
	ResourceTemplates() []upstream.ResourceTemplate
	GetPrompt(ctx context.Context, category, name string, args map[string]string) (*mcp.GetPromptResult, error)
	ReadResource(ctx context.Context, category, uri string) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, category, uri string) (bool, error)
	SetListener(func(upstream.Event))
}

var _ Bridge = (*upstream.Source)(nil)

// bridged keeps which prompts and resources of the bridge the MCP server
// has registered.
type bridged struct {
	mu        sync.Mutex
	prompts   map[string]string // prompt name → category
	resources map[string]bool   // URI
}

// bridgedPromptName names an upstream prompt: its category, "__", its
// own name (as direct mode names tools).
func bridgedPromptName(category, name string) string { return category + "__" + name }

// bridgedURI names an upstream resource or template by its category.
func bridgedURI(category, uri string) string { return UpstreamPrefix + category + "/" + uri }

// splitBridgedURI is bridgedURI's inverse.
func splitBridgedURI(uri string) (category, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, UpstreamPrefix)
	if !ok {
		return "", "", false
	}
	category, orig, ok = strings.Cut(rest, "/")
	return category, orig, ok && category != "" && orig != ""
}

// fromSource marks a bridged server's text as its own, as direct mode
// does a tool's description.
func fromSource(category, text string) string {
	if text == "" {
		return ""
	}
	return "From the MCP server behind " + category + " (its words, not codecell's): " + text
}

// initBridge serves the bridge's prompts and resources, and keeps them
// current as its servers come and go.
func (s *Server) initBridge() {
	b := s.cfg.Bridge
	if b == nil {
		return
	}
	s.bridged = &bridged{prompts: map[string]string{}, resources: map[string]bool{}}
	// Any resource of a bridged server by its URI, listed or not: the
	// servers' templates are listed apart (bridgeHooks).
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(UpstreamPrefix+"{category}/{+uri}", "Resource of a bridged MCP server",
		mcp.WithTemplateDescription("A resource of the MCP server whose tools form {category}, by the server's own URI."),
	), s.readBridged)
	b.SetListener(func(e upstream.Event) {
		switch {
		case e.Updated != "":
			// Only to the sessions that reach the category, checked
			// again now: a session's toolset is its caller's.
			uri := bridgedURI(e.Category, e.Updated)
			for session, caller := range s.subs.subscribers(uri) {
				if s.callerReaches(caller, e.Category) {
					s.mcp.SendNotificationToSpecificClient(session, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
				}
			}
		default:
			s.syncBridge(e.Prompts, e.Resources)
		}
	})
	s.syncBridge(true, true)
}

// syncBridge brings the MCP server's prompts and resources in line with
// the bridge's; mcp-go tells the clients the lists changed. Of each
// bridged server it serves the first Config.BridgedListed prompts and
// lists as many resources (the others are still read by their URI), and
// a prompt whose name another category's prompt has already is not
// served: each is logged as a warning that names the bound or the other
// prompt.
func (s *Server) syncBridge(prompts, resources bool) {
	b, bs := s.cfg.Bridge, s.bridged
	limit := s.bridgedListed()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if prompts {
		want := map[string]string{}
		var add []server.ServerPrompt
		count, over := map[string]int{}, map[string]int{}
		for _, p := range byCategory(b.Prompts(), func(p upstream.Prompt) string { return p.Category }) {
			if count[p.Category] >= limit {
				over[p.Category]++
				continue
			}
			name := bridgedPromptName(p.Category, p.Prompt.Name)
			if other, ok := want[name]; ok {
				if other != p.Category {
					s.log.Warn("a bridged prompt's name is another category's prompt's: it is not served; rename one of the categories",
						"prompt", name, "category", p.Category, "served_for", other)
				}
				continue
			}
			count[p.Category]++
			want[name] = p.Category
			mp := p.Prompt
			mp.Name = name
			mp.Description = fromSource(p.Category, mp.Description)
			add = append(add, server.ServerPrompt{Prompt: mp, Handler: s.getBridgedPrompt(p.Category, p.Prompt.Name)})
		}
		s.warnOver("prompts", "served", over, limit)
		var del []string
		for name := range bs.prompts {
			if _, ok := want[name]; !ok {
				del = append(del, name)
			}
		}
		if len(del) > 0 {
			s.mcp.DeletePrompts(del...)
		}
		if len(add) > 0 {
			s.mcp.AddPrompts(add...)
		}
		bs.prompts = want
	}
	if resources {
		want := map[string]bool{}
		var add []server.ServerResource
		count, over := map[string]int{}, map[string]int{}
		for _, r := range byCategory(b.Resources(), func(r upstream.Resource) string { return r.Category }) {
			if count[r.Category] >= limit {
				over[r.Category]++
				continue
			}
			mr := r.Resource
			mr.URI = bridgedURI(r.Category, r.Resource.URI)
			if want[mr.URI] {
				continue
			}
			count[r.Category]++
			if mr.Name == "" {
				mr.Name = mr.URI // lists are paged by URI, and a resource needs a name
			}
			mr.Description = fromSource(r.Category, mr.Description)
			want[mr.URI] = true
			add = append(add, server.ServerResource{Resource: mr, Handler: s.readBridged})
		}
		s.warnOver("resources", "listed (the others are read by their URI, "+UpstreamPrefix+"{category}/{uri})", over, limit)
		var del []string
		for uri := range bs.resources {
			if !want[uri] {
				del = append(del, uri)
			}
		}
		if len(del) > 0 {
			s.mcp.DeleteResources(del...)
		}
		if len(add) > 0 {
			s.mcp.AddResources(add...)
		}
		bs.resources = want
		// The templates are listed from the bridge at each request.
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
	}
}

// DefaultBridgedListed is Config.BridgedListed's default.
const DefaultBridgedListed = 256

// bridgedListed is how many prompts, resources and templates of one
// bridged server the lists hold.
func (s *Server) bridgedListed() int {
	if s.cfg.BridgedListed > 0 {
		return s.cfg.BridgedListed
	}
	return DefaultBridgedListed
}

// warnOver logs, for each category in over, that its server has more
// kind than the bound: how many were left out, and the setting.
func (s *Server) warnOver(kind, done string, over map[string]int, limit int) {
	for _, c := range slices.Sorted(maps.Keys(over)) {
		s.log.Warn(fmt.Sprintf("a bridged server has more %s than the %d of each that codecell serves (limits.bridged_listed): the first are %s", kind, limit, done),
			"category", c, "left_out", over[c], "limit", limit)
	}
}

// byCategory sorts a bridge's entries by category, keeping each
// server's own order: which of two colliding names is served, and which
// entries are within the bound, does not depend on the bridge's order of
// its servers.
func byCategory[T any](list []T, category func(T) string) []T {
	slices.SortStableFunc(list, func(a, b T) int { return strings.Compare(category(a), category(b)) })
	return list
}

// reaches reports whether the caller of ctx may reach category's bridged
// prompts and resources: when its toolset reaches the category.
func (s *Server) reaches(ctx context.Context, category string) bool {
	return s.callerReaches(s.caller(ctx), category)
}

// callerReaches is reaches for caller.
func (s *Server) callerReaches(caller tools.Caller, category string) bool {
	if !s.eng.HasAccessRules() {
		return true
	}
	return slices.Contains(s.reg.View(caller).Categories(), category)
}

// followsSubscription is the subscriptions' follows: a bridged server's
// resource is followed for a caller that reaches its category; any
// other URI for anyone (a tool tree's resource is read through the
// caller's view).
func (s *Server) followsSubscription(ctx context.Context, uri string) (tools.Caller, bool) {
	caller := s.caller(ctx)
	if c, _, ok := splitBridgedURI(uri); ok && !s.callerReaches(caller, c) {
		return caller, false
	}
	return caller, true
}

// filterBridgedPrompts is the prompt filter: a caller lists and gets the
// bridged prompts of the categories it reaches.
func (s *Server) filterBridgedPrompts(ctx context.Context, list []mcp.Prompt) []mcp.Prompt {
	if s.bridged == nil || !s.eng.HasAccessRules() {
		return list
	}
	s.bridged.mu.Lock()
	cats := make(map[string]string, len(s.bridged.prompts))
	for k, v := range s.bridged.prompts {
		cats[k] = v
	}
	s.bridged.mu.Unlock()
	return slices.DeleteFunc(list, func(p mcp.Prompt) bool {
		c, ok := cats[p.Name]
		return ok && !s.reaches(ctx, c)
	})
}

// bridgeHooks list the bridged servers' templates and keep the resources
// of the categories a caller does not reach out of its lists.
func (s *Server) bridgeHooks(h *server.Hooks) {
	h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, r *mcp.ListResourcesResult) {
		if s.bridged == nil || !s.eng.HasAccessRules() {
			return
		}
		r.Resources = slices.DeleteFunc(r.Resources, func(res mcp.Resource) bool {
			c, _, ok := splitBridgedURI(res.URI)
			return ok && !s.reaches(ctx, c)
		})
	})
	h.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, r *mcp.ListResourceTemplatesResult) {
		if s.bridged == nil {
			return
		}
		count, limit := map[string]int{}, s.bridgedListed()
		for _, t := range byCategory(s.cfg.Bridge.ResourceTemplates(), func(t upstream.ResourceTemplate) string { return t.Category }) {
			if t.Template.URITemplate == nil || count[t.Category] >= limit || !s.reaches(ctx, t.Category) {
				continue
			}
			count[t.Category]++
			mt := mcp.NewResourceTemplate(bridgedURI(t.Category, t.Template.URITemplate.Raw()), t.Template.Name,
				mcp.WithTemplateDescription(fromSource(t.Category, t.Template.Description)),
				mcp.WithTemplateMIMEType(t.Template.MIMEType))
			mt.Title = t.Template.Title
			r.ResourceTemplates = append(r.ResourceTemplates, mt)
		}
		slices.SortFunc(r.ResourceTemplates, func(a, b mcp.ResourceTemplate) int {
			return strings.Compare(templateRaw(a), templateRaw(b))
		})
	})
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		c, orig, ok := splitBridgedURI(req.Params.URI)
		if !ok || s.bridged == nil || !s.reaches(ctx, c) {
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bridgeTimeout)
		defer cancel()
		if _, err := s.cfg.Bridge.Subscribe(sctx, c, orig); err != nil {
			s.log.Debug("subscribe to an upstream resource", "category", c, "err", err)
		}
	})
}

func templateRaw(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

// bridgeTimeout bounds a subscription's forwarding, off the request.
const bridgeTimeout = 30 * time.Second

// errBridgedNotFound is a bridged name or URI the caller cannot reach.
var errBridgedNotFound = errors.New("not found")

// readBridged reads a bridged server's resource, its text filtered.
func (s *Server) readBridged(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	category, orig, ok := splitBridgedURI(uri)
	if !ok || !s.reaches(ctx, category) {
		return nil, fmt.Errorf("%w: resource %s", errResourceNotFound, uri)
	}
	// Held until the answer is written: mcp-go encodes a blob's base64
	// after the handler returns (attack15).
	ctx, release := s.holdBridged(ctx, "resources/read of upstream "+category)
	defer untilAnswered(ctx, release)()
	res, err := s.cfg.Bridge.ReadResource(ctx, category, orig)
	if err != nil {
		if errors.Is(err, upstream.ErrNoSuchServer) {
			return nil, fmt.Errorf("%w: resource %s", errResourceNotFound, uri)
		}
		return nil, err
	}
	opts, done, err := s.bridgeFilter(ctx, "the findings of resources/read of upstream "+category)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make([]mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		switch v := c.(type) {
		case mcp.TextResourceContents:
			v.URI = bridgedURI(category, v.URI)
			v.Text = bridgedText(s.filter, v.Text, opts)
			out = append(out, v)
		case mcp.BlobResourceContents:
			v.URI = bridgedURI(category, v.URI)
			v.Blob = bridgedBlob(s.filter, v.Blob, opts)
			out = append(out, v)
		}
	}
	return out, nil
}

// bridgedBlob is a bridged server's binary contents (base64) as the
// caller reads them: through the filter as an artifact's bytes
// (filter.ApplyBytes), each sensitive value in their printable runs
// masked in place. Contents that are not base64 pass as they are: no
// client decodes them into anything. What its findings cost is held with
// opts' hold.
func bridgedBlob(f *filter.Filter, blob string, opts filter.Options) string {
	data, err := base64.StdEncoding.DecodeString(blob)
	if err != nil || len(data) == 0 {
		return blob
	}
	out := f.ApplyBytes(data, filter.Options{Findings: opts.Findings})
	if out.Report.Masked == 0 && !out.Text {
		return blob
	}
	return base64.StdEncoding.EncodeToString(out.Data)
}

// getBridgedPrompt gets a bridged server's prompt, its texts filtered.
func (s *Server) getBridgedPrompt(category, name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if !s.reaches(ctx, category) {
			return nil, fmt.Errorf("prompt %s %w", req.Params.Name, errBridgedNotFound)
		}
		ctx, release := s.holdBridged(ctx, "prompts/get of upstream "+category)
		defer untilAnswered(ctx, release)()
		res, err := s.cfg.Bridge.GetPrompt(ctx, category, name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		opts, done, err := s.bridgeFilter(ctx, "the findings of prompts/get of upstream "+category)
		if err != nil {
			return nil, err
		}
		defer done()
		res.Description = fromSource(category, res.Description)
		for i, m := range res.Messages {
			switch c := m.Content.(type) {
			case mcp.TextContent:
				c.Text = bridgedText(s.filter, c.Text, opts)
				res.Messages[i].Content = c
			case mcp.ImageContent:
				c.Data = bridgedBlob(s.filter, c.Data, opts)
				res.Messages[i].Content = c
			case mcp.AudioContent:
				c.Data = bridgedBlob(s.filter, c.Data, opts)
				res.Messages[i].Content = c
			case mcp.EmbeddedResource:
				if t, ok := c.Resource.(mcp.TextResourceContents); ok {
					t.URI = bridgedURI(category, t.URI)
					t.Text = bridgedText(s.filter, t.Text, opts)
					c.Resource = t
				} else if b, ok := c.Resource.(mcp.BlobResourceContents); ok {
					b.URI = bridgedURI(category, b.URI)
					b.Blob = bridgedBlob(s.filter, b.Blob, opts)
					c.Resource = b
				}
				res.Messages[i].Content = c
			}
		}
		return res, nil
	}
}

// holdBridged holds, for the caller of ctx, what a bridged server's
// answer decodes into, of the results in flight (issue 19, attack10 E3):
// the bridge holds it, through ctx, before it decodes the answer; the
// hold lasts until the request's answer is written (release, given to
// untilAnswered): a blob passes whole, and given back when the handler
// returned, 32 answers of an 8 MB blob waited for a client that did not
// read them outside every hold (attack17 M1).
func (s *Server) holdBridged(ctx context.Context, what string) (context.Context, func()) {
	return s.eng.HoldOutsideRun(ctx, s.caller(ctx).Principal, what)
}

// bridgeFilter is the filter's options for what a bridged server says to
// the caller of ctx: its session's tokens, so that a value shows as the
// same token as in its results. done saves the tokens made.
//
// What filtering costs by its findings is held apart from the answer,
// of the caller's results in flight, until the answer is written, as a
// run's output is (engine/filterhold.go): a blob of text is filtered
// whole, and 3 reads of an 8 MB blob of distinct addresses grew the
// server by 786 MiB past their answers' holds (attack20 N1).
func (s *Server) bridgeFilter(ctx context.Context, what string) (filter.Options, func(), error) {
	caller := s.caller(ctx)
	sess, err := s.eng.Session(caller)
	if err != nil {
		return filter.Options{}, nil, err
	}
	fctx, release := s.eng.HoldOutsideRun(ctx, caller.Principal, what)
	released := untilAnswered(ctx, release)
	held := &findingsHeld{ctx: fctx}
	opts := filter.Options{Vault: sess.Vault(), Budget: s.maxBudget, Findings: held.hold}
	return opts, func() { s.eng.Flush(ctx, sess); released() }, nil
}

// findingsHeld holds the findings of one answer's filterings together:
// each filtering asks for what its own findings cost so far, and holds
// it beside what the ones before it held.
type findingsHeld struct {
	ctx context.Context

	mu     sync.Mutex
	before int64 // the filterings' before this one
	this   int64 // this filtering's, so far
}

// hold is the filter.Options.Findings of every filtering of the answer.
func (f *findingsHeld) hold(n int64) error {
	f.mu.Lock()
	if n < f.this {
		// A new filtering asks from its start again.
		f.before += f.this
	}
	f.this = n
	total := f.before + n
	f.mu.Unlock()
	return tools.HoldDecoded(f.ctx, total, 0)
}

// bridgedText is a bridged server's text as the caller reads it: through
// the filter, within opts' budget.
func bridgedText(f *filter.Filter, text string, opts filter.Options) string {
	if text == "" {
		return ""
	}
	return f.ApplyText(text, opts).Text
}
