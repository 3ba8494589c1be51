package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools"
)

// instructionHooks makes the instructions a client receives, at
// initialize and at server/discover, end with the catalogue's categories
// as that client's principal sees them: an agent then knows where to look
// before its first call, and goes from the instructions to one
// search_tools and one execute_code.
func (s *Server) instructionHooks(h *server.Hooks) {
	// initialize, or server/discover on the stateless protocol, waits
	// for the sources still loading when the configuration asks for it.
	h.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest) {
		s.waitLoads(ctx)
	})
	h.AddBeforeDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest) {
		s.waitLoads(ctx)
	})
	h.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		res.Instructions = s.instructionsFor(s.caller(ctx))
	})
	h.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Instructions = s.instructionsFor(s.caller(ctx))
	})
}

// waitLoads holds a client's initialize (or server/discover) while tool
// sources load (tools.Registry.BeginLoad), at most Config.LoadWait, so
// that a client that asked for it sees every source ready in its first
// answers.
func (s *Server) waitLoads(ctx context.Context) {
	if s.cfg.LoadWait <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LoadWait)
	defer cancel()
	stop := context.AfterFunc(s.eng.Stopping(), cancel)
	defer stop()
	if err := s.reg.WaitLoads(ctx); err != nil {
		s.log.Info("initialize answered while tool sources still load; they are listed as loading", "waited", s.cfg.LoadWait)
	}
}

// maxCategoryLine bounds a category's line in the instructions, which
// every conversation carries; the manifest has the whole summary.
const maxCategoryLine = 80

// directInstructions are the instructions of a server that lists only the
// catalogue's tools (--expose direct).
const directInstructions = "codecell serves its catalogue's tools as ordinary MCP tools, named category__tool. Their results are filtered: sensitive values come as tokens such as ⟦email:…⟧, which other tools of this server accept in their place, and a long result is cut to a budget."

// instructionsFor is the server's instructions followed by c's manifest,
// one category a line, cut to maxCategoryLine bytes. The categories
// are those of the moment: upstream servers still connecting say so, and
// the instructions say where to read the current list. Without a
// manifest the instructions stand alone.
func (s *Server) instructionsFor(c tools.Caller) string {
	if s.cfg.Expose == ExposeDirect {
		// No code-mode tools are listed: say what the tools are instead.
		return directInstructions
	}
	base := strings.TrimRight(instructions, "\n")
	b, err := s.vfs.For(c).ReadFile("manifest.json")
	if err != nil {
		s.log.Warn("instructions without the manifest", "err", err)
		return base
	}
	var m struct {
		Categories map[string]string `json:"categories"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Categories) == 0 {
		return base
	}
	var out strings.Builder
	out.WriteString(base)
	out.WriteString("\nCategories (read_tools \"/manifest.json\" lists them as they are now):\n")
	for _, name := range slices.Sorted(maps.Keys(m.Categories)) {
		line := m.Categories[name]
		if short := cutAtWord(line, maxCategoryLine); short != line {
			line = short + "…"
		}
		fmt.Fprintf(&out, "- %s: %s\n", name, line)
	}
	return strings.TrimRight(out.String(), "\n")
}
