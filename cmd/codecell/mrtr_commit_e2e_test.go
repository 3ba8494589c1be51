package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMultiRoundTripBinaryInner drives the built binary on protocol
// 2026-07-28 with mcp-go's client, which answers input_required: a plan's
// commit whose guarded move asks the user moves the file once; a skill
// that asks the host's model first, then writes a file, writes it once;
// one that writes before asking is refused, and its write is made once.
func TestMultiRoundTripBinaryInner(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": node, "args": []string{serverScript(dir, "server-filesystem"), work}},
	}})
	mcpConfig := filepath.Join(t.TempDir(), "mcp.json")
	conf := filepath.Join(t.TempDir(), "codecell.toml")
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[approval]\nrequired_for = [\"fs.move_file\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveUpstreams(t, nil, "--mcp-config", mcpConfig, "--config", conf)
	var sampled, elicited atomic.Int32
	h := mrtrHost{
		sample: func(req mcp.CreateMessageRequest) *mcp.CreateMessageResult {
			sampled.Add(1)
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("blue")}, Model: "host-model", StopReason: "endTurn"}
		},
		elicit: func(req mcp.ElicitationRequest) *mcp.ElicitationResult {
			elicited.Add(1)
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{}}}
		},
	}
	tr, err := transport.NewStreamableHTTP(s.base+"/mcp", transport.WithHTTPBasicClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithSamplingHandler(h), client.WithElicitationHandler(h))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
	}
	ready := regexp.MustCompile(`"fs":"\d+ tools[^,]`)
	eventuallyTrue(t, "the filesystem server ready", func() bool {
		return ready.MatchString(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"}))
	})
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(work, name))
		return err == nil
	}

	t.Run("a plan's commit asks", func(t *testing.T) {
		src, dst := filepath.Join(work, "draft.txt"), filepath.Join(work, "final.txt")
		if err := os.WriteFile(src, []byte("draft"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, rec, txt := callExecute(t, c, map[string]any{"mode": "plan", "code": `await fs.move_file({source: ` + jsString(src) + `, destination: ` + jsString(dst) + `}); return 1;`})
		if rec.Plan == nil || rec.Plan.ID == "" {
			t.Fatalf("dry run: %s", txt)
		}
		before := elicited.Load()
		_, rec, txt = callExecute(t, c, map[string]any{"plan_id": rec.Plan.ID})
		if rec.Status != "ok" {
			t.Fatalf("commit: %s", txt)
		}
		if n := elicited.Load() - before; n != 1 || exists("draft.txt") || !exists("final.txt") {
			t.Errorf("asked %d times (want 1); the file should be moved once", n)
		}
	})

	t.Run("skills", func(t *testing.T) {
		first, late := filepath.Join(work, "first.txt"), filepath.Join(work, "late.txt")
		_, rec, txt := callExecute(t, c, map[string]any{"code": `
			await skills.save({name: "ask_first", description: "Asks, then writes.", code: "const a = await llm.call('a colour'); await fs.write_file({path: ` + strings.ReplaceAll(jsString(first), `"`, `'`) + `, content: a.text}); return a.text"});
			await skills.save({name: "ask_late", description: "Writes, then asks.", code: "await fs.write_file({path: ` + strings.ReplaceAll(jsString(late), `"`, `'`) + `, content: 'x'}); return (await llm.call('too late')).text"});
			return 1;`})
		if rec.Status != "ok" {
			t.Fatalf("save skills: %s", txt)
		}
		before := sampled.Load()
		_, rec, txt = callExecute(t, c, map[string]any{"code": `return await skills.ask_first({})`})
		if rec.Status != "ok" || !strings.Contains(string(rec.Result), "blue") {
			t.Fatalf("ask_first: %s", txt)
		}
		if b, err := os.ReadFile(first); err != nil || string(b) != "blue" || sampled.Load()-before != 1 {
			t.Errorf("the skill's write: %q %v; the model asked %d times, want once", b, err, sampled.Load()-before)
		}
		_, rec, txt = callExecute(t, c, map[string]any{"code": `return await skills.ask_late({})`})
		if rec.Error == nil || !strings.Contains(rec.Error.Message, "only before its other calls") {
			t.Fatalf("ask_late: %s", txt)
		}
		if !exists("late.txt") {
			t.Errorf("the write before the refused question was not made")
		}
	})
}
