package upstream_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The test binary is also the upstream server of these tests: with
// CODECELL_FAKE_UPSTREAM set (in the env its configuration gives it), it
// serves MCP over stdio with the tools of newFakeServer, behaving as the
// mode says.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CODECELL_FAKE_UPSTREAM"); mode != "" {
		os.Exit(runFake(mode))
	}
	os.Exit(m.Run())
}

// Modes of the fake server.
const (
	modeServe      = "serve"       // the tools, at once
	modeExit       = "exit"        // says why on stderr and exits 2 before the handshake
	modeSilent     = "silent"      // reads requests, never answers
	modeSlowStart  = "slow-start"  // serves after CODECELL_FAKE_DELAY (a duration)
	modeIgnoreTerm = "ignore-term" // serves, ignores SIGTERM
	modeSleeper    = "sleeper"     // the grandchild of modeServe's spawn tool: sleeps
)

func runFake(mode string) int {
	switch mode {
	case modeSleeper:
		time.Sleep(time.Hour)
		return 0
	case modeExit:
		fmt.Fprintln(os.Stderr, "fatal: the configuration file /etc/fake.conf is missing")
		return 2
	case modeSilent:
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case modeSlowStart:
		d, _ := time.ParseDuration(os.Getenv("CODECELL_FAKE_DELAY"))
		time.Sleep(d)
	case modeIgnoreTerm:
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Fprintln(os.Stderr, "fake upstream ready; token in env is", os.Getenv("FAKE_TOKEN"))
	srv := newFakeServer(func(line string) { fmt.Fprintln(os.Stderr, line) })
	if err := server.NewStdioServer(srv).Listen(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 1
	}
	return 0
}

// tinyPNG is a 1×1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// newFakeServer is the fake upstream's MCP server; say writes a line to
// its log (stderr over stdio).
func newFakeServer(say func(string)) *server.MCPServer {
	srv := server.NewMCPServer("fake-upstream", "1.2.3", server.WithToolCapabilities(true), server.WithInstructions("Fake tools for codecell's tests."))
	text := func(s string) *mcp.CallToolResult { return mcp.NewToolResultText(s) }
	srv.AddTool(mcp.NewTool("get-sum", mcp.WithDescription("Returns the sum of two numbers. Second sentence."),
		mcp.WithTitleAnnotation("Get Sum"), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strconv.FormatFloat(r.GetFloat("a", 0)+r.GetFloat("b", 0), 'f', -1, 64)), nil
		})
	srv.AddTool(mcp.NewTool("get_sum", mcp.WithDescription("The other sum, which takes the name get_sum first.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(`"other"`), nil
		})
	srv.AddTool(mcp.NewTool("createEntities", mcp.WithDescription("Creates entities.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(`{"created": 2}`), nil
		})
	srv.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes text."), mcp.WithString("text", mcp.Required())),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(r.GetString("text", "")), nil
		})
	srv.AddTool(mcp.NewTool("structured", mcp.WithDescription("Structured content beside text."),
		mcp.WithRawOutputSchema([]byte(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`))),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"temperature": 21.5}, "It is 21.5 degrees."), nil
		})
	srv.AddTool(mcp.NewTool("multi", mcp.WithDescription("Two contents.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("first"), mcp.NewTextContent(`[1,2]`)}}, nil
		})
	srv.AddTool(mcp.NewTool("image", mcp.WithDescription("A tiny image and an embedded resource.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewImageContent(base64.StdEncoding.EncodeToString(tinyPNG), "image/png"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "hello notes"}),
			}}, nil
		})
	srv.AddTool(mcp.NewTool("trace-meta", mcp.WithDescription("Returns the traceparent of its call's _meta.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp := ""
			if r.Params.Meta != nil {
				tp, _ = r.Params.Meta.AdditionalFields["traceparent"].(string)
			}
			return text(strconv.Quote(tp)), nil
		})
	srv.AddTool(mcp.NewTool("fail", mcp.WithDescription("Reports an error.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("boom: the widget is broken"), nil
		})
	srv.AddTool(mcp.NewTool("crash", mcp.WithDescription("Exits the server mid-call."), mcp.WithDestructiveHintAnnotation(false)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "panic: the fake upstream crashes on purpose")
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(mcp.NewTool("hang", mcp.WithDescription("Never answers; says when it is cancelled.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			say("hang: started")
			<-ctx.Done()
			say("hang: cancelled by the client")
			return nil, ctx.Err()
		})
	srv.AddTool(mcp.NewTool("slow", mcp.WithDescription("Sleeps ms, reporting progress in steps."), mcp.WithNumber("ms"), mcp.WithNumber("steps")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := int(r.GetFloat("steps", 1))
			d := time.Duration(r.GetFloat("ms", 0)) * time.Millisecond / time.Duration(max(steps, 1))
			for i := 1; i <= steps; i++ {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if r.Params.Meta != nil && r.Params.Meta.ProgressToken != nil {
					_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": r.Params.Meta.ProgressToken, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i)})
				}
			}
			return text("done"), nil
		})
	var inFlight, most atomic.Int64
	srv.AddTool(mcp.NewTool("concurrent", mcp.WithDescription("Holds a call for a while; returns the most calls it saw at once."), mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
			return text(strconv.FormatInt(most.Load(), 10)), nil
		})
	srv.AddTool(mcp.NewTool("env", mcp.WithDescription("Returns the value of an environment variable, or null."), mcp.WithString("name", mcp.Required())),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v, ok := os.LookupEnv(r.GetString("name", ""))
			if !ok {
				return text("null"), nil
			}
			return text(strconv.Quote(v)), nil
		})
	if os.Getenv("CODECELL_FAKE_BAD_NAMES") != "" {
		// Names no catalogue can take.
		for _, n := range []string{"bad\nname", "nul\x00name", strings.Repeat("long", 75), "\xff\xfe", ""} {
			srv.AddTool(mcp.NewTool(n, mcp.WithDescription("A tool with a bad name.")),
				func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("bad"), nil })
		}
	}
	srv.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns a text of n bytes."), mcp.WithNumber("n", mcp.Required())),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strings.Repeat("a", int(r.GetFloat("n", 0)))), nil
		})
	var added sync.Once
	srv.AddTool(mcp.NewTool("add-tool", mcp.WithDescription("Adds the tool late, announcing the change.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			added.Do(func() {
				srv.AddTool(mcp.NewTool("late", mcp.WithDescription("Arrived late.")),
					func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return text(`"late"`), nil
					})
			})
			return text("added"), nil
		})
	srv.AddTool(mcp.NewTool("pid", mcp.WithDescription("Returns the server's process ID.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strconv.Itoa(os.Getpid())), nil
		})
	srv.AddTool(mcp.NewTool("spawn", mcp.WithDescription("Starts a grandchild that sleeps; returns its pid.")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			exe, _ := os.Executable()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "CODECELL_FAKE_UPSTREAM="+modeSleeper)
			if err := cmd.Start(); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			go func() { _ = cmd.Wait() }()
			return text(strconv.Itoa(cmd.Process.Pid)), nil
		})
	return srv
}
