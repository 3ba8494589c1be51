package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestInstructionsListTheCategories holds that the instructions a client
// receives, whether it initializes (protocol versions before 2026-07-28)
// or discovers, end with the catalogue's categories as they are when it
// connects, so that an agent can go to search_tools and execute_code
// without reading the manifest first.
func TestInstructionsListTheCategories(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{})
	view := srv.Registry().View(tools.Caller{Principal: "local"})
	instructions := func(t *testing.T, srv *mcpserver.Server, version string) string {
		t.Helper()
		c := transports[0].connect(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = version
		init.Params.ClientInfo = mcp.Implementation{Name: "codecell-test", Version: "1"}
		res, err := c.Initialize(ctx, init)
		if err != nil {
			t.Fatal(err)
		}
		return res.Instructions
	}
	for _, version := range []string{mcp.LATEST_PROTOCOL_VERSION, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			got := instructions(t, srv, version)
			for _, want := range []string{
				"codecell runs your JavaScript or TypeScript",
				`search_tools {query, category, detail: "signature"}`,
				"\nCategories (read_tools \"/manifest.json\" lists them as they are now):\n",
				fmt.Sprintf("\n- github: %d tools: Repos, issues, pull requests, commits\n", len(view.ListCategory("github"))),
				"\n- util: 3 tools: Small utilities: echo values, read the clock, wait.",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("instructions lack %q:\n%s", want, got)
				}
			}
			catalogue := map[string]bool{} // runtime namespaces are no categories
			for _, t := range view.List() {
				catalogue[t.Category()] = catalogue[t.Category()] || !t.Runtime
			}
			if n := strings.Count(got, "\n- "); n != len(slices.DeleteFunc(view.Categories(), func(c string) bool { return !catalogue[c] })) {
				t.Errorf("%d categories listed:\n%s", n, got)
			}
			for l := range strings.SplitSeq(got[strings.Index(got, "\n- ")+1:], "\n") {
				if _, desc, _ := strings.Cut(l, ": "); len(desc) > 80+len("…") {
					t.Errorf("a category's line is %d bytes long: %s", len(desc), l)
				}
			}
		})
	}

	t.Run("a category added later is in the next client's instructions", func(t *testing.T) {
		err := srv.Registry().Register(tools.Tool{Name: "later.tool", Summary: "Added after the server started.",
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
		if err != nil {
			t.Fatal(err)
		}
		if got := instructions(t, srv, mcp.LATEST_PROTOCOL_VERSION); !strings.Contains(got, "\n- later: 1 tool") {
			t.Errorf("instructions:\n%s", got)
		}
	})
	t.Run("a long summary is cut", func(t *testing.T) {
		reg := tools.NewRegistry()
		err := reg.Register(tools.Tool{Name: "zoo.count", Summary: "Count the animals.",
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.DescribeCategory("zoo", "Animals of the zoo, with a summary much longer than a line of the instructions should be, so that it is cut."); err != nil {
			t.Fatal(err)
		}
		small, err := mcpserver.New(forTests(t, mcpserver.Config{}), reg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { small.Close() })
		if got := instructions(t, small, mcp.LATEST_PROTOCOL_VERSION); !strings.HasSuffix(got, "\n- zoo: 1 tool: Animals of the zoo, with a summary much longer than a line of the…") {
			t.Errorf("instructions:\n%s", got)
		}
	})
}
