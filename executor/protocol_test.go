package executor

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestProtocolRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := newFrameWriter(&buf)
	spec := &jobSpec{Src: "return args.x", Args: []byte(`{"x":1}`), Memory: 64 << 20, Stack: 5000, MaxCalls: 10,
		MaxLogLines: 3, MaxLogBytes: 100, MaxResult: 1 << 20, Timeout: 3 * time.Second, Nested: true}
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
	w.write(frameCall, 1, enc(nil).u32(0).str("util.echo"), []byte("{}"))
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
			d.str()
			d.rest()
		}
	})
}
