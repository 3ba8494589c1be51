package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// stateRewriter is an HTTP transport that shows and may change the
// requestState of each request a client sends.
type stateRewriter struct {
	mu      sync.Mutex
	states  []string              // every requestState sent, in order
	rewrite func(s string) string // nil sends it as it is
}

func (w *stateRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		var msg map[string]any
		if json.Unmarshal(b, &msg) == nil {
			if p, ok := msg["params"].(map[string]any); ok {
				if s, ok := p["requestState"].(string); ok {
					w.mu.Lock()
					w.states = append(w.states, s)
					rw := w.rewrite
					w.mu.Unlock()
					if rw != nil {
						p["requestState"] = rw(s)
						b, _ = json.Marshal(msg)
					}
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (w *stateRewriter) set(fn func(string) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rewrite = fn
}

func (w *stateRewriter) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.states) == 0 {
		return ""
	}
	return w.states[len(w.states)-1]
}

// connectModern connects a host to srv over Streamable HTTP on protocol
// 2026-07-28, whose client answers input_required (mcp-go's MRTR loop).
func connectModern(t testing.TB, srv *mcpserver.Server, rw *stateRewriter, opts ...client.ClientOption) *client.Client {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	tr, err := transport.NewStreamableHTTP(ts.URL+mcpserver.PathStreamable, transport.WithHTTPBasicClient(&http.Client{Transport: rw}))
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, client.NewClient(tr, opts...))
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", v, mcp.ProtocolVersion20260728)
	}
	return c
}

// crmLedger is a pair of tools that count their calls: crm.read, which
// answers with how often it was called, and crm.write.
type crmLedger struct {
	reads, writes atomic.Int32
	mu            sync.Mutex
	written       []json.RawMessage
}

