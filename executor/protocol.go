package executor

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// The protocol between the executor and a sandbox worker: length-prefixed
// binary frames over the worker's stdin and stdout.
//
//	frame = size u32 | type u8 | job u32 | body
//
// size counts the bytes after itself; integers are little-endian. Payloads
// that are JSON already (tool arguments and results, a program's result,
// the prelude's description of an exception) cross as they are, never
// decoded and encoded again on the way.
//
// The worker speaks first, with frameHello; after that the executor sends
// frameLayout before the first job that uses a layout, frameRun to start a
// job, frameResult for each finished tool call and frameInterrupt to stop a
// job. The worker sends frameCall, frameLog and frameProgress while a job
// runs, frameAck once its VM has taken results, and frameDone when it is
// over; frameReady says that the VM of the
// next root job is prepared. Frames of a job the other side no longer
// knows are dropped: a tool call may finish after its job did.
const (
	frameHello     byte = 1  // worker → executor: body is workerMagic
	frameLayout    byte = 2  // executor → worker: u32 layout id | layout JSON
	frameRun       byte = 3  // executor → worker: jobSpec
	frameResult    byte = 4  // executor → worker: u32 call id | u8 resultFlags | JSON
	frameInterrupt byte = 5  // executor → worker: empty
	frameCall      byte = 6  // worker → executor: u32 call id | u8 flags (callSole) | string name | args JSON
	frameLog       byte = 7  // worker → executor: u8 level | text
	frameProgress  byte = 8  // worker → executor: f64 fraction | message
	frameDone      byte = 9  // worker → executor: outcome
	frameReady     byte = 10 // worker → executor: empty; job is the latest root job it had when the next one's VM was ready
	frameAck       byte = 11 // worker → executor: u32 call id, repeated: the calls whose results the job's VM has taken
	frameHeader         = 4 + 1 + 4
	// maxFrame bounds a frame's size: a tool result or a program's result
	// is at most a heap, and a heap at most a few GiB.
	maxFrame = 1<<31 - 1
)

// callSole flags a call that the job's VM waits for alone, in a worker
// that runs no other job: until it completes, nothing but that call's
// completion can happen in the worker, so the executor may run it on the
// goroutine that reads the worker's frames (see worker.read).
const callSole byte = 1

// The flags of a frameResult. A result the dispatcher hands early
// (Call.Prepare) crosses as resultPrepared, its JSON to be built into the
// VM while the server still decides whether the program may have it;
// resultConfirmed then settles the call with the value built (no JSON),
// or a result with neither flag replaces it (the call's error, or a
// different result), the value built dropped unseen.
const (
	resultOK        byte = 1
	resultPrepared  byte = 2
	resultConfirmed byte = 4
)

// workerMagic opens every worker's output: anything else on its stdout
// means the command is not a sandbox worker.
const workerMagic = "codecell-sandbox-worker/4"

var errFrame = errors.New("malformed frame")

// frame is one decoded frame. body aliases the reader's buffer only until
// the next read.
type frame struct {
	typ  byte
	job  uint32
	body []byte
}

// frameReader reads frames from a stream.
type frameReader struct {
	r   *bufio.Reader
	hdr [frameHeader]byte
	// max bounds the frames it accepts: the executor accepts from a
	// worker what a VM can produce, no more.
	max uint32
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: maxFrame}
}

// read returns the next frame, with a body of its own.
func (fr *frameReader) read() (frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return frame{}, err
	}
	size := binary.LittleEndian.Uint32(fr.hdr[0:4])
	if size < frameHeader-4 || size > fr.max {
		return frame{}, fmt.Errorf("%w: size %d", errFrame, size)
	}
	f := frame{typ: fr.hdr[4], job: binary.LittleEndian.Uint32(fr.hdr[5:9])}
	if n := int(size) - (frameHeader - 4); n > 0 {
		body, err := readBody(fr.r, n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return frame{}, err
		}
		f.body = body
	}
	return f, nil
}

// bodyChunk is the most of a frame's body that is allocated before it
// arrives.
const bodyChunk = 1 << 20

// readBody reads a body of n bytes. A large one grows as its bytes
// arrive, at most doubling, so that a header that promises gigabytes
// costs memory only for what the other side really sends.
func readBody(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, min(n, bodyChunk))
	got := 0
	for {
		k, err := io.ReadFull(r, b[got:])
		got += k
		if err != nil {
			return nil, err
		}
		if got == n {
			return b, nil
		}
		b = append(b, make([]byte, min(n-got, len(b)))...)
	}
}

// frameWriter writes whole frames to a stream; it is safe for concurrent
// use.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// write sends one frame made of head and tail, which it does not keep.
// After a failed write every later one fails too.
func (fw *frameWriter) write(typ byte, job uint32, head, tail []byte) error {
	n := frameHeader - 4 + len(head) + len(tail)
	if n > maxFrame {
		return fmt.Errorf("%w: %d bytes is too large", errFrame, n)
	}
	var hdr [frameHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:4], uint32(n))
	hdr[4] = typ
	binary.LittleEndian.PutUint32(hdr[5:9], job)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return fw.err
	}
	fw.w.Write(hdr[:])
	fw.w.Write(head)
	fw.w.Write(tail)
	fw.err = fw.w.Flush()
	return fw.err
}

