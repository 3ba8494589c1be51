package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/cmd/codecell-load/balancer"
)

// multiStore is a store the instances of TestMultiInstance share: the
// variables that open it, and how the test reads the memories back.
type multiStore struct {
	env      func(t *testing.T) []string
	contents func(t *testing.T, env []string, principal, prefix string) map[string]bool
}

// multiStores are both backends: one SQLite file (WAL), and a PostgreSQL
// database the test starts.
var multiStores = map[string]multiStore{
	"sqlite": {
		env: func(t *testing.T) []string {
			return []string{"CODECELL_MEMORY_PATH=" + filepath.Join(t.TempDir(), "shared.db")}
		},
		contents: func(t *testing.T, env []string, principal, prefix string) map[string]bool {
			t.Helper()
			path := strings.TrimPrefix(env[0], "CODECELL_MEMORY_PATH=")
			db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			return storedContents(t, db, `SELECT content FROM memories WHERE principal = ? AND content LIKE ?`, principal, prefix)
		},
	},
	"postgres": {
		env: func(t *testing.T) []string {
			_, dsn := postgresDatabase(t)
			return []string{"CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN=" + dsn}
		},
		contents: func(t *testing.T, env []string, principal, prefix string) map[string]bool {
			t.Helper()
			conn, err := pgx.Connect(t.Context(), strings.TrimPrefix(env[1], "CODECELL_MEMORY_DSN="))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			rows, err := conn.Query(t.Context(), `SELECT content FROM memories WHERE principal = $1 AND content LIKE $2`, principal, prefix+"%")
			if err != nil {
				t.Fatal(err)
			}
			contents, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]bool{}
			for _, c := range contents {
				out[c] = true
			}
			return out
		},
	},
}

// storedContents returns the contents the query finds for principal
// whose text starts with prefix.
func storedContents(t *testing.T, db *sql.DB, query, principal, prefix string) map[string]bool {
	t.Helper()
	rows, err := db.Query(query, principal, prefix+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[c] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	multiAlice = "alice-multi-0123456789"
	multiBob   = "bob-multi-0123456789"
	multiCarol = "carol-multi-0123456789"
	// Executions: 40 per 40-minute window for each principal (1 a minute,
	// bursts of 40), shared by the instances.
	multiExecBurst = 40
)

// startInstance starts `codecell serve --http` with env and returns it
// with its base URL.
func startInstance(t *testing.T, env []string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "-http", "127.0.0.1:0", "-pool", "2", "-memory-limit", "16", "-expose", "both")
	cmd.Env = append(append(os.Environ(), "CODECELL_SERVER_DATA_DIR="+t.TempDir()), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, waitForURL(t, pr)
}

// Protocol versions: one with Streamable HTTP sessions, kept in the
// memory of the instance that opened them, and the stateless one.
const (
	sessionful  = mcp.ProtocolVersion20250618
	sessionless = mcp.ProtocolVersion20260728
)

// multiClient is an MCP client of principal token through url, speaking
// protocol version; a sessionful one listens for notifications on its
// session's GET stream.
func multiClient(t *testing.T, url, token, version string) *client.Client {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
	if version == sessionful {
		//lint:ignore SA1019 a session of a protocol before 2026-07-28 hears its notifications on the GET stream, which is what this client tests.
		opts = append(opts, transport.WithContinuousListening())
	}
	c, err := client.NewStreamableHttpClient(url+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, initRequest(version)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func initRequest(version string) mcp.InitializeRequest {
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-multi", Version: "1"}
	return init
}

// stateless sends one tools/call of the stateless protocol to url and
// returns the response body.
func stateless(t *testing.T, url, token string, id int, tool string, args map[string]any) string {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "multi", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(string(body)))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "tools/call", mcp.HeaderName: tool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("stateless %s: %d %s", tool, resp.StatusCode, b)
	}
	return string(b)
}

func runOn(t *testing.T, c *client.Client, code string) string {
	t.Helper()
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": code})
	if isErr {
		t.Fatalf("run %q: %s", code, txt)
	}
	return string(rec.Result)
}

// TestMultiInstance runs two instances on one store behind a round-robin
// balancer with session affinity (cmd/codecell-load/balancer), as a team
// would behind a load balancer.
func TestMultiInstance(t *testing.T) {
	for name, st := range multiStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testMultiInstance(t, st)
		})
	}
}