func newCRM(t testing.TB, srv *mcpserver.Server) *crmLedger {
	t.Helper()
	l := &crmLedger{}
	err := srv.Registry().Register(
		tools.Tool{
			Name: "crm.read", Summary: "Read.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				n := l.reads.Add(1)
				return json.Marshal(map[string]any{"n": n})
			},
		},
		tools.Tool{
			Name: "crm.write", Summary: "Write.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				l.writes.Add(1)
				l.mu.Lock()
				l.written = append(l.written, args)
				l.mu.Unlock()
				return json.RawMessage(`{"ok":true}`), nil
			},
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestMultiRoundTrip: on protocol 2026-07-28 a program's llm.call,
// approval.request and guarded calls reach the client through
// input_required, and the retries resume the run without repeating what
// it did: the read before the question is made once and its result is
// the same on replay, the write after it is made once.
func TestMultiRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Approval: engine.ApprovalConfig{ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"destructive"}}}})
	deletes := deleter(t, srv)
	l := newCRM(t, srv)
	var sampled, elicited atomic.Int32
	h := host{
		sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return answer("model:" + inputText(req)), nil
		},
		elicit: func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			elicited.Add(1)
			res := &mcp.ElicitationResult{}
			switch m := req.Params.Message; {
			case strings.Contains(m, "please accept"):
				res.Action = mcp.ElicitationResponseActionAccept
				res.Content = map[string]any{"comment": "fine"}
			case strings.Contains(m, "please cancel"):
				res.Action = mcp.ElicitationResponseActionCancel
			default:
				res.Action = mcp.ElicitationResponseActionDecline
			}
			return res, nil
		},
	}
	rw := &stateRewriter{}
	c := connectModern(t, srv, rw, client.WithSamplingHandler(h), client.WithElicitationHandler(h))

	t.Run("read, ask, write", func(t *testing.T) {
		res, rec := execute(t, c, map[string]any{"code": `
			const r = await crm.read({nonce: Math.random(), at: Date.now()});
			const a = await llm.call("Summarise " + r.n);
			const b = await llm.call("Again " + r.n);
			await crm.write({text: a.text + "/" + b.text, n: r.n, nonce: Math.random()});
			return {n: r.n, text: a.text, b: b.text};`})
		if rec == nil || rec.Error != nil {
			t.Fatalf("run failed: %s", text(res))
		}
		if got, want := string(rec.Result), `{"b":"model:Again 1","n":1,"text":"model:Summarise 1"}`; got != want {
			t.Errorf("result %s, want %s", got, want)
		}
		if r, w, s := l.reads.Load(), l.writes.Load(), sampled.Load(); r != 1 || w != 1 || s != 2 {
			t.Errorf("read %d times, wrote %d times, sampled %d times; want 1, 1, 2", r, w, s)
		}
		if rw.last() == "" {
			t.Error("the client sent no requestState: the run did not go through input_required")
		}
	})

	t.Run("approval.request", func(t *testing.T) {
		for _, tc := range []struct{ msg, want string }{
			{"please accept", `{"action":"accept","content":{"comment":"fine"}}`},
			{"no thanks", `{"action":"decline"}`},
			{"please cancel", `{"action":"cancel"}`},
		} {
			res, rec := execute(t, c, map[string]any{"code": `const n = (await crm.read({})).n;
				return await approval.request("` + tc.msg + `", {schema: {type: "object", properties: {comment: {type: "string"}}}});`})
			if rec == nil || rec.Error != nil {
				t.Fatalf("%s: %s", tc.msg, text(res))
			}
			if got := string(rec.Result); got != tc.want {
				t.Errorf("%s: result %s, want %s", tc.msg, got, tc.want)
			}
		}
	})

	t.Run("guarded destructive call", func(t *testing.T) {
		for _, tc := range []struct{ purpose, want string }{
			{"tidy up, please decline", "approval_declined"},
			{"tidy up, please cancel", "approval_declined"},
			{"tidy up, please accept", ""},
		} {
			res, rec := execute(t, c, map[string]any{"purpose": tc.purpose, "code": `
				try { return await files.delete({path: "/a"}); } catch (e) { return e.code; }`})
			if rec == nil || rec.Error != nil {
				t.Fatalf("%s: %s", tc.purpose, text(res))
			}
			want := `"` + tc.want + `"`
			if tc.want == "" {
				want = `{"deleted":true}`
			}
			if got := string(rec.Result); got != want {
				t.Errorf("%s: result %s, want %s", tc.purpose, got, want)
			}
		}
		if n := deletes.Load(); n != 1 {
			t.Errorf("files.delete ran %d times, want once (after the accept)", n)
		}
	})

	t.Run("a write before the question", func(t *testing.T) {
		writes := l.writes.Load()
		res, rec := execute(t, c, map[string]any{"code": `
			const r = await crm.read({});
			await crm.write({n: r.n, at: new Date().toISOString()});
			const a = await llm.call("x");
			return a.text;`})
		if rec == nil || rec.Error != nil {
			t.Fatalf("run failed: %s", text(res))
		}
		if n := l.writes.Load() - writes; n != 1 {
			t.Errorf("wrote %d times, want once", n)
		}
	})

	t.Run("refused states", func(t *testing.T) {
		code := `await crm.write({}); return (await llm.call("hi")).text`
		for _, tc := range []struct {
			name    string
			rewrite func(string) string
			want    string
		}{
			{"tampered", func(s string) string {
				b := []byte(s)
				i := len(b) - 10
				if b[i] == 'A' {
					b[i] = 'B'
				} else {
					b[i] = 'A'
				}
				return string(b)
			}, "does not open"},
			{"not codecell's", func(string) string { return "hello" }, "not one codecell made"},
		} {
			writes := l.writes.Load()
			rw.set(tc.rewrite)
			res, rec := execute(t, c, map[string]any{"code": code})
			rw.set(nil)
			if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, tc.want) {
				t.Errorf("%s: %s, want %s (%s)", tc.name, text(res), engine.KindStateRefused, tc.want)
			}
			if n := l.writes.Load() - writes; n != 1 {
				t.Errorf("%s: wrote %d times, want once (the first attempt)", tc.name, n)
			}
		}

		// A state sent back a second time.
		_, rec := execute(t, c, map[string]any{"code": code})
		if rec == nil || rec.Error != nil {
			t.Fatalf("run failed: %+v", rec)
		}
		used := rw.last()
		rw.set(func(string) string { return used })
		writes := l.writes.Load()
		res, rec := execute(t, c, map[string]any{"code": code})
		rw.set(nil)
		if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, "sent back already") {
			t.Errorf("replayed state: %s", text(res))
		}
		if n := l.writes.Load() - writes; n != 1 {
			t.Errorf("replayed state: wrote %d times, want once (the first attempt)", n)
		}

		// Another request's state: the same principal, other code.
		rw.set(func(string) string { return used })
		res, rec = execute(t, c, map[string]any{"code": code + ";"})
		rw.set(nil)
		if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, "another request") {
			t.Errorf("another request's state: %s", text(res))
		}
	})

	t.Run("another server's state", func(t *testing.T) {
		other := newServer(t, mcpserver.Config{})
		newCRM(t, other)
		orw := &stateRewriter{}
		oc := connectModern(t, other, orw, client.WithSamplingHandler(h))
		_, rec := execute(t, oc, map[string]any{"code": `await crm.write({}); return (await llm.call("hi")).text`})
		if rec == nil || rec.Error != nil {
			t.Fatalf("run failed: %+v", rec)
		}
		foreign := orw.last()
		rw.set(func(string) string { return foreign })
		res, rec := execute(t, c, map[string]any{"code": `await crm.write({}); return (await llm.call("hi")).text`})
		rw.set(nil)
		if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, "another installation") {
			t.Errorf("foreign state: %s", text(res))
		}
	})
}

