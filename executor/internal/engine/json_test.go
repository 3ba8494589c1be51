package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	lib "modernc.org/libquickjs"
)

// same is a deep comparison in the VM: the same types, numbers (-0 apart
// from 0, int and float alike), strings code unit for code unit, keys in
// the same order, the same prototypes and property attributes.
const same = `(function same(a, b) {
  if (typeof a !== typeof b) return "type " + typeof a + " vs " + typeof b;
  if (a === null || b === null || typeof a !== "object") {
    if (Object.is(a, b)) return "";
    return "value " + JSON.stringify(a) + " vs " + JSON.stringify(b) + (typeof a === "string" ? " (" + a.length + "/" + b.length + ")" : "");
  }
  if (Array.isArray(a) !== Array.isArray(b)) return "array vs object";
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return "prototype";
  if (Object.isExtensible(a) !== Object.isExtensible(b)) return "extensible";
  const ka = Reflect.ownKeys(a), kb = Reflect.ownKeys(b);
  if (ka.length !== kb.length) return "keys " + ka.length + " vs " + kb.length;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return "key " + String(ka[i]) + " vs " + String(kb[i]);
    const da = Object.getOwnPropertyDescriptor(a, ka[i]), db = Object.getOwnPropertyDescriptor(b, kb[i]);
    if (da.writable !== db.writable || da.enumerable !== db.enumerable || da.configurable !== db.configurable) return "attributes of " + String(ka[i]);
    const d = same(a[ka[i]], b[kb[i]]);
    if (d) return String(ka[i]) + ": " + d;
  }
  return "";
})`

// compare parses text with ParseJSON and with JSON.parse and reports how
// they differ: "" when alike, or which accepted it.
func compare(t testing.TB, vm *VM, cmp, parse Value, text []byte) string {
	t.Helper()
	got, gotErr := vm.ParseJSON(text)
	s, err := vm.NewString(string(text))
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr := vm.Call(parse, Undefined, s)
	vm.Free(s)
	defer vm.Free(got)
	defer vm.Free(want)
	var je *Error
	if wantErr != nil && (!errors.As(wantErr, &je) || je.Name != "SyntaxError") {
		return "JSON.parse failed: " + wantErr.Error()
	}
	switch {
	case gotErr != nil && wantErr != nil:
		return ""
	case gotErr != nil:
		return "ParseJSON refused what JSON.parse took: " + gotErr.Error()
	case wantErr != nil:
		return "ParseJSON took what JSON.parse refused: " + wantErr.Error()
	}
	d, err := vm.Call(cmp, Undefined, got, want)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Free(d)
	diff, _ := vm.String(d)
	return diff
}

func newCompare(t testing.TB) (*VM, Value, Value) {
	t.Helper()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	cmp, err := vm.Eval(same, EvalGlobal)
	if err != nil {
		t.Fatal(err)
	}
	parse, err := vm.Eval("JSON.parse", EvalGlobal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Free(cmp); vm.Free(parse) })
	return vm, cmp, parse
}

