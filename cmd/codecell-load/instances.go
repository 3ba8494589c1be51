package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codecell/codecell/cmd/codecell-load/balancer"
)

// startServers starts n servers on one store in data (or the one
// storeEnv names), and, for more than one, a balancer in front of them; it
// returns the servers, the base URL clients use, and a function that stops
// everything.
func startServers(bin, data string, pool, n int, storeEnv []string) ([]*exec.Cmd, string, func(), error) {
	var servers []*exec.Cmd
	stop := func() {
		for _, srv := range servers {
			srv.Process.Signal(syscall.SIGTERM)
		}
		for _, srv := range servers {
			srv.Wait()
		}
	}
	if n == 1 {
		srv, base, err := startServer(bin, data, pool, storeEnv...)
		if err != nil {
			return nil, "", nil, err
		}
		return []*exec.Cmd{srv}, base, stop, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, "", nil, err
	}
	env := storeEnv
	if len(env) == 0 {
		env = []string{"CODECELL_MEMORY_PATH=" + filepath.Join(data, "shared.db")}
	}
	env = append(env,
		"CODECELL_CLUSTER_SHARED=true",
		"CODECELL_CLUSTER_KEY_ENV=CODECELL_LOAD_FILTER_KEY",
		"CODECELL_LOAD_FILTER_KEY="+hex.EncodeToString(key),
	)
	var urls []string
	for i := range n {
		dir := filepath.Join(data, fmt.Sprintf("instance-%d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			stop()
			return nil, "", nil, err
		}
		srv, base, err := startServer(bin, dir, pool, env...)
		if err != nil {
			stop()
			return nil, "", nil, fmt.Errorf("instance %d: %w", i, err)
		}
		servers = append(servers, srv)
		urls = append(urls, base)
	}
	lb, err := balancer.New(urls)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	hs := &http.Server{Handler: lb, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return servers, "http://" + ln.Addr().String(), func() {
		hs.Close()
		stop()
	}, nil
}

// cpuUse is the CPU time a server has used: its own process's, and its
// sandbox workers' (its children, live or waited for).
type cpuUse struct{ process, workers time.Duration }

func (c cpuUse) total() time.Duration { return c.process + c.workers }

func (c cpuUse) sub(d cpuUse) cpuUse {
	return cpuUse{c.process - d.process, c.workers - d.workers}
}

// cpuTimes returns the CPU time each server has used, then this
// process's own (the clients and the balancer), last, as its process
// time: its own only, as the servers are its children.
func cpuTimes(servers []*exec.Cmd) []cpuUse {
	out := make([]cpuUse, 0, len(servers)+1)
	for _, srv := range servers {
		c, _ := procCPU(srv.Process.Pid)
		out = append(out, c)
	}
	own, _, _, _ := statCPU(os.Getpid())
	return append(out, cpuUse{process: own})
}

// procCPU reads the CPU time of a process and of its children: a server's
// sandbox workers are its children (the time of those it has waited for
// is in its own cutime and cstime).
func procCPU(pid int) (cpuUse, error) {
	own, waited, _, err := statCPU(pid)
	if err != nil {
		return cpuUse{}, err
	}
	c := cpuUse{process: own, workers: waited}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		k, err := strconv.Atoi(e.Name())
		if err != nil || k == pid {
			continue
		}
		if own, waited, ppid, err := statCPU(k); err == nil && ppid == pid {
			c.workers += own + waited
		}
	}
	return c, nil
}

// statCPU is utime + stime, and cutime + cstime, from /proc/PID/stat, and
// the parent's PID.
func statCPU(pid int) (own, waited time.Duration, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, errors.New("bad /proc stat")
	}
	// After the command: state, ppid, …; utime is the line's field 14,
	// here f[11], then stime, cutime, cstime.
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0, 0, errors.New("short /proc stat")
	}
	ppid, _ = strconv.Atoi(f[1])
	var ticks [4]int64
	for k, x := range f[11:15] {
		if ticks[k], err = strconv.ParseInt(x, 10, 64); err != nil {
			return 0, 0, 0, err
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / 100 } // USER_HZ
	return tick(ticks[0] + ticks[1]), tick(ticks[2] + ticks[3]), ppid, nil
}

// reportCPU says how busy each server and the driver were over the run,
// and their CPU time per request answered: where the time went.
func reportCPU(w io.Writer, cpu []cpuUse, elapsed time.Duration, requests int) {
	var parts []string
	var servers cpuUse
	for i, c := range cpu[:len(cpu)-1] {
		servers.process += c.process
		servers.workers += c.workers
		parts = append(parts, fmt.Sprintf("server %d %.1f s", i+1, c.total().Seconds()))
	}
	driver := cpu[len(cpu)-1].process
	fmt.Fprintf(w, "CPU: %s; servers %.2f cores, clients and balancer %.2f cores of %d (over %s).\n",
		strings.Join(parts, ", "), servers.total().Seconds()/elapsed.Seconds(), driver.Seconds()/elapsed.Seconds(), runtime.NumCPU(), elapsed.Round(time.Second))
	if requests > 0 {
		perReq := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(requests) }
		fmt.Fprintf(w, "CPU per request: servers %.3f ms (their processes %.3f, their sandbox workers %.3f), clients and balancer %.3f ms.\n",
			perReq(servers.total()), perReq(servers.process), perReq(servers.workers), perReq(driver))
	}
}