// inputText is the text of a sampling request's last message, as mcp-go's
// client decodes an input request's content: a map.
func inputText(req mcp.CreateMessageRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	if m, ok := req.Messages[len(req.Messages)-1].Content.(map[string]any); ok {
		s, _ := m["text"].(string)
		return s
	}
	return lastText(req)
}

// TestMultiRoundTripStore: with a store the journal is kept there and the
// state stays small; a dry run asks the client across retries and its
// plan holds the write once, which its commit makes once; a memoised
// call is served as before; another principal's state is refused.
func TestMultiRoundTripStore(t *testing.T) {
	t.Parallel()
	env := planServer(t, mcpserver.Config{Cache: engine.CacheConfig{Memoize: []engine.MemoRule{{Pattern: "test.count", TTL: time.Minute}}}})
	h := host{sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return answer("model:" + inputText(req)), nil
	}}
	connect := func(token string) (*client.Client, *stateRewriter) {
		rw := &stateRewriter{}
		tr, err := transport.NewStreamableHTTP(env.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
			transport.WithHTTPBasicClient(&http.Client{Transport: rw}))
		if err != nil {
			t.Fatal(err)
		}
		return start(t, client.NewClient(tr, client.WithSamplingHandler(h))), rw
	}
	alice, arw := connect(aliceToken)
	bob, brw := connect(bobToken)

	res, rec := execute(t, alice, map[string]any{"mode": "plan", "details": true, "code": `
		const c = await test.count({q: 1});
		const d = await test.count({q: 1});
		const a = await llm.call("x" + c.calls);
		await test.append(a.text);
		return [c.calls, d.calls];`})
	if rec == nil || rec.Error != nil {
		t.Fatalf("dry run: %s", text(res))
	}
	if n := env.src.calls("test.count"); n != 1 {
		t.Errorf("test.count called %d times, want once", n)
	}
	if s := arw.last(); s == "" || len(s) > 400 {
		t.Errorf("state of %d bytes, want a small one naming the journal in the store", len(s))
	}
	ss := steps(t, rec)
	if len(ss) != 1 || ss[0].Tool != "test.append" || !strings.Contains(string(ss[0].Args), "model:x1") {
		t.Fatalf("plan %s, want the append once", rec.Plan.Steps)
	}
	cached := 0
	for _, c := range rec.Trace {
		if c.Cached {
			cached++
		}
	}
	if cached < 2 {
		t.Errorf("%d calls served from the journal or the cache, want both reads", cached)
	}
	if crec := commit(t, alice, rec.Plan.ID); crec.Error != nil {
		t.Fatalf("commit: %+v", crec.Error)
	}
	env.src.mu.Lock()
	appended := append([]string(nil), env.src.appended...)
	env.src.mu.Unlock()
	if len(appended) != 1 || appended[0] != "model:x1" {
		t.Errorf("appended %q, want the model's answer once", appended)
	}

	// Alice's state sent by Bob.
	if _, rec := execute(t, alice, map[string]any{"code": `return (await llm.call("hi")).text`}); rec == nil || rec.Error != nil {
		t.Fatalf("run: %+v", rec)
	}
	// A fresh state of alice's, not sent back yet: she asks, and Bob
	// sends her state instead of his.
	var aliceState string
	arw.set(func(s string) string { aliceState = s; return "x" })
	execute(t, alice, map[string]any{"code": `return (await llm.call("again")).text`})
	arw.set(nil)
	brw.set(func(string) string { return aliceState })
	res, rec = execute(t, bob, map[string]any{"code": `return (await llm.call("again")).text`})
	brw.set(nil)
	if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindStateRefused || !strings.Contains(rec.Error.Message, "another principal") {
		t.Errorf("alice's state sent by bob: %s", text(res))
	}
}

