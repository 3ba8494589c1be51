package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// searchAnswer is what search_tools answers at the summary level.
type searchAnswer struct {
	Hits []struct {
		Name       string  `json:"name"`
		Match      float64 `json:"match"`
		Confidence string  `json:"confidence"`
	} `json:"hits"`
	Scale string `json:"scale"`
	Next  string `json:"next"`
}

func searchTools(t *testing.T, c *client.Client, query string) searchAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_tools"
	req.Params.Arguments = map[string]any{"query": query, "limit": 5}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q: %v %+v", query, err, res)
	}
	var a searchAnswer
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &a); err != nil {
		t.Fatalf("search_tools %q: %v", query, err)
	}
	return a
}

func (a searchAnswer) rank(name string) int {
	for i, h := range a.Hits {
		if h.Name == name {
			return i
		}
	}
	return -1
}

// TestSearchConfidence: through the built binary, a task the catalogue
// answers gets a high hit with the scale to read it by, and one it does
// not answer says so, names the closest tools and where to browse.
func TestSearchConfidence(t *testing.T) {
	t.Parallel()
	c, _ := openAPIServer(t, newLocalAPI(t), nil)
	good := searchTools(t, c, "list the issues of a repository")
	if len(good.Hits) == 0 || good.Hits[0].Name != "gh.issues_list_for_repo" || good.Hits[0].Confidence != "high" || good.Scale == "" ||
		strings.Contains(good.Next, "No confident match") {
		t.Errorf("a task the catalogue answers: %+v", good)
	}
	bad := searchTools(t, c, "book a flight to paris for friday")
	for _, h := range bad.Hits {
		if h.Confidence != "low" {
			t.Errorf("a task the catalogue does not answer: %s is %s", h.Name, h.Confidence)
		}
	}
	if !strings.HasPrefix(bad.Next, "No confident match; closest: "+bad.Hits[0].Name) || !strings.Contains(bad.Next, "/index.json with read_tools") {
		t.Errorf("a task the catalogue does not answer: next %q", bad.Next)
	}
}

// TestSearchLearnsFromUse: through the built binary, a search followed in
// the same session by a run that calls a tool ranks that tool first for
// the same words later, after a restart too (the store keeps it); the
// store keeps the words and the tool name, not the run's arguments;
// memory reset-learning forgets it; search.learn = false learns nothing.
func TestSearchLearnsFromUse(t *testing.T) {
	t.Parallel()
	api := newLocalAPI(t)
	data := t.TempDir()
	env := []string{"CODECELL_SERVER_DATA_DIR=" + data}
	const query = "what is on fire in octo/hello"
	const tool = "gh.issues_list_for_repo"
	run := "await gh.issues_list_for_repo({owner: 'octo', repo: 'hello', labels: 'secret-label-xyz'}); return 1"

	c, _ := openAPIServer(t, api, env)
	before := searchTools(t, c, query)
	if before.rank(tool) == 0 {
		t.Fatalf("%s is already first for %q: the test needs words that do not find it: %+v", tool, query, before)
	}
	if isErr, _, txt := callExecute(t, c, map[string]any{"code": run}); isErr {
		t.Fatalf("run: %s", txt)
	}
	after := searchTools(t, c, query)
	if after.rank(tool) != 0 {
		t.Errorf("after a run that called %s, %q ranks it %d: %+v", tool, query, after.rank(tool)+1, after)
	}
	c.Close()

	// A restart on the same store remembers it.
	c2, _ := openAPIServer(t, api, env)
	if r := searchTools(t, c2, query).rank(tool); r != 0 {
		t.Errorf("after a restart, %q ranks %s %d", query, tool, r+1)
	}
	c2.Close()
	// The store holds words and the tool's name, not the run's arguments.
	out, err := exec.Command("sqlite3", data+"/codecell.db", "SELECT term, tool FROM search_links").CombinedOutput()
	if err == nil && (strings.Contains(string(out), "secret-label-xyz") || !strings.Contains(string(out), tool)) {
		t.Errorf("search_links:\n%s", out)
	}

	// memory reset-learning forgets it.
	cmd := exec.Command(binary, "memory", "reset-learning")
	cmd.Env = append(cmd.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "forgot ") {
		t.Fatalf("memory reset-learning: %v\n%s", err, out)
	}
	c3, _ := openAPIServer(t, api, env)
	if r := searchTools(t, c3, query).rank(tool); r == 0 {
		t.Errorf("after reset-learning, %q still ranks %s first", query, tool)
	}
	c3.Close()

	// With learning off, the same steps teach nothing.
	off := []string{"CODECELL_SERVER_DATA_DIR=" + t.TempDir(), "CODECELL_SEARCH_LEARN=false"}
	c4, _ := openAPIServer(t, api, off)
	searchTools(t, c4, query)
	if isErr, _, txt := callExecute(t, c4, map[string]any{"code": run}); isErr {
		t.Fatalf("run: %s", txt)
	}
	if r := searchTools(t, c4, query).rank(tool); r == 0 {
		t.Errorf("with search.learn = false, %q ranks %s first after a run", query, tool)
	}
}
