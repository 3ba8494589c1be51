package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
)

// TestMultiRoundTripNested: on protocol 2026-07-28 a question asked from
// inside a program's call — memory.recall's expand, a skill's llm.call —
// stops the run through input_required like the program's own; the
// retry makes the call again and its handler's question is answered from
// the journal. A handler or skill that made another call before asking
// would make it again on the retry, so it is refused, and the call it
// made is made once.
func TestMultiRoundTripNested(t *testing.T) {
	t.Parallel()
	srv, _ := storeServerTB(t, filepath.Join(t.TempDir(), "m.db"), mcpserver.Config{})
	l := newCRM(t, srv)
	var terms, other atomic.Int32
	table := tableModel(t, &terms)
	h := host{sample: func(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if text := inputText(req); strings.Contains(text, "Question: ") {
			// The table model reads the question as a legacy client's
			// handler gets it.
			req.Messages = append(req.Messages[:len(req.Messages)-1:len(req.Messages)-1], mcp.SamplingMessage{Role: mcp.RoleUser, Content: mcp.NewTextContent(text)})
			return table.sample(ctx, req)
		}
		other.Add(1)
		return answer("model saw " + inputText(req)), nil
	}}
	c := connectModern(t, srv, &stateRewriter{}, client.WithSamplingHandler(h))

	t.Run("recall's expand", func(t *testing.T) {
		var contents []string
		for _, p := range paraphrasePairs(t)[:30] {
			contents = append(contents, p.memory)
		}
		all, _ := json.Marshal(contents)
		if _, rec := execute(t, c, map[string]any{"code": fmt.Sprintf(`for (const content of %s) await memory.remember({content}); return 1`, all)}); rec.Error != nil {
			t.Fatalf("remember: %+v", rec.Error)
		}
		const want = "The wifi password for the guest network is tulip-4471"
		_, rec := execute(t, c, map[string]any{"code": `const r = await memory.recall({query: "how do visitors get online here", expand: true, limit: 1}); await crm.write({n: r.results.length}); return r;`})
		if rec.Error != nil {
			t.Fatalf("recall: %+v", rec.Error)
		}
		var got recallAnswer
		if err := json.Unmarshal(rec.Result, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != 1 || got.Results[0].Content != want || got.Expansion == nil || len(got.Expansion.Terms) == 0 || got.Expansion.Error != "" {
			t.Fatalf("recall with expand = %s; want %q first, with the model's terms", rec.Result, want)
		}
		if terms.Load() != 1 || l.writes.Load() != 1 {
			t.Errorf("the model was asked for terms %d times and crm.write made %d times; want 1 and 1", terms.Load(), l.writes.Load())
		}
	})

	t.Run("a skill that asks first", func(t *testing.T) {
		mustRun(t, c, `await skills.save({name: "ask_first", description: "Asks, then writes.", code: "const a = await llm.call('colour of the sky'); await crm.write({said: a.text}); return a.text"})`)
		before, asked := l.writes.Load(), other.Load()
		_, rec := execute(t, c, map[string]any{"code": `return await skills.ask_first({})`})
		if rec.Error != nil || !strings.Contains(string(rec.Result), "model saw colour of the sky") {
			t.Fatalf("skill: %s %+v", rec.Result, rec.Error)
		}
		if n := l.writes.Load() - before; n != 1 {
			t.Errorf("the skill's write was made %d times, want 1", n)
		}
		if n := other.Load() - asked; n != 1 {
			t.Errorf("the model was asked %d times, want 1", n)
		}
	})

	t.Run("a skill that asks after a call", func(t *testing.T) {
		mustRun(t, c, `await skills.save({name: "ask_late", description: "Writes, then asks.", code: "await crm.write({early: true}); return (await llm.call('too late')).text"})`)
		before, asked := l.writes.Load(), other.Load()
		_, rec := execute(t, c, map[string]any{"code": `return await skills.ask_late({})`})
		if rec.Error == nil || !strings.Contains(rec.Error.Message, "only before its other calls") || !strings.Contains(rec.Error.Message, "tasks extension") {
			t.Fatalf("skill asking after a call: %s %+v; want capability_missing saying why and what to do", rec.Result, rec.Error)
		}
		if n := l.writes.Load() - before; n != 1 {
			t.Errorf("the skill's write was made %d times, want 1", n)
		}
		if other.Load() != asked {
			t.Errorf("the model was asked")
		}
	})
}
