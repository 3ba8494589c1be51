// Command codecell-load is codecell's load test: it starts the server
// binary on a loopback port, drives it with many concurrent MCP clients
// over Streamable HTTP for a fixed time, mixing execute_code, read_tools
// and search_tools, and reports throughput, latency percentiles, refusals,
// failures and the server's resident memory. It exits 1 on any failure
// that is not an intended refusal (rate limit or busy).
//
// With -instances N it starts N servers on one store (cluster.shared on)
// behind a round-robin balancer with session affinity (package balancer),
// as a team would run codecell behind a load balancer, and reports each
// server's CPU time beside the driver's own.
//
//	codecell-load -bin bin/codecell -clients 200 -duration 30s
//	codecell-load -bin bin/codecell -instances 4
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codecell/codecell/memory/postgres/pgserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "codecell-load:", err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// op is one kind of request the clients make.
type op struct {
	name   string
	weight int
	tool   string
	args   func(r *rand.Rand, b []byte) []byte // appends the arguments, a JSON object
}

var ops = []op{
	{"execute_code 1+1", 70, "execute_code", func(_ *rand.Rand, b []byte) []byte { return append(b, `{"code":"1+1"}`...) }},
	{"execute_code + tool call", 10, "execute_code", func(r *rand.Rand, b []byte) []byte {
		b = append(b, `{"code":"(await util.echo({text: 'n`...)
		b = strconv.AppendInt(b, int64(r.IntN(1000)), 10)
		return append(b, `'})).text"}`...)
	}},
	{"read_tools", 10, "read_tools", func(r *rand.Rand, b []byte) []byte {
		paths := []string{"/manifest.json", "/util/index.json", "/util/echo.d.ts", "/memory/recall.md"}
		return append(strconv.AppendQuote(append(b, `{"path":`...), paths[r.IntN(len(paths))]), '}')
	}},
	{"search_tools", 10, "search_tools", func(r *rand.Rand, b []byte) []byte {
		qs := []string{"echo text", "remember a fact", "search memories", "current time", "write a file"}
		return append(strconv.AppendQuote(append(b, `{"query":`...), qs[r.IntN(len(qs))]), '}')
	}},
}

