package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// process is a stdio server's child process, in a process group of its
// own so that Close ends whatever it started too. Its standard streams are
// pipes codecell made itself: stdin and stdout carry JSON-RPC, stderr goes
// to codecell's log.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: the child's standard input
	stdout *os.File // our end: the child's standard output
	tail   *stderrTail

	confined bool // started through Config.Confine

	exited  chan struct{} // closed once the child is reaped
	exitErr error         // what Wait returned; set before exited closes
	stderrD chan struct{} // closed once stderr has been read to its end
}

// Reasons a process could not start, which the server's status shows.
var (
	errCommandNotFound = errors.New("command not found")
)

// startProcess starts the server's command with the resolved arguments
// and environment, through confine unless it is nil or the server is
// unconfined. Its stderr is logged, prefixed with the server's name,
// rate-limited and with secrets replaced.
func startProcess(name string, s Server, r resolved, confine Confine, log *slog.Logger, red redactor) (*process, error) {
	bin, err := lookCommand(s.Command, s.Cwd, r.env)
	if err != nil {
		return nil, err
	}
	l := Launch{Name: name, Path: bin, Args: r.args, Dir: s.Cwd, Env: r.env, ConfigEnv: r.ownEnv}
	confined := confine != nil && !s.Unconfined
	if confined {
		if l, err = confine(l); err != nil {
			return nil, fmt.Errorf("confine: %s", red.String(err.Error()))
		}
	}
	cmd := exec.Command(l.Path, l.Args...)
	cmd.Env = l.Env
	cmd.Dir = l.Dir
	setProcessGroup(cmd)

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		rd, wr, err := os.Pipe()
		if err == nil {
			files = append(files, rd, wr)
		}
		return rd, wr, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("pipes: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	// The child holds its ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{
		confined: confined,
		cmd:      cmd,
		stdin:    inW,
		stdout:   outR,
		tail:     &stderrTail{max: 20},
		exited:   make(chan struct{}),
		stderrD:  make(chan struct{}),
	}
	go func() {
		defer close(p.stderrD)
		p.tail.read(errR, name, log, red)
		errR.Close()
	}()
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// lookCommand finds command as the child would: a name without a slash in
// the child's PATH, a relative path from its working directory.
func lookCommand(command, cwd string, env []string) (string, error) {
	if strings.ContainsRune(command, '/') || (runtime.GOOS == "windows" && strings.ContainsAny(command, `\:`)) {
		p := command
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%w: %s (%v)", errCommandNotFound, command, err)
		}
		return command, nil
	}
	pathList := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && (k == "PATH" || runtime.GOOS == "windows" && strings.EqualFold(k, "PATH")) {
			pathList = v
		}
	}
	exts := []string{""}
	if runtime.GOOS == "windows" {
		exts = []string{"", ".exe", ".cmd", ".bat", ".com"}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the working directory
		}
		for _, ext := range exts {
			p := filepath.Join(dir, command+ext)
			if executable(p) == nil {
				return p, nil
			}
		}
	}
	if pathList == "" {
		return "", fmt.Errorf("%w: %s (the server's PATH is empty; set PATH in its env or give the command's full path)", errCommandNotFound, command)
	}
	return "", fmt.Errorf("%w: %s is not in the server's PATH (%s)", errCommandNotFound, command, shortPath(pathList))
}

// shortPath abbreviates a long PATH for a reason line.
func shortPath(p string) string {
	if len(p) <= 120 {
		return p
	}
	return p[:120] + "…"
}

func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("a directory")
	case runtime.GOOS != "windows" && st.Mode()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// terminate ends the child and everything in its process group: it
