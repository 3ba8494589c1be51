package mcpserver

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/vfs"
)

// addToolTree serves the tool tree as resources: the manifest as a
// resource, the deeper levels as templates whose {category} and {tool}
// complete from the catalogue.
func (s *Server) addToolTree() {
	s.mcp.AddResource(mcp.NewResource(ResourcePrefix+vfs.ManifestFile, "Tool catalogue manifest",
		mcp.WithResourceDescription("Level 0: the categories of the tool catalogue, their tool counts, and how to go deeper."),
		mcp.WithMIMEType("application/json"),
	), s.readToolResource)
	for _, t := range []struct {
		uri, name, desc, mime string
	}{
		{ResourcePrefix + "{category}/index.json", "Category index", "Level 1: a category's tools with one-line summaries.", "application/json"},
		{ResourcePrefix + "{category}/{tool}.d.ts", "Tool signature", "Level 2: a tool's TypeScript declaration, the call shape for execute_code.", "application/typescript"},
		{ResourcePrefix + "{category}/{tool}.md", "Tool documentation", "Level 3: a tool's full documentation: schemas, examples, errors.", "text/markdown"},
	} {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(t.uri, t.name,
			mcp.WithTemplateDescription(t.desc),
			mcp.WithTemplateMIMEType(t.mime),
		), s.readToolResource)
	}
}

// readToolResource reads any codecell://tools/ URI from the tool tree.
func (s *Server) readToolResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	p, ok := strings.CutPrefix(uri, ResourcePrefix)
	if !ok {
		return nil, fmt.Errorf("resource %q is not in the tool tree (%s...)", uri, ResourcePrefix)
	}
	node, err := s.vfs.For(s.caller(ctx)).Read(p)
	var nf *vfs.NotFoundError
	switch {
	case errors.As(err, &nf):
		return nil, fmt.Errorf("%w: %s", errResourceNotFound, nf.Error())
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errResourceNotFound, err)
	case node.Dir:
		return nil, fmt.Errorf("%w: %s is a directory; read_tools lists it", errResourceNotFound, uri)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{
		URI:      uri,
		MIMEType: mimeOf(p),
		Text:     string(node.Content),
	}}, nil
}

var errResourceNotFound = errors.New("resource not found")

func mimeOf(p string) string {
	switch path.Ext(p) {
	case ".json":
		return "application/json"
	case ".ts":
		return "application/typescript"
	case ".md":
		return "text/markdown"
	}
	return "text/plain"
}

// completions completes {category} and {tool} in the tool-tree templates,
// from the catalogue as the caller sees it.
type completions struct{ s *Server }

var _ server.ResourceCompletionProvider = completions{}

func (c completions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	view := c.s.reg.View(c.s.caller(ctx))
	var values []string
	switch arg.Name {
	case "category":
		values = view.Categories()
	case "tool":
		cat := cc.Arguments["category"]
		for _, t := range view.List() {
			if cat == "" || t.Category() == cat {
				values = append(values, t.ShortName())
			}
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	total := len(out)
	const max = 100 // the spec's cap per response
	if len(out) > max {
		out = out[:max]
	}
	return &mcp.Completion{Values: out, Total: total, HasMore: total > len(out)}, nil
}

//go:embed code_mode_prompt.md
var codeModePrompt string

// addPrompt adds the code-mode prompt, which teaches a model the workflow.
func (s *Server) addPrompt() {
	s.mcp.AddPrompt(mcp.NewPrompt("code-mode",
		mcp.WithPromptDescription("How to use codecell: discover tools progressively, then call them from one program."),
	), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("Working with codecell in code mode",
			[]mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(codeModePrompt))},
		), nil
	})
}