type sample struct {
	op      int
	latency time.Duration
	outcome string // ok, refused, failed
	detail  string
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("codecell-load", flag.ContinueOnError)
	bin := fs.String("bin", "bin/codecell", "the codecell binary to start")
	clients := fs.Int("clients", 200, "concurrent MCP clients")
	duration := fs.Duration("duration", 30*time.Second, "how long to send requests")
	pool := fs.Int("pool", 0, "sandbox pool size for the server (0: its default)")
	instances := fs.Int("instances", 1, "servers to start on one store, behind a balancer")
	storeKind := fs.String("store", "sqlite", "the store: sqlite, or postgres (a throwaway server started from the machine's PostgreSQL binaries)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, "Usage: codecell-load [flags]\n\nStart the codecell binary on a loopback port and drive it with many MCP clients over\nStreamable HTTP; print throughput, latency, refusals, failures and memory.\n\nFlags:\n")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	} else if err != nil {
		return usageError{err.Error() + " (codecell-load -h lists the flags)"}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("codecell-load takes no arguments, got %q", fs.Args())}
	}
	if *instances < 1 {
		return usageError{fmt.Sprintf("-instances %d: want at least 1", *instances)}
	}
	if _, err := os.Stat(*bin); err != nil {
		return usageError{fmt.Sprintf("no codecell binary at %s: build it with make build, or name it with -bin", *bin)}
	}
	data, err := os.MkdirTemp("", "codecell-load")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)

	var storeEnv []string
	switch *storeKind {
	case "sqlite":
	case "postgres":
		pg, err := pgserver.Start(ctx)
		if err != nil {
			return err
		}
		defer pg.Stop()
		dsn, err := pg.CreateDatabase(ctx)
		if err != nil {
			return err
		}
		storeEnv = []string{"CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN=" + dsn}
	default:
		return usageError{fmt.Sprintf("-store %q: want sqlite or postgres", *storeKind)}
	}
	servers, base, stopServers, err := startServers(*bin, data, *pool, *instances, storeEnv)
	if err != nil {
		return err
	}
	defer stopServers()

	conns := make([]*mcpClient, *clients)
	for i := range conns {
		c, err := newMCPClient(base + "/mcp")
		if err != nil {
			return err
		}
		defer c.close()
		if err := c.discover(ctx); err != nil {
			return fmt.Errorf("start client %d: %w", i, err)
		}
		conns[i] = c
	}

	var rssMu sync.Mutex
	var rss []int64
	watchCtx, stopWatch := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			var sum int64
			for _, srv := range servers {
				if kb, err := rssKB(srv.Process.Pid); err == nil {
					sum += kb
				}
			}
			if sum > 0 {
				rssMu.Lock()
				rss = append(rss, sum)
				rssMu.Unlock()
			}
			select {
			case <-watchCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	total := 0
	for _, o := range ops {
		total += o.weight
	}
	cpuBefore := cpuTimes(servers)
	deadline := time.Now().Add(*duration)
	results := make(chan []sample, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			var mine []sample
			for time.Now().Before(deadline) && ctx.Err() == nil {
				pick := r.IntN(total)
				k := 0
				for pick >= ops[k].weight {
					pick -= ops[k].weight
					k++
				}
				t := time.Now()
				res, err := c.callTool(ctx, ops[k].tool, func(b []byte) []byte { return ops[k].args(r, b) })
				s := sample{op: k, latency: time.Since(t), outcome: "ok"}
				switch {
				case err != nil:
					s.outcome, s.detail = "failed", err.Error()
				case res.IsError:
					txt := res.text()
					if strings.Contains(txt, "rate limit") || strings.Contains(txt, "busy") {
						s.outcome = "refused"
					} else {
						s.outcome, s.detail = "failed", txt
					}
				}
				mine = append(mine, s)
			}
			results <- mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopWatch()
	close(results)
	cpu := cpuTimes(servers)
	for i := range cpu {
		cpu[i] = cpu[i].sub(cpuBefore[i])
	}

	var all []sample
	for r := range results {
		all = append(all, r...)
	}
	err = report(stdout, all, elapsed, *clients, rss)
	reportCPU(stdout, cpu, elapsed, len(all))
	return err
}

func report(w io.Writer, all []sample, elapsed time.Duration, clients int, rss []int64) error {
	pct := func(ls []time.Duration, q float64) float64 {
		if len(ls) == 0 {
			return 0
		}
		return float64(ls[int(q*float64(len(ls)-1))].Microseconds()) / 1000
	}
	fmt.Fprintf(w, "%d clients over Streamable HTTP for %s on loopback.\n\n", clients, elapsed.Round(time.Second))
	fmt.Fprintln(w, "| request | calls | calls/s | p50 ms | p95 ms | p99 ms | refused | failed |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	var failures []string
	var totalOK, totalRefused, totalFailed int
	for k, o := range ops {
		var ls []time.Duration
		var n, refused, failed int
		for _, s := range all {
			if s.op != k {
				continue
			}
			n++
			switch s.outcome {
			case "ok":
				ls = append(ls, s.latency)
			case "refused":
				refused++
			case "failed":
				failed++
				if len(failures) < 5 {
					failures = append(failures, o.name+": "+s.detail)
				}
			}
		}
		slices.Sort(ls)
		totalOK += len(ls)
		totalRefused += refused
		totalFailed += failed
		fmt.Fprintf(w, "| %s | %d | %.0f | %.2f | %.2f | %.2f | %d | %d |\n", o.name, n, float64(len(ls))/elapsed.Seconds(),
			pct(ls, 0.50), pct(ls, 0.95), pct(ls, 0.99), refused, failed)
	}
	var maxRSS, firstRSS int64
	for i, v := range rss {
		if i == 0 {
			firstRSS = v
		}
		maxRSS = max(maxRSS, v)
	}
	var lastRSS int64
	if len(rss) > 0 {
		lastRSS = rss[len(rss)-1]
	}
	fmt.Fprintf(w, "\nAll requests: %d ok (%.0f/s), %d refused (rate limit or busy), %d failed.\n", totalOK, float64(totalOK)/elapsed.Seconds(), totalRefused, totalFailed)
	fmt.Fprintf(w, "Server RSS: %d MiB at the start, %d MiB at most, %d MiB at the end.\n", firstRSS>>10, maxRSS>>10, lastRSS>>10)
	if totalFailed > 0 {
		return fmt.Errorf("%d requests failed, e.g.:\n  %s", totalFailed, strings.Join(failures, "\n  "))
	}
	return nil
}

// startServer starts the binary on a loopback port with limits raised for
// load, and returns it with its base URL. env adds to its environment.
func startServer(bin, data string, pool int, env ...string) (*exec.Cmd, string, error) {
	args := []string{"serve", "--http", "127.0.0.1:0", "--log-level", "warn"}
	if pool > 0 {
		args = append(args, "--pool", strconv.Itoa(pool))
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = serverAttr()
	cmd.Env = append(append(os.Environ(),
		"CODECELL_SERVER_DATA_DIR="+data,
		"CODECELL_LIMITS_EXECUTIONS_PER_MINUTE=100000000",
		"CODECELL_LIMITS_EXECUTION_BURST=100000",
		"CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=100000000",
		"CODECELL_LIMITS_TOOL_CALL_BURST=100000",
		"CODECELL_LIMITS_MAX_IN_FLIGHT=256",
		"CODECELL_LIMITS_MAX_QUEUED=1024",
	), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", bin, err)
	}
	urlRE := regexp.MustCompile(`Streamable HTTP\s+(http://\S+)/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case base := <-found:
		return cmd, base, nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, "", errors.New("the server did not print its address")
	}
}

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS")
}
