package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// client26 speaks protocol 2026-07-28 over Streamable HTTP request by
// request, as a client of the tasks extension does: _meta with the
// version, the client and its capabilities, and the standard headers.
type client26 struct {
	url, token string
	caps       map[string]any
	ids        atomic.Int64
}

type reply26 struct {
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

func (c *client26) send(t *testing.T, method, name string, params map[string]any) reply26 {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ids.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	req.Header.Set(mcp.HeaderName, name)
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	var data []byte
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	} else {
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		data = b.Bytes()
	}
	var r reply26
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: HTTP %d %q: %v", method, res.StatusCode, data, err)
	}
	return r
}

type view26 struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        *struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
}

func (c *client26) get(t *testing.T, id string) (view26, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	r := c.send(t, "tasks/get", id, map[string]any{"taskId": id})
	var v view26
	json.Unmarshal(r.Result, &v)
	return v, r.Error
}

// waitFor polls task id until it is in state want with a question named
// key (when not ""), and returns it.
func (c *client26) waitFor(t *testing.T, id, want, key string) view26 {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		v, rerr := c.get(t, id)
		if rerr != nil {
			t.Fatalf("tasks/get: %+v", rerr)
		}
		if _, asked := v.InputRequests[key]; v.Status == want && (key == "" || asked) {
			return v
		}
		if v.Status == "completed" && want != "completed" || v.Status == "cancelled" && want != "cancelled" || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s %v), want %s %s", id, v.Status, v.StatusMessage, v.InputRequests, want, key)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTasks2026Binary drives the built binary over Streamable HTTP on
