package executor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"testing"
	"time"
)

func TestProtocolRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := newFrameWriter(&buf)
	spec := &jobSpec{Src: "return args.x", Args: []byte(`{"x":1}`), Memory: 64 << 20, Stack: 5000, MaxCalls: 10,
		MaxLogLines: 3, MaxLogBytes: 100, MaxResult: 1 << 20, Timeout: 3 * time.Second, KillAt: 1 << 40, Nested: true}
	out := outcome{status: outJSError, wrapped: true, kind: KindTool, size: 7, name: "TypeError", message: "m", stack: "s", raw: "r", line: 3, col: 4, payload: []byte(`{"a":1}`)}
	if err := w.write(frameRun, 7, encodeSpec(spec, 42), spec.Args); err != nil {
		t.Fatal(err)
	}
	if err := w.write(frameDone, 8, encodeOutcome(&out), out.payload); err != nil {
		t.Fatal(err)
	}
	r := newFrameReader(&buf)
	f, err := r.read()
	if err != nil || f.typ != frameRun || f.job != 7 {
		t.Fatalf("frame %+v, %v", f, err)
	}
	got, layout, err := decodeSpec(f.body)
	if err != nil || layout != 42 || !reflect.DeepEqual(got, spec) {
		t.Errorf("spec %+v (layout %d, %v), want %+v", got, layout, err, spec)
	}
	f, err = r.read()
	if err != nil || f.typ != frameDone || f.job != 8 {
		t.Fatalf("frame %+v, %v", f, err)
	}
	o, err := decodeOutcome(f.body)
	if err != nil || !reflect.DeepEqual(o, out) {
		t.Errorf("outcome %+v (%v), want %+v", o, err, out)
	}
}

// FuzzFrames feeds the executor's side of the protocol what a broken or
// hostile worker might write: nothing may panic.
func FuzzFrames(f *testing.F) {
	var buf bytes.Buffer
	w := newFrameWriter(&buf)
	w.write(frameDone, 1, encodeOutcome(&outcome{status: outValue}), []byte("1"))
	w.write(frameCall, 1, enc(nil).u32(0).u8(callSole).str("util.echo"), []byte("{}"))
	f.Add(buf.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newFrameReader(bytes.NewReader(b))
		for {
			fr, err := r.read()
			if err != nil {
				return
			}
			decodeOutcome(fr.body)
			decodeSpec(fr.body)
			d := dec{b: fr.body}
			d.u32()
			d.u8()
			d.str()
			d.rest()
		}
	})
}

// TestFrameBodyGrowsAsItArrives: a header that promises a frame of almost
// the largest size costs memory only for the bytes that follow it, and a
// large frame that does arrive is read whole.
func TestFrameBodyGrowsAsItArrives(t *testing.T) {
	hdr := make([]byte, frameHeader)
	binary.LittleEndian.PutUint32(hdr, maxFrame-1)
	hdr[4] = frameDone
	r := newFrameReader(io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(make([]byte, 100))))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.read()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read: %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("allocated %d MB for a frame that brought 100 bytes", n>>20)
	}

	var buf bytes.Buffer
	body := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16+5)
	if err := newFrameWriter(&buf).write(frameDone, 3, body[:7], body[7:]); err != nil {
		t.Fatal(err)
	}
	f, err := newFrameReader(&buf).read()
	if err != nil || f.typ != frameDone || f.job != 3 || !bytes.Equal(f.body, body) {
		t.Errorf("frame of %d bytes, job %d (%v), want %d bytes", len(f.body), f.job, err, len(body))
	}
}