var jsonCases = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `123456789`, `1234567890`, `-2147483648`, `2147483647`, `2147483648`,
	`1.5`, `-0.0`, `1e2`, `1E+2`, `1e-2`, `0.1`, `1e400`, `-1e400`, `5e-324`, `9007199254740993`, `1.0`, `-0e5`,
	`""`, `"a"`, `"é"`, `"✓ check"`, `"😀"`, `"\"\\\/\b\f\n\r\t"`, `"\u0041\u00e9\u2713"`, `"\ud83d\ude00"`,
	`"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, `"\u0000"`, `"a\u0000b"`, "\"\xff\"", "\"a\xc3\"", "\"\xe2\x9c\"",
	`[]`, `{}`, `[1,2,3]`, ` [ 1 , "x" , null ] `, `{"a":1,"b":[true,false],"c":{"d":"e"}}`,
	`{"a":1,"a":2}`, `{"__proto__":{"x":1}}`, `{"2":"two","1":"one","b":0,"a":0}`, `{"":1}`, `{"\u00e9":1,"é":2}`,
	`{"constructor":1,"toString":2,"hasOwnProperty":3}`, `{"k\n":"v"}`, "{\"\xff\":1}",
	`[[[[[]]]]]`, `{"a":{"b":{"c":{}}}}`, `[{"id":1,"t":"x"},{"id":2,"t":"y"}]`,
	// Repeated key sequences (the keys the parser predicts), with
	// prefixes, other orders, duplicates, __proto__ and index keys.
	`[{"a":1,"b":2},{"a":3,"b":4},{"a":5,"b":6,"c":7},{"a":1},{"b":1,"a":2},{"a":1,"b":{"a":1,"b":2}},{"a":1,"b":2,"c":3}]`,
	`[{"a":1,"a":2},{"a":1,"a":2},{"a":1,"a":2,"b":3},{"a":1,"b":2,"a":3}]`,
	`[{"__proto__":1,"x":2},{"__proto__":3,"x":4},{"__proto__":5,"x":6}]`,
	`[{"0":1,"1":2,"x":3},{"0":3,"1":4,"x":5},{"1":5,"0":6,"x":7}]`,
	`[{"a\u0062":1,"c":2},{"ab":1,"c":2},{"ab":1,"c":2}]`,
	// Not JSON.
	``, ` `, `nul`, `tru`, `01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, `"`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`,
	"\"a\nb\"", "\"\t\"", `[1,]`, `[,1]`, `{"a":1,}`, `{a:1}`, `{"a" 1}`, `{"a":}`, `[1 2]`, `1 2`, `[`, `{`, `]`, `NaN`,
	`Infinity`, `'a'`, `[1]x`, "\u00a0 1", "\v1", `{"a":1}}`, `"\/"`,
}

func TestParseJSONLikeJSONParse(t *testing.T) {
	vm, cmp, parse := newCompare(t)
	for _, c := range jsonCases {
		if d := compare(t, vm, cmp, parse, []byte(c)); d != "" {
			t.Errorf("%q: %s", c, d)
		}
	}
}

// TestParseJSONResult parses a realistic tool result of about 1 MB.
func TestParseJSONResult(t *testing.T) {
	vm, cmp, parse := newCompare(t)
	if d := compare(t, vm, cmp, parse, bigJSON(t)); d != "" {
		t.Error(d)
	}
}

func TestParseJSONLimits(t *testing.T) {
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	if _, err := vm.ParseJSON([]byte(deep)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("nested %d deep: %v, want ErrTooDeep", MaxJSONDepth+1, err)
	}
	ok := strings.Repeat(`{"a":`, MaxJSONDepth) + "1" + strings.Repeat("}", MaxJSONDepth)
	v, err := vm.ParseJSON([]byte(ok))
	if err != nil {
		t.Fatalf("nested %d deep: %v", MaxJSONDepth, err)
	}
	vm.Free(v)

	vm.SetMemoryLimit(1 << 20)
	if _, err := vm.ParseJSON(bigJSON(t)); !errors.Is(err, ErrNoMemory) {
		t.Errorf("1 MB under a 1 MiB heap: %v, want ErrNoMemory", err)
	}
	vm.SetMemoryLimit(64 << 20)
	v, err = vm.ParseJSON([]byte(`{"after":"the heap was full"}`))
	if err != nil {
		t.Fatalf("after running out of memory: %v", err)
	}
	vm.Free(v)
}

// TestParseJSONDefersCollection: once a large value is built, the heap
// may grow by half again before the cycle collector walks it, as after a
// collection; the program's first allocation does not pay for a walk of
// everything just built (which would free nothing of it).
func TestParseJSONDefersCollection(t *testing.T) {
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	v, err := vm.ParseJSON(bigJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Free(v)
	rt := (*lib.TJSRuntime)(ptr(vm.rt))
	size := rt.Fmalloc_ctx.Fmalloc_state.Fmalloc_size
	if got, want := rt.Fmalloc_gc_threshold, size+size>>1; got < want {
		t.Errorf("collection threshold %d after building %d bytes of heap, want at least %d", got, size, want)
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	vm, cmp, parse := newCompare(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if d := compare(t, vm, cmp, parse, b); d != "" {
			t.Errorf("%q: %s", b, d)
		}
	})
}

// bigJSON is a tool result of about 1 MB: rows as a search or a list tool
// returns them (the executor's benchmarks use the same).
func bigJSON(tb testing.TB) []byte {
	tb.Helper()
	type row struct {
		ID       int      `json:"id"`
		Title    string   `json:"title"`
		State    string   `json:"state"`
		Comments int      `json:"comments"`
		Author   string   `json:"author"`
		Labels   []string `json:"labels"`
		Body     string   `json:"body"`
	}
	rows := make([]row, 3000)
	for i := range rows {
		state := "open"
		if i%3 == 0 {
			state = "closed"
		}
		rows[i] = row{ID: i, Title: fmt.Sprintf("Issue number %d about the parser", i), State: state, Comments: i % 17,
			Author: fmt.Sprintf("user%d", i%101), Labels: []string{"bug", "parser"},
			Body: "Steps to reproduce: run the parser on the attached file and watch it fail. Expected: no failure. Actual: a failure ✓."}
	}
	b, err := json.Marshal(map[string]any{"total": len(rows), "items": rows})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParseJSON compares ParseJSON with the engine's JSON.parse on
// the same 1 MB result: MB/s is the text's size, cpu-MB/s the same over
// this process's CPU time, which a loaded machine inflates less.
func BenchmarkParseJSON(b *testing.B) {
	data := bigJSON(b)
	vm, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	parse, err := vm.Eval("JSON.parse", EvalGlobal)
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Free(parse)
	b.Run("ParseJSON", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		defer reportCPU(b, len(data))()
		for b.Loop() {
			v, err := vm.ParseJSON(data)
			if err != nil {
				b.Fatal(err)
			}
			vm.Free(v)
		}
	})
	b.Run("JSON.parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		defer reportCPU(b, len(data))()
		for b.Loop() {
			s, err := vm.NewString(string(data))
			if err != nil {
				b.Fatal(err)
			}
			v, err := vm.Call(parse, Undefined, s)
			if err != nil {
				b.Fatal(err)
			}
			vm.Free(s)
			vm.Free(v)
		}
	})
}

// reportCPU reports the bytes processed per second of this process's CPU
// time, from now until the function it returns is called.
func reportCPU(b *testing.B, bytes int) func() {
	start := cpuTime()
	return func() {
		if d := cpuTime() - start; d > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestParseJSONWitnesses: rows of the same keys get their witnesses
// once, and objects whose keys never repeat cost at most the bound
// (ladderSlack and a quarter of the properties defined).
func TestParseJSONWitnesses(t *testing.T) {
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	parse := func(data []byte) *jsonParser {
		t.Helper()
		p := &jsonParser{vm: vm, data: data}
		v, err := vm.parseJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		vm.Free(v)
		return p
	}
	// Seven keys a row (bigJSON's rows): one witness per prefix.
	if p := parse(bigJSON(t)); len(p.witnesses) != 7 || p.witnessed != 1+2+3+4+5+6+7 {
		t.Errorf("rows of 7 keys: %d witnesses, %d properties on them; want 7, 28", len(p.witnesses), p.witnessed)
	}
	// Pairs of objects of 32 keys each, every pair with keys of its own:
	// each pair would make a ladder of 32 witnesses.
	var b strings.Builder
	b.WriteByte('[')
	for i := range 400 {
		for range 2 {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			for k := range 32 {
				if k > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"k%d_%d":%d`, i, k, k)
			}
			b.WriteByte('}')
		}
	}
	b.WriteByte(']')
	p := parse([]byte(b.String()))
	if defines := 400 * 2 * 32; p.witnessed > ladderSlack+defines/4 {
		t.Errorf("pairs of unique keys: %d properties on witnesses for %d defined, want at most %d", p.witnessed, defines, ladderSlack+defines/4)
	}
}
