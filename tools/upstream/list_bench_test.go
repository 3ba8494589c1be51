package upstream_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools/upstream"
)

// BenchmarkListHeld measures what a server's tool list costs codecell
// once its tools are registered, for lists at the bounds (max_list_bytes,
// 16 MiB; 10,000 tools): the heap it holds beyond the list's bytes, and
// how long listing and registering took, in wall time and in the CPU of
// the process (the fake server's serving of the page included). Each
// shape is one page.
func BenchmarkListHeld(b *testing.B) {
	prop := func(i int) string {
		return fmt.Sprintf(`"p%d":{"type":"string","description":"%s"}`, i, strings.Repeat("d", 40))
	}
	props := func(n int) string {
		var ps []string
		for i := range n {
			ps = append(ps, prop(i))
		}
		return strings.Join(ps, ",")
	}
	for _, shape := range []struct {
		name  string
		tools int
		tool  string // %d is the tool's number
	}{
		// 10,000 tools of 1.6 KB: 19 properties each.
		{"10k-tools-19-props", 10_000, `{"name":"t%d","description":"a tool","inputSchema":{"type":"object","properties":{` + props(19) + `}}}`},
		// 10,000 tools as small as a tool is.
		{"10k-tiny-tools", 10_000, `{"name":"t%d","inputSchema":{"type":"object"}}`},
		// 50 tools of 300 KB schemas: 3,900 properties each, as many as a
		// schema may hold.
		{"50-tools-3900-props", 50, `{"name":"t%d","inputSchema":{"type":"object","properties":{` + props(3900) + `}}}`},
	} {
		b.Run(shape.name, func(b *testing.B) {
			var page bytes.Buffer
			for i := range shape.tools {
				if i > 0 {
					page.WriteByte(',')
				}
				fmt.Fprintf(&page, shape.tool, i)
			}
			l := &endlessLister{method: "tools/list", field: "tools", page: page.Bytes(), last: 1}
			ts := httptest.NewServer(l)
			defer ts.Close()
			var held, took, cpu float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				t0, c0 := time.Now(), cpuSeconds()
				// Generous bounds: the machine may be loaded.
				e := startWithin(b, 5*time.Minute, map[string]upstream.Server{"big": {URL: ts.URL + "/mcp"}},
					func(c *upstream.Config) { c.HandshakeTimeout = 5 * time.Minute })
				took += time.Since(t0).Seconds()
				cpu += cpuSeconds() - c0
				if st := e.status("big"); st.State != upstream.StateReady || st.Tools != shape.tools {
					b.Fatalf("status %+v", st)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				held += float64(after.HeapAlloc) - float64(before.HeapAlloc)
				e.src.Close()
			}
			n := float64(b.N)
			b.ReportMetric(float64(page.Len())/(1<<20), "list-MiB")
			b.ReportMetric(held/n/(1<<20), "held-MiB")
			b.ReportMetric(held/n/float64(page.Len()), "held/list")
			b.ReportMetric(took/n, "s/list")
			b.ReportMetric(cpu/n, "cpu-s/list")
		})
	}
}
