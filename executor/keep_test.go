package executor

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// jobHostFunc is a fake jobHost: call is told of each tool call.
type jobHostFunc struct {
	onCall func(id uint32, name, args string)
}

func (h jobHostFunc) call(id uint32, name, args string) { h.onCall(id, name, args) }
func (jobHostFunc) log(int, string)                     {}
func (jobHostFunc) progress(string, float64)            {}

// bigResult is a JSON array of n objects, about 60 bytes each.
func bigResult(n int) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"order-` + strconv.Itoa(i) + `","status":"paid","total":12.5}`)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// runKept runs src on a fresh VM whose tool calls all return result, and
// returns the outcome and the instance, still open.
func runKept(t *testing.T, src string, result []byte, memory int64) (outcome, *instance) {
	t.Helper()
	prelude, err := compilePrelude()
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(prelude, NewLayout([]Function{{Name: "util.big"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.close)
	spec := &jobSpec{Src: src, Memory: memory, Stack: 256 << 10, MaxCalls: 1000, MaxLogLines: 10,
		MaxLogBytes: 1000, MaxResult: 1 << 20, Timeout: 30 * time.Second}
	var j *vmJob
	j = newVMJob(spec, jobHostFunc{onCall: func(id uint32, _, _ string) {
		j.inbox.push(callResult{id: id, ok: true, payload: result})
	}})
	return j.run(in), in
}

// TestLargeResultKeptUntilClose: a large result the program drops is
// still held by its VM when the run ends (so that freeing it waits for
// the VM's close, off the run's path), and no more than the run's share
// of its memory limit is held, so that a program that drops one large
// result after another still fits where it did.
func TestLargeResultKeptUntilClose(t *testing.T) {
	t.Parallel()
	big := bigResult(2000) // about 120 KB
	t.Run("kept", func(t *testing.T) {
		t.Parallel()
		out, in := runKept(t, `const r = await util.big({}); return r.length`, big, 64<<20)
		if out.status != outValue || string(out.payload) != "2000" {
			t.Fatalf("outcome %d %s %s", out.status, out.payload, out.message)
		}
		if len(in.kept) != 1 || in.keptBytes != len(big) {
			t.Fatalf("kept %d results, %d bytes; want 1, %d", len(in.kept), in.keptBytes, len(big))
		}
	})
	t.Run("within the share", func(t *testing.T) {
		t.Parallel()
		// 40 results of 120 KB, each dropped, under an 8 MiB limit: kept
		// whole they would need far more than the limit.
		out, in := runKept(t, `let n = 0; for (let i = 0; i < 40; i++) n += (await util.big({})).length; return n`, big, 8<<20)
		if out.status != outValue || string(out.payload) != "80000" {
			t.Fatalf("outcome %d %s kind %s %s", out.status, out.payload, out.kind, out.message)
		}
		if limit := (8 << 20) / keptShare; in.keptBytes > limit || len(in.kept) != limit/len(big) {
			t.Fatalf("kept %d results, %d bytes; want %d, at most %d", len(in.kept), in.keptBytes, limit/len(big), limit)
		}
	})
	t.Run("small results are not kept", func(t *testing.T) {
		t.Parallel()
		out, in := runKept(t, `return (await util.big({})).length`, bigResult(10), 64<<20)
		if out.status != outValue || len(in.kept) != 0 {
			t.Fatalf("outcome %d %s, kept %d", out.status, out.payload, len(in.kept))
		}
	})
}