// TestMultiRoundTripBudget: a run's llm budget holds over its retries,
// and a call that stopped to ask is charged once, when it is answered.
func TestMultiRoundTripBudget(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{LLM: engine.LLMConfig{MaxCallsPerRun: 2}})
	h := host{sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return answer("ok"), nil
	}}
	c := connectModern(t, srv, &stateRewriter{}, client.WithSamplingHandler(h))
	res, rec := execute(t, c, map[string]any{"code": `
		for (let i = 1; i <= 3; i++) {
			try { await llm.call("q" + i); } catch (e) { return [i, e.code]; }
		}
		return "all answered";`})
	if rec == nil || rec.Error != nil {
		t.Fatalf("run failed: %s", text(res))
	}
	if got := string(rec.Result); got != `[3,"quota_exceeded"]` {
		t.Errorf("result %s, want the third call over the run's budget of 2", got)
	}
}

// TestMultiRoundTripDiverges: a program that does otherwise on replay —
// here because a tool appeared in the catalogue while the client was
// answering — fails with replay_diverged, and its write is not made again.
func TestMultiRoundTripDiverges(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	l := newCRM(t, srv)
	var once sync.Once
	h := host{sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		once.Do(func() {
			if err := srv.Registry().Register(tools.Tool{Name: "crm.extra", Summary: "New.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{}`), nil
			}}); err != nil {
				t.Error(err)
			}
		})
		return answer("ok"), nil
	}}
	c := connectModern(t, srv, &stateRewriter{}, client.WithSamplingHandler(h))
	res, rec := execute(t, c, map[string]any{"code": `
		await crm.write({has: Object.keys(crm).join(",")});
		return (await llm.call("x")).text;`})
	if rec == nil || rec.Error == nil || rec.Error.Kind != engine.KindReplayDiverged || !strings.Contains(rec.Error.Message, "call #1 (crm.write) had other arguments") {
		t.Fatalf("%s, want replay_diverged naming the write", text(res))
	}
	if rec.Result != nil {
		t.Errorf("a diverged run has a result: %s", rec.Result)
	}
	if n := l.writes.Load(); n != 1 {
		t.Errorf("wrote %d times, want once", n)
	}
}
