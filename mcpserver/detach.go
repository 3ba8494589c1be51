package mcpserver

import (
	"errors"
	"net/http"
	"sync"
)

// detachOnReturn gives next a response writer that lets go of the
// request's writer when next returns. mcp-go keeps each request's
// resumable stream, with the writer it answered on, for the session's
// life; the writers around it (taskNoteWriter, taskResultWriter) hold
// the answer's bytes, so every answer sent as events stayed in memory
// until its session ended: 544 answers of 250 KB in 16 sessions kept
// about 500 MiB (attack15 I7). A write after the return fails, as a
// write to a finished response does.
func detachOnReturn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := &detachingWriter{w: w}
		defer d.detach()
		next.ServeHTTP(d, r)
	})
}

var errResponseFinished = errors.New("the response is finished")

// detachingWriter passes everything on to w until detached.
type detachingWriter struct {
	mu sync.Mutex
	w  http.ResponseWriter
}

func (d *detachingWriter) detach() {
	d.mu.Lock()
	d.w = nil
	d.mu.Unlock()
}

func (d *detachingWriter) writer() http.ResponseWriter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.w
}

func (d *detachingWriter) Header() http.Header {
	if w := d.writer(); w != nil {
		return w.Header()
	}
	return http.Header{}
}

func (d *detachingWriter) Write(p []byte) (int, error) {
	if w := d.writer(); w != nil {
		return w.Write(p)
	}
	return 0, errResponseFinished
}

func (d *detachingWriter) WriteHeader(code int) {
	if w := d.writer(); w != nil {
		w.WriteHeader(code)
	}
}

// Flush flushes the event streams mcp-go writes.
func (d *detachingWriter) Flush() {
	if f, ok := d.writer().(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer, for deadlines.
func (d *detachingWriter) Unwrap() http.ResponseWriter { return d.writer() }
