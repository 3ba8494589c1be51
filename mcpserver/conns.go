package mcpserver

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Connections. Every write to an HTTP client has a deadline, whoever
// writes it: a client that stops reading fails the write and loses its
// connection, rather than keeping a descriptor, a goroutine and the
// answer for ever. Handlers that know better set their own deadline
// (an answer's write waits writeWait of its size, an SSE event
// sseWriteTimeout); when none is set, each write to the connection gets
// writeWait of its own size. Before this, a connection that pipelined
// requests to /healthz and never read its answers stayed open for ever,
// its goroutine blocked in a write, counted in no bound (attack17).
//
// The number of connections open at once is bounded too, below the
// process's descriptor limit, so that connections alone cannot take the
// descriptors the store, the sandbox workers and the upstreams need.

// maxConnsCap bounds the connections open at once whatever the
// descriptor limit: each costs the server some 10 KiB at least.
const maxConnsCap = 16384

// maxHeaderBytes bounds a request's line and headers, which net/http
// reads before any handler — before the guard, the token, the bounds of
// bodies: with net/http's default (1 MiB), 1,000 connections with no
// token, each sending most of a megabyte of header and never ending it,
// took the server from 50 to 1,190 MiB until ReadHeaderTimeout closed
// them, and maxConnsCap of them would hold 16 GiB (issue 19, attack26
// T5). 16 KiB holds a long OAuth token and MCP's headers (nginx's
// default is four buffers of 8 KiB); net/http answers a longer request
// 431 and closes its connection. maxConnsCap connections then hold at
// most 320 MiB of headers (net/http reads 4 KiB past the bound).
const maxHeaderBytes = 16 << 10

// maxConns is the connections the server keeps open at once: half the
// process's descriptor limit, at most maxConnsCap, at least 64.
func maxConns() int {
	var lim syscall.Rlimit
	n := maxConnsCap
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/2 < uint64(n) {
		n = int(lim.Cur / 2)
	}
	return max(n, 64)
}

// connListener bounds the connections open at once and gives each
// write a deadline. At the bound, a new connection takes the place of one
// that serves no request of a client known to the server — idle between
// requests, not yet past its first request's headers, or serving a
// request that has not passed the guard (its token checked and its body
// read): a client with no token held half the descriptor limit of idle
// keep-alive connections (attack19 L1), and then of connections reading
// (discarding) the late bodies of requests to /healthz, which net/http
// does in StateActive (attack22 P2); every other client's new connection
// was closed at once. Of those, the one closed is of the remote address
// holding the most connections, idle the longest: one peer's connections
// give way to each other before another peer's. Only when every
// connection serves a request that passed the guard is the new one
// closed as soon as it is accepted, so that the kernel's queue does not
// keep it either.
type connListener struct {
	net.Listener
	max  int64
	wait func(n int) time.Duration // the deadline of a write of n bytes
	open atomic.Int64

	mu      sync.Mutex
	conns   map[*boundConn]struct{} // open, for the choice of one to close
	byAddr  map[string]int          // open connections by remoteKey
	refused int64                   // connections closed past the bound since the last warning
	warned  time.Time
	warn    func(open, refused int64)
}

func newConnListener(ln net.Listener, max int, wait func(int) time.Duration, warn func(open, refused int64)) *connListener {
	return &connListener{Listener: ln, max: int64(max), wait: wait, warn: warn, conns: map[*boundConn]struct{}{}, byAddr: map[string]int{}}
}

func (l *connListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			if !l.closeLeastBusy() {
				c.Close()
				l.refusedOne()
				continue
			}
			l.open.Add(1)
		}
		bc := &boundConn{Conn: c, l: l, addr: remoteKey(c.RemoteAddr())}
		bc.since.Store(time.Now().UnixNano())
		l.mu.Lock()
		l.conns[bc] = struct{}{}
		l.byAddr[bc.addr]++
		l.mu.Unlock()
		return bc, nil
	}
}

// remoteKey is the peer a connection counts for: its IP address, or for
// IPv6 its /64 — one host's usual allocation.
func remoteKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.Network()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// closeLeastBusy closes, if one serves no request that passed the guard,
// the open connection of the remote address holding the most that has
// served nothing for the longest, and reports whether it did.
func (l *connListener) closeLeastBusy() bool {
	l.mu.Lock()
	var victim *boundConn
	most := 0
	for c := range l.conns {
		if c.busy.Load() {
			continue
		}
		n := l.byAddr[c.addr]
		if victim == nil || n > most || n == most && c.since.Load() < victim.since.Load() {
			victim, most = c, n
		}
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

// track follows each connection's state for closeLeastBusy: it is the
// http.Server's ConnState hook.
func (l *connListener) track(c net.Conn, state http.ConnState) {
	bc, ok := c.(*boundConn)
	if !ok {
		return
	}
	switch state {
	case http.StateActive:
		bc.busy.Store(false) // until its request passes the guard (serving)
	case http.StateHijacked:
		bc.busy.Store(true)
	case http.StateIdle:
		bc.busy.Store(false)
		bc.since.Store(time.Now().UnixNano())
	}
}

type connKey struct{}

// connContext puts a request's connection in its context, for serving:
// it is the http.Server's ConnContext hook.
func (l *connListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if bc, ok := c.(*boundConn); ok {
		return context.WithValue(ctx, connKey{}, bc)
	}
	return ctx
}

// serving notes that the request of ctx passed the guard — its token
// checked, its body read: its connection is no longer closed for a new
// one at the bound until it is idle again.
func serving(ctx context.Context) {
	if bc, ok := ctx.Value(connKey{}).(*boundConn); ok {
		bc.busy.Store(true)
	}
}

// refusedOne counts a connection closed past the bound and warns at most
// once a minute.
func (l *connListener) refusedOne() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused++
	if now := time.Now(); now.Sub(l.warned) >= time.Minute {
		l.warned = now
		if l.warn != nil {
			l.warn(l.open.Load(), l.refused)
		}
		l.refused = 0
	}
}

// boundConn is a connection whose writes have a deadline: its holder's,
// when it set one, else wait of each write's size.
type boundConn struct {
	net.Conn
	l        *connListener
	addr     string       // remoteKey of its peer
	explicit atomic.Bool  // a write deadline was set and not cleared
	busy     atomic.Bool  // serving a request that passed the guard (serving)
	since    atomic.Int64 // when it was accepted or last became idle, in Unix nanoseconds
	closed   sync.Once
}

func (c *boundConn) Write(p []byte) (int, error) {
	if !c.explicit.Load() {
		c.Conn.SetWriteDeadline(time.Now().Add(c.l.wait(len(p))))
	}
	return c.Conn.Write(p)
}

func (c *boundConn) SetWriteDeadline(t time.Time) error {
	c.explicit.Store(!t.IsZero())
	return c.Conn.SetWriteDeadline(t)
}

func (c *boundConn) SetDeadline(t time.Time) error {
	c.explicit.Store(!t.IsZero())
	return c.Conn.SetDeadline(t)
}

// CloseWrite lets net/http half-close the connection after a request
// whose body it did not read, as it does on a *net.TCPConn.
func (c *boundConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *boundConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		if c.l.byAddr[c.addr]--; c.l.byAddr[c.addr] <= 0 {
			delete(c.l.byAddr, c.addr)
		}
		c.l.mu.Unlock()
		c.l.open.Add(-1)
	})
	return err
}