// writeFrames sends frames made by appendFrame, in one write.
func (fw *frameWriter) writeFrames(bs ...[]byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return fw.err
	}
	for _, b := range bs {
		fw.w.Write(b)
	}
	fw.err = fw.w.Flush()
	return fw.err
}

// appendFrame appends a whole frame made of head and tail to b, for
// writeFrames.
func appendFrame(b []byte, typ byte, job uint32, head, tail []byte) ([]byte, error) {
	n := frameHeader - 4 + len(head) + len(tail)
	if n > maxFrame {
		return b, fmt.Errorf("%w: %d bytes is too large", errFrame, n)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, typ)
	b = binary.LittleEndian.AppendUint32(b, job)
	b = append(b, head...)
	return append(b, tail...), nil
}

// enc appends the fields of a frame body.
type enc []byte

func (e enc) u8(v uint8) enc   { return append(e, v) }
func (e enc) u32(v uint32) enc { return binary.LittleEndian.AppendUint32(e, v) }
func (e enc) u64(v uint64) enc { return binary.LittleEndian.AppendUint64(e, v) }
func (e enc) bool(v bool) enc {
	if v {
		return append(e, 1)
	}
	return append(e, 0)
}
func (e enc) str(s string) enc { return append(e.u32(uint32(len(s))), s...) }

// dec reads the fields of a frame body; after the first short read every
// field is zero and err is set.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || len(d.b) < n {
		d.err = errFrame
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *dec) bool() bool { return d.u8() != 0 }
func (d *dec) str() string {
	return string(d.take(int(d.u32())))
}

// rest returns what is left of the body.
func (d *dec) rest() []byte {
	if d.err != nil {
		return nil
	}
	r := d.b
	d.b = nil
	return r
}

// encodeSpec writes a job's specification; the program's arguments go
// last, as they are.
func encodeSpec(s *jobSpec, layoutID uint32) enc {
	e := make(enc, 0, 64+len(s.Src))
	e = e.u32(layoutID).u64(uint64(s.Memory)).u32(uint32(s.Stack)).u32(uint32(s.MaxCalls)).
		u32(uint32(s.MaxLogLines)).u32(uint32(s.MaxLogBytes)).u64(uint64(s.MaxResult)).
		u64(uint64(s.Timeout)).u64(uint64(s.KillAt)).bool(s.Nested).bool(s.Pin != nil)
	if s.Pin != nil {
		e = e.u64(s.Pin.Seed).u64(uint64(s.Pin.Now.UnixMilli()))
	}
	e = e.bool(s.Args != nil).str(s.Src)
	return e
}

func decodeSpec(body []byte) (*jobSpec, uint32, error) {
	d := dec{b: body}
	layout := d.u32()
	s := &jobSpec{
		Memory:      int64(d.u64()),
		Stack:       int(d.u32()),
		MaxCalls:    int(d.u32()),
		MaxLogLines: int(d.u32()),
		MaxLogBytes: int(d.u32()),
		MaxResult:   int(d.u64()),
		Timeout:     time.Duration(d.u64()),
		KillAt:      int64(d.u64()),
		Nested:      d.bool(),
	}
	if d.bool() {
		s.Pin = &Pin{Seed: d.u64(), Now: time.UnixMilli(int64(d.u64()))}
	}
	hasArgs := d.bool()
	s.Src = d.str()
	if hasArgs {
		s.Args = d.rest()
		if s.Args == nil {
			s.Args = []byte{}
		}
	}
	return s, layout, d.err
}

// encodeOutcome writes how a job ended; the payload goes last, as it is.
func encodeOutcome(o *outcome) enc {
	e := make(enc, 0, 64+len(o.name)+len(o.message)+len(o.stack)+len(o.raw))
	return e.u8(uint8(o.status)).bool(o.wrapped).str(string(o.kind)).u64(uint64(o.size)).
		u32(uint32(o.line)).u32(uint32(o.col)).str(o.name).str(o.message).str(o.stack).str(o.raw)
}

func decodeOutcome(body []byte) (outcome, error) {
	d := dec{b: body}
	o := outcome{
		status:  outcomeStatus(d.u8()),
		wrapped: d.bool(),
		kind:    Kind(d.str()),
		size:    int64(d.u64()),
		line:    int(d.u32()),
		col:     int(d.u32()),
		name:    d.str(),
		message: d.str(),
		stack:   d.str(),
		raw:     d.str(),
	}
	o.payload = d.rest()
	return o, d.err
}

func f64bits(f float64) uint64     { return math.Float64bits(f) }
func f64frombits(u uint64) float64 { return math.Float64frombits(u) }
