package executor_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// FuzzRun feeds arbitrary programs, in both languages, to one executor:
// no program may panic the host, every run ends with a well-formed record,
// and the executor keeps serving.
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"1+1", "return await util.echo({text: 'x'})", "let x = ;", "while(true){}",
		"throw {}", "await Promise.all([util.echo({}), util.fail({})])", "`${1}`",
		"const o = {}; o.o = o; o", "new Proxy({}, {get() { throw 1 }})",
		"async function* g() { yield 1 } for await (const x of g()) x",
		"label: { break label }", "'\\u{1F600}'.length", "/(a+)+$/.test('a'.repeat(30) + 'b')",
		"const a: number = 1; a", "enum E { A } E.A", "</script>", "\x00", "})()",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	e, err := executor.New(inMode(executor.IsolationProcess, executor.Config{PoolSize: 2, Timeout: 200 * time.Millisecond, MemoryLimit: 8 << 20, MaxToolCalls: 20}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	f.Fuzz(func(t *testing.T, code string, typescript bool) {
		lang := executor.JavaScript
		if typescript {
			lang = executor.TypeScript
		}
		res := e.Run(t.Context(), executor.Request{Code: code, Language: lang, Dispatcher: echo, Functions: layout})
		switch res.Status {
		case executor.StatusOK:
			if res.Error != nil || !json.Valid(res.Value) {
				t.Fatalf("ok run with error %v or invalid result %q", res.Error, res.Value)
			}
		case executor.StatusError:
			if res.Error == nil || res.Error.Kind == "" || res.Error.Message == "" || string(res.Value) != "null" {
				t.Fatalf("failed run without a described error: %+v", res)
			}
		default:
			t.Fatalf("status %q", res.Status)
		}
	})
}