// protocol 2026-07-28 as a client of the tasks extension: a program that
// reads a file through the reference filesystem server, asks the
// client's model (llm.call) and moves the file, a move [approval] guards,
// becomes a task; tasks/get shows each question, tasks/update answers it,
// and the program goes on — the move is made once; another principal's
// tasks/get finds nothing; a task waiting on approval.request is
// cancelled with tasks/cancel.
func TestTasks2026Binary(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	const alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": node, "args": []string{serverScript(dir, "server-filesystem"), work}},
	}})
	mcpConfig := filepath.Join(t.TempDir(), "mcp.json")
	conf := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(`
[approval]
required_for = ["fs.move_file"]

[[auth.tokens]]
principal = "alice"
token = "`+alice+`"

[[auth.tokens]]
principal = "bob"
token = "`+bob+`"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveUpstreams(t, nil, "--mcp-config", mcpConfig, "--config", conf)
	caps := map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	a := &client26{url: s.base + "/mcp", token: alice, caps: caps}
	bo := &client26{url: s.base + "/mcp", token: bob, caps: caps}
	ready := regexp.MustCompile(`"fs":"\d+ tools[^,]`) // connected, not listed from its last start
	eventuallyTrue(t, "the filesystem server ready", func() bool {
		r := a.send(t, "tools/call", "read_tools", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": "/manifest.json"}})
		var res struct{ Content []struct{ Text string } }
		json.Unmarshal(r.Result, &res)
		return len(res.Content) > 0 && ready.MatchString(res.Content[0].Text)
	})
	execute := func(code string) view26 {
		t.Helper()
		r := a.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code, "purpose": "archive the report"}})
		var v view26
		if r.Error != nil || json.Unmarshal(r.Result, &v) != nil || v.ResultType != "task" || v.TaskID == "" {
			t.Fatalf("want a CreateTaskResult: %s %+v", r.Result, r.Error)
		}
		return v
	}
	update := func(id string, answers map[string]any) {
		t.Helper()
		if r := a.send(t, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": answers}); r.Error != nil {
			t.Fatalf("tasks/update: %+v", r.Error)
		}
	}

	t.Run("read, ask, guarded move", func(t *testing.T) {
		src, dst := filepath.Join(work, "report.txt"), filepath.Join(work, "archived.txt")
		if err := os.WriteFile(src, []byte("quarterly numbers: 42"), 0o644); err != nil {
			t.Fatal(err)
		}
		task := execute(`
			const text = await fs.read_text_file({path: ` + jsString(src) + `});
			const a = await llm.call("Summarise: " + JSON.stringify(text).slice(0, 200));
			await fs.move_file({source: ` + jsString(src) + `, destination: ` + jsString(dst) + `});
			return {a: a.text};`)
		v := a.waitFor(t, task.TaskID, "input_required", "sample.1")
		if !strings.Contains(string(v.InputRequests["sample.1"]), "quarterly numbers: 42") {
			t.Errorf("the sampling request should hold what the program read: %s", v.InputRequests["sample.1"])
		}
		if _, rerr := bo.get(t, task.TaskID); rerr == nil || rerr.Code != mcp.INVALID_PARAMS {
			t.Errorf("bob's tasks/get of alice's task: %+v, want -32602", rerr)
		}
		update(task.TaskID, map[string]any{"sample.1": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "numbers are up"}, "model": "host-model", "stopReason": "endTurn"}})
		v = a.waitFor(t, task.TaskID, "input_required", "elicit.2")
		if !strings.Contains(string(v.InputRequests["elicit.2"]), "archive the report") {
			t.Errorf("the approval should show the run's purpose: %s", v.InputRequests["elicit.2"])
		}
		update(task.TaskID, map[string]any{"elicit.2": map[string]any{"action": "accept", "content": map[string]any{}}})
		v = a.waitFor(t, task.TaskID, "completed", "")
		if v.Result == nil || v.Result.IsError || !strings.Contains(string(v.Result.StructuredContent), `"a":"numbers are up"`) {
			t.Fatalf("completed task's result: %+v", v.Result)
		}
		if _, err := os.Stat(src); err == nil {
			t.Errorf("the file was not moved")
		}
		if _, err := os.Stat(dst); err != nil {
			t.Errorf("the file was not moved: %v", err)
		}
	})

	t.Run("a plan's commit asks through the task", func(t *testing.T) {
		src, dst := filepath.Join(work, "plan.txt"), filepath.Join(work, "planned.txt")
		if err := os.WriteFile(src, []byte("to be planned"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := a.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": map[string]any{"mode": "plan",
			"code": `await fs.move_file({source: ` + jsString(src) + `, destination: ` + jsString(dst) + `}); return "planned";`}})
		var dry struct {
			ResultType        string          `json:"resultType"`
			TaskID            string          `json:"taskId"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if json.Unmarshal(r.Result, &dry) != nil {
			t.Fatalf("dry run: %s %+v", r.Result, r.Error)
		}
		if dry.ResultType == "task" {
			// Over a second on a loaded machine: the dry run became a task.
			dry.StructuredContent = a.waitFor(t, dry.TaskID, "completed", "").Result.StructuredContent
		}
		var planned struct {
			Plan struct {
				ID string `json:"plan_id"`
			} `json:"plan"`
		}
		if json.Unmarshal(dry.StructuredContent, &planned) != nil || planned.Plan.ID == "" {
			t.Fatalf("the dry run should make a plan: %s %+v", r.Result, r.Error)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Fatalf("the dry run moved the file")
		}
		r = a.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": map[string]any{"plan_id": planned.Plan.ID}})
		var task view26
		if json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
			t.Fatalf("the commit of a guarded write should become a task: %s %+v", r.Result, r.Error)
		}
		a.waitFor(t, task.TaskID, "input_required", "elicit.1")
		update(task.TaskID, map[string]any{"elicit.1": map[string]any{"action": "accept", "content": map[string]any{}}})
		v := a.waitFor(t, task.TaskID, "completed", "")
		if v.Result == nil || v.Result.IsError {
			t.Fatalf("the commit: %+v", v.Result)
		}
		if _, err := os.Stat(dst); err != nil {
			t.Errorf("the commit did not move the file: %v", err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		task := execute(`await approval.request("Wait for me"); await fs.write_file({path: ` + jsString(filepath.Join(work, "late.txt")) + `, content: "x"}); return 1;`)
		a.waitFor(t, task.TaskID, "input_required", "elicit.1")
		if r := a.send(t, "tasks/cancel", task.TaskID, map[string]any{"taskId": task.TaskID}); r.Error != nil {
			t.Fatalf("tasks/cancel: %+v", r.Error)
		}
		a.waitFor(t, task.TaskID, "cancelled", "")
		if _, err := os.Stat(filepath.Join(work, "late.txt")); err == nil {
			t.Errorf("the cancelled program went on")
		}
	})
}