// closes stdin (most servers exit on end of input), sends SIGTERM to the
// group, and after grace SIGKILL; once the child is gone, whatever is left
// of its group is killed too. It returns when the child has been reaped.
func (p *process) terminate(grace time.Duration) {
	p.stdin.Close()
	signalGroup(p.cmd.Process, false)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		signalGroup(p.cmd.Process, true)
		<-p.exited
	}
	signalGroup(p.cmd.Process, true) // stragglers that ignored SIGTERM
	p.stdout.Close()
	// A grandchild that left the group may hold stderr open: do not wait
	// for it longer than a moment.
	select {
	case <-p.stderrD:
	case <-time.After(100 * time.Millisecond):
	}
}

// waitExit waits up to d for the child to exit and reports whether it has.
func (p *process) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		p.lastWords()
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// lastWords waits a moment for what the child wrote to stderr before it
// exited to be read.
func (p *process) lastWords() {
	select {
	case <-p.stderrD:
	case <-time.After(200 * time.Millisecond):
	}
}

// exitReason says how the child ended, with its last lines of stderr
// when withTail. A server several principals call may print what one of
// them sent it as it fails (a record it could not process): its stderr
// is then the operator's, in the log, not a reason every principal and
// /readyz show.
func (p *process) exitReason(withTail bool) string {
	msg := exitDescription(p.exitErr)
	last := p.tail.last(5, 600)
	switch {
	case last == "":
	case withTail:
		msg += "; its last stderr: " + last
	default:
		msg += "; its last lines of stderr are in codecell's log"
	}
	return msg
}

// deniedRE finds, in how a server ended, the errors a confinement causes.
var deniedRE = regexp.MustCompile(`(?i)permission denied|operation not permitted|\bEACCES\b|\bEPERM\b`)

// confinedHint is added to the reason of a confined server that ended
// before it answered with a permission error: what the confinement
// denies, and how to lift it.
const confinedHint = " (it runs confined: codecell's data and configuration are out of its reach, and it cannot create files or directories directly in the directories that hold them, such as your home directory; if it needs that, set unconfined = true for it)"

// stderrTail logs a child's stderr line by line and keeps its last lines
// for the reason shown when the child exits.
type stderrTail struct {
	mu    sync.Mutex
	lines []string // as read: scrubbed by red when shown
	max   int
	red   redactor
}

// Stderr is logged at most stderrRate lines a second, in bursts of up to
// stderrBurst; longer lines are cut at maxStderrLine bytes.
const (
	stderrRate    = 20
	stderrBurst   = 100
	maxStderrLine = 2048
)

func (t *stderrTail) read(r io.Reader, name string, log *slog.Logger, red redactor) {
	t.mu.Lock()
	t.red = red
	t.mu.Unlock()
	br := bufio.NewReaderSize(r, maxStderrLine)
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	dropped := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n")
			if errors.Is(err, bufio.ErrBufferFull) {
				text += "…"
				// Skip the rest of the long line.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
			}
			if strings.TrimSpace(text) != "" {
				// Kept as read, scrubbed when shown (last): scrubbing
				// costs, and only the lines logged and shown need it.
				t.add(text)
				if lim.Allow() {
					if dropped > 0 {
						log.Warn(fmt.Sprintf("%s: %d stderr lines not logged (more than %d a second)", name, dropped, stderrRate))
						dropped = 0
					}
					log.Info(name+": "+red.String(text), "stream", "stderr")
				} else {
					dropped++
				}
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if dropped > 0 {
		log.Warn(fmt.Sprintf("%s: %d stderr lines not logged (more than %d a second)", name, dropped, stderrRate))
	}
}

func (t *stderrTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// last joins up to n last lines, at most limit bytes, oldest first.
func (t *stderrTail) last(n, limit int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := slices.Clone(t.lines[max(0, len(t.lines)-n):])
	for i, l := range lines {
		// Scrubbed whole, then cut: no secret is cut in two.
		if l = t.red.String(l); len(l) > 300 {
			l = cutBytes(l, 300) + "…"
		}
		lines[i] = l
	}
	out := strings.Join(lines, " | ")
	if len(out) > limit {
		out = "…" + out[len(out)-limit:]
	}
	return out
}