func testMultiInstance(t *testing.T, st multiStore) {
	raw := make([]byte, 32)
	rand.Read(raw)
	keyHex := hex.EncodeToString(raw)
	store := st.env(t)
	env := append(append([]string{}, store...),
		"CODECELL_CLUSTER_SHARED=true",
		"CODECELL_CLUSTER_KEY_ENV=TEAM_FILTER_KEY", "TEAM_FILTER_KEY="+keyHex,
		"CODECELL_AUTH_TOKENS=alice="+multiAlice+",bob="+multiBob+",carol="+multiCarol,
		"CODECELL_LIMITS_EXECUTIONS_PER_MINUTE=1", fmt.Sprintf("CODECELL_LIMITS_EXECUTION_BURST=%d", multiExecBurst),
		"CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=10000000", "CODECELL_LIMITS_TOOL_CALL_BURST=1000000",
	)
	cmdA, urlA := startInstance(t, env)
	_, urlB := startInstance(t, env)
	lb, err := balancer.New([]string{urlA, urlB})
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(lb)
	t.Cleanup(proxy.Close)

	// Two sessions of alice through the balancer: one on each instance.
	one := multiClient(t, proxy.URL, multiAlice, sessionful)
	two := multiClient(t, proxy.URL, multiAlice, sessionful)
	if n := lb.Sessions(); n[0] != 1 || n[1] != 1 {
		t.Fatalf("sessions per instance %v, want one on each", n)
	}

	t.Run("a memory written through one is recalled through the other", func(t *testing.T) {
		runOn(t, one, `(await memory.remember({content: "The staging database rotates its credentials every Friday"})).id`)
		got := runOn(t, two, `(await memory.recall({query: "when do staging credentials rotate"})).results.map(r => r.content)`)
		if !strings.Contains(got, "every Friday") {
			t.Errorf("recall on the other instance: %s", got)
		}
	})

	t.Run("a skill saved on one is callable on the other, whose clients hear of it", func(t *testing.T) {
		var changed atomic.Int32
		two.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == mcp.MethodNotificationToolsListChanged {
				changed.Add(1)
			}
		})
		runOn(t, one, `(await skills.save({name: "shout", description: "Upper-case a word.", code: "return args.word.toUpperCase() + '!'"})).version`)
		deadline := time.Now().Add(10 * time.Second)
		for changed.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the other instance's client heard of no tools/list_changed within 10 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := runOn(t, two, `await skills.shout({word: "hi"})`); got != `"HI!"` {
			t.Errorf("the skill on the other instance returned %s", got)
		}
	})

	t.Run("a token minted on one resolves on the other", func(t *testing.T) {
		out := stateless(t, urlA, multiAlice, 1, "execute_code", map[string]any{"code": `({who: "ada@example.com"})`})
		tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(out)
		if tok == "" {
			t.Fatalf("no token in the result: %s", out)
		}
		code := fmt.Sprintf(`(await util.echo({text: %q})).text.length`, tok)
		if out := stateless(t, urlB, multiAlice, 2, "execute_code", map[string]any{"code": code}); !strings.Contains(out, `\"result\":15`) {
			t.Errorf("alice's token on the other instance: %s", out)
		}
		if out := stateless(t, urlB, multiBob, 3, "execute_code", map[string]any{"code": code}); !strings.Contains(out, "unknown token") {
			t.Errorf("bob resolved alice's token: %s", out)
		}
	})

	t.Run("a rate limit is shared", func(t *testing.T) {
		window := time.Duration(multiExecBurst) * time.Minute
		before := time.Now().Truncate(window)
		ok, limited := 0, 0
		for i := range 2 * multiExecBurst {
			url := []string{urlA, urlB}[i%2]
			out := stateless(t, url, multiCarol, 10+i, "execute_code", map[string]any{"code": "1+1"})
			switch {
			case strings.Contains(out, "rate limit"):
				limited++
			case strings.Contains(out, `\"result\":2`):
				ok++
			default:
				t.Fatalf("run %d: %s", i, out)
			}
		}
		if !time.Now().Truncate(window).Equal(before) {
			t.Skip("the runs straddled a rate window's edge; counts cannot be compared")
		}
		// Each instance reserves the window's quota in batches of
		// batchOf(40) = 2: at most one unit per instance may stay
		// reserved and unspent.
		if ok > multiExecBurst || ok < multiExecBurst-2 {
			t.Errorf("%d runs allowed over two instances (%d limited), want %d in all (not %d per instance), less at most 2 reserved unspent", ok, limited, multiExecBurst, multiExecBurst)
		}
		t.Logf("shared limit: %d of %d runs allowed over two instances (limit %d)", ok, ok+limited, multiExecBurst)
	})

	t.Run("killing one instance mid-load loses no acknowledged write", func(t *testing.T) {
		var (
			mu          sync.Mutex
			acked       []string
			failed      atomic.Int64
			reinit      atomic.Int64
			ackedAfter  atomic.Int64
			killed      atomic.Bool
			stop        = make(chan struct{})
			wg          sync.WaitGroup
			workerPanic atomic.Value
		)
		const workers = 9
		clients := make([]*client.Client, workers)
		version := func(w int) string { // sessions on both instances, and stateless clients
			return []string{sessionful, sessionful, sessionless}[w%3]
		}
		for w := range clients {
			clients[w] = multiClient(t, proxy.URL, multiBob, version(w))
		}
		for w, c := range clients {
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						workerPanic.Store(fmt.Sprint(r))
					}
				}()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					content := fmt.Sprintf("ack-%d-%d", w, n)
					req := mcp.CallToolRequest{}
					req.Params.Name = "memory__remember"
					req.Params.Arguments = map[string]any{"content": content}
					ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					res, err := c.CallTool(ctx, req)
					cancel()
					if err == nil && !res.IsError {
						mu.Lock()
						acked = append(acked, content)
						mu.Unlock()
						if killed.Load() {
							ackedAfter.Add(1)
						}
						continue
					}
					failed.Add(1)
					if errors.Is(err, transport.ErrSessionTerminated) {
						// The session's instance is gone: a new session
						// lands on the live one.
						reinit.Add(1)
						ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
						c.Initialize(ctx, initRequest(version(w)))
						cancel()
					}
				}
			})
		}
		waitAcked := func(n int) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				have := len(acked)
				mu.Unlock()
				if have >= n || time.Now().After(deadline) {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		waitAcked(60)
		if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed.Store(true)
		mu.Lock()
		atKill := len(acked)
		mu.Unlock()
		waitAcked(atKill + 60)
		close(stop)
		wg.Wait()
		if p := workerPanic.Load(); p != nil {
			t.Fatalf("a worker panicked: %v", p)
		}

		stored := st.contents(t, store, "bob", "ack-")
		lost := 0
		for _, a := range acked {
			if !stored[a] {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged write %s is not in the store", a)
				}
			}
		}
		if ackedAfter.Load() == 0 {
			t.Error("no write was acknowledged after the kill: the other instance did not keep serving")
		}
		if reinit.Load() == 0 {
			t.Error("no client had to re-initialize: were no sessions on the killed instance?")
		}
		failovers, gone := lb.Stats()
		t.Logf("kill under load: %d writes acknowledged (%d after the kill), %d in the store, %d lost; %d requests failed, %d sessions re-initialized; balancer: %d failovers, %d sessions gone",
			len(acked), ackedAfter.Load(), len(stored), lost, failed.Load(), reinit.Load(), failovers, gone)

		// The survivor serves new sessions, and says it is ready.
		c := multiClient(t, proxy.URL, multiAlice, sessionful)
		if got := runOn(t, c, `1+1`); got != "2" {
			t.Errorf("a new session after the kill: %s", got)
		}
		resp, err := http.Get(urlB + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("the survivor's /readyz: %d", resp.StatusCode)
		}
	})
}
