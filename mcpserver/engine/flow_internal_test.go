package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// TestTrackerObservationPanics: an observation of a tool's result that
// panics — it once ran on a goroutine of its own for a large result,
// where a panic killed the server — is logged at error level (the tool
// and the size, not the value), fails its call (errObserveCrashed), and
// the flow, short of that result, is never used again: wait reports it,
// and settled panics on the goroutine that waits, which a boundary
// recovers (the executor's for a call, execute_code's for the run).
func TestTrackerObservationPanics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result string
	}{
		{"small", `{"email":"ada@example.com"}`},
		{"large", `{"email":"ada@example.com","notes":"` + strings.Repeat("n", 16<<10) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			// A tracker without a flow: Observe panics on the nil *filter.Flow.
			tr := &tracker{log: slog.New(slog.NewTextHandler(&logs, nil))}
			if err := tr.observe("crm.get_contact", json.RawMessage(tc.result), filter.Provenance{}, nil, nil); err != errObserveCrashed {
				t.Errorf("observe: %v, want errObserveCrashed", err)
			}
			if tr.wait() {
				t.Fatal("wait reported the flow whole after an observation panicked")
			}
			func() {
				defer func() {
					if p := recover(); p != errObserveCrashed {
						t.Errorf("settled after a panicked observation: panic %v, want errObserveCrashed", p)
					}
				}()
				tr.settled()
			}()
			log := logs.String()
			if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "crm.get_contact") {
				t.Errorf("the panic is not logged at error level with its tool:\n%s", log)
			}
			if strings.Contains(log, "ada@example.com") {
				t.Errorf("the log shows the result:\n%s", log)
			}
		})
	}
}

// BenchmarkStoredProvenance measures the look for provenance fields in a
// result of about 1 MB of a store tool that has none (a cached value's),
// as every such result's observation makes; other tools' results are
// not looked into.
//
//	go test -tags sqlite_fts5 -run '^$' -bench StoredProvenance ./mcpserver/engine/
func BenchmarkStoredProvenance(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"orders":[`)
	for i := 0; buf.Len() < 1<<20; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"id":"ord-%06d","status":"delivered","region":"us-west","currency":"JPY","items":[{"sku":"sku-%05d","qty":1}],"total":%d.41,"tags":["priority"],"note":"weekend"}`, i, i%99991, i%997)
	}
	buf.WriteString(`]}`)
	doc := json.RawMessage(buf.Bytes())
	t := &tools.Tool{Name: "cache.get", Stored: &tools.StoredFields{Provenance: []string{"provenance"}}}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if !storedOf(t, doc).from.IsZero() {
			b.Fatal("provenance found")
		}
	}
}
