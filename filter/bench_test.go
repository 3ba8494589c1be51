package filter

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Benchmarks. Run them with
//
//	go test ./filter -run '^$' -bench . -benchtime 2s
//
// BenchmarkPipeline reports MB/s over a ~1 MB result; its sub-benchmarks
// the stages. BenchmarkSmall reports µs/op for a ~1 KB result. Both also
// report cpu-MB/s or cpu-µs/op: the same figure over the CPU time the
// process used (all threads, GC included) instead of the wall clock, which
// is what to compare on a machine other jobs share.

// cpuTimer measures the process CPU time of a benchmark loop.
type cpuTimer struct{ start time.Duration }

func startCPU() cpuTimer { return cpuTimer{processCPU()} }

// report adds cpu-µs/op and, for bytes > 0, cpu-MB/s.
func (c cpuTimer) report(b *testing.B, bytes int) {
	used := processCPU() - c.start
	if used <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/op")
	if bytes > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/used.Seconds()/1e6, "cpu-MB/s")
	}
}

var words = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod
tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation
ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate
velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa
qui officia deserunt mollit anim id est laborum shipment delayed customer asked refund invoice`)

func sentence(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// realisticResult returns a deterministic JSON result of about size bytes
// shaped like what tools return: customer records with contact details
// and the odd credential, orders with line items, and log-like events.
func realisticResult(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	type item struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	}
	type customer struct {
		ID        int               `json:"id"`
		Name      string            `json:"name"`
		Email     string            `json:"email"`
		Phone     string            `json:"phone"`
		Address   map[string]string `json:"address"`
		CreatedAt string            `json:"created_at"`
		Tier      string            `json:"tier"`
		Active    bool              `json:"active"`
		Notes     string            `json:"notes"`
		Orders    []map[string]any  `json:"orders"`
		APIKey    string            `json:"api_key,omitempty"`
		Card      string            `json:"card_number,omitempty"`
	}
	var customers []customer
	var events []map[string]any
	total := 0
	for i := 0; total < size; i++ {
		c := customer{
			ID:        10000 + i,
			Name:      fmt.Sprintf("%s %s", strings.ToUpper(words[r.IntN(len(words))][:1])+words[r.IntN(len(words))], words[r.IntN(len(words))]),
			Email:     fmt.Sprintf("user%d@example%d.com", i, r.IntN(50)),
			Phone:     fmt.Sprintf("+1 415 555 %04d", r.IntN(10000)),
			Address:   map[string]string{"street": fmt.Sprintf("%d %s St", 1+r.IntN(999), words[r.IntN(len(words))]), "city": "Springfield", "zip": fmt.Sprintf("%05d", r.IntN(99999))},
			CreatedAt: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e6)) * time.Minute).Format(time.RFC3339),
			Tier:      []string{"free", "pro", "enterprise"}[r.IntN(3)],
			Active:    r.IntN(2) == 0,
			Notes:     sentence(r, 5+r.IntN(20)),
		}
		if i%10 == 0 {
			c.APIKey = fmt.Sprintf("sk_live_%024x", r.Uint64())
		}
		if i%7 == 0 {
			c.Card = "4111 1111 1111 1111"
		}
		for j := range 1 + r.IntN(3) {
			var items []item
			for range 1 + r.IntN(4) {
				items = append(items, item{SKU: fmt.Sprintf("SKU-%06d", r.IntN(1e6)), Qty: 1 + r.IntN(5), Price: float64(r.IntN(100000)) / 100})
			}
			c.Orders = append(c.Orders, map[string]any{"order_id": fmt.Sprintf("ORD-%d-%d", i, j), "status": "shipped", "items": items, "tracking": fmt.Sprintf("1Z%016X", r.Uint64())})
		}
		customers = append(customers, c)
		ev := map[string]any{"ts": c.CreatedAt, "level": "info", "msg": fmt.Sprintf("request %s from 203.0.113.%d took %dms: %s", fmt.Sprintf("%016x", r.Uint64()), r.IntN(255), r.IntN(900), sentence(r, 8))}
		events = append(events, ev)
		b, _ := json.Marshal(c)
		e, _ := json.Marshal(ev)
		total += len(b) + len(e) + 2
	}
	doc, _ := json.Marshal(map[string]any{"customers": customers, "events": events, "next_page_token": "CgwI2rWxBhDA8tnAAQ"})
	return doc
}

func benchFilter(b *testing.B) (*Filter, *Vault) {
	b.Helper()
	f, err := New(Config{Compact: true})
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewVault(fuzzKey, "local", VaultOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return f, v
}

func BenchmarkPipeline(b *testing.B) {
	doc := realisticResult(1 << 20)
	f, v := benchFilter(b)
	b.Run("all", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			if _, err := f.Apply(Input{Result: doc}, Options{Vault: v}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, len(doc))
	})
	b.Run("detect+tokenize", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		defer func() { cpu.report(b, len(doc)) }()
		for b.Loop() {
			root, err := parseJSON(doc)
			if err != nil {
				b.Fatal(err)
			}
			r := f.newRun(Options{Vault: v})
			r.walk(&root, FieldMatch{})
			if len(r.values) > 0 {
				r.sweepNode(newSweeper(r.values, nil), &root)
			}
			measure(&root)
			_ = appendJSON(make([]byte, 0, root.size), &root)
		}
	})
	out, err := f.Apply(Input{Result: doc}, Options{Vault: v})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("limit", func(b *testing.B) {
		b.SetBytes(int64(len(out.Full)))
		cpu := startCPU()
		for b.Loop() {
			if _, _, err := Limit(out.Full, LimitOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, len(out.Full))
	})
	c, err := NewCompressor(CompressorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("compress", func(b *testing.B) {
		b.SetBytes(int64(len(out.Full)))
		var z []byte
		cpu := startCPU()
		for b.Loop() {
			z = c.Compress(out.Full)
		}
		cpu.report(b, len(out.Full))
		b.ReportMetric(float64(len(out.Full))/float64(len(z)), "ratio")
	})
	z := c.Compress(out.Full)
	b.Run("decompress", func(b *testing.B) {
		b.SetBytes(int64(len(out.Full)))
		for b.Loop() {
			if _, err := c.Decompress(z); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCompress measures zstd on typical results at each level.
func BenchmarkCompress(b *testing.B) {
	docs := map[string][]byte{
		"records_1MB":  realisticResult(1 << 20),
		"records_64KB": realisticResult(64 << 10),
	}
	for _, name := range []string{"records_64KB", "records_1MB"} {
		doc := docs[name]
		for level := 1; level <= 3; level++ {
			c, err := NewCompressor(CompressorOptions{Level: level})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/level%d", name, level), func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				var z []byte
				for b.Loop() {
					z = c.Compress(doc)
				}
				b.ReportMetric(float64(len(doc))/float64(len(z)), "ratio")
			})
			c.Close()
		}
	}
}

// BenchmarkSmall is the overhead on a small execute_code result.
func BenchmarkSmall(b *testing.B) {
	doc := realisticResult(1 << 10)
	if len(doc) > 4<<10 {
		b.Fatalf("small doc is %d bytes", len(doc))
	}
	f, v := benchFilter(b)
	logs := []string{"fetched 3 customers", "done in 12ms"}
	b.SetBytes(int64(len(doc)))
	cpu := startCPU()
	for b.Loop() {
		if _, err := f.Apply(Input{Result: doc, Logs: logs}, Options{Vault: v}); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, 0)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
}

func BenchmarkScanString(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	s := sentence(r, 2000) + " ada@example.com 4111 1111 1111 1111 +1 415 555 2671 password=hunter22"
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		ScanString(s)
	}
}

// BenchmarkApplyText is an error message of 20 MB cut to the default
// budget, and a 4 KB one filtered whole; MB/s counts the input.
func BenchmarkApplyText(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	f, v := benchFilter(b)
	for name, text := range map[string]string{
		"20MB": "Error: " + strings.Repeat(sentence(r, 20)+" ada@example.com ", 20<<20/140),
		"4KB":  "Error: " + strings.Repeat(sentence(r, 20)+" ada@example.com ", 4<<10/140),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if out := f.ApplyText(text, Options{Vault: v}); len(out.Text) > DefaultBudget {
					b.Fatalf("%d bytes", len(out.Text))
				}
			}
		})
	}
}

// BenchmarkVaultMemory measures the heap a vault entry takes (heap-B/entry)
// against what Stats counts for it (stats-B/entry), which entryOverhead
// is calibrated on: the second should not be below the first.
func BenchmarkVaultMemory(b *testing.B) {
	const n = 50000
	var heap, counted float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := NewVault(fuzzKey, "local", VaultOptions{MaxEntries: 2 * n})
		if err != nil {
			b.Fatal(err)
		}
		src := []string{"crm.get_contact"}
		for i := range n {
			v.Tokenize(ClassEmail, fmt.Sprintf("user%06d@example.com", i), src)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / n
		counted = float64(v.Stats().Bytes) / n
		runtime.KeepAlive(v)
	}
	b.ReportMetric(heap, "heap-B/entry")
	b.ReportMetric(counted, "stats-B/entry")
}

// BenchmarkFlow measures data-flow tracking on a ~1 MB tool result that
// the program returns, with a rule on its source: observe records it,
// check checks a 4 KB call against it, apply is Apply with the flow (the
// known-value scan of every output), and pipeline is the three together,
// a new flow each time; pipeline-unruled is pipeline when no rule names
// the source. MB/s counts the result's bytes.
func BenchmarkFlow(b *testing.B) {
	doc := realisticResult(1 << 20)
	f, v := benchFilter(b)
	rules := []Rule{{From: "crm.*", To: "http.*"}}
	newFlow := func() *Flow {
		fl, err := f.NewFlow(FlowOptions{Rules: rules})
		if err != nil {
			b.Fatal(err)
		}
		return fl
	}
	args, _ := json.Marshal(map[string]any{"url": "https://hooks.example/x", "body": sentence(rand.New(rand.NewPCG(7, 8)), 600)})
	b.Run("observe", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			newFlow().Observe("crm.list_customers", doc, Provenance{})
		}
		cpu.report(b, len(doc))
	})
	fl := newFlow()
	fl.Observe("crm.list_customers", doc, Provenance{})
	st := fl.Stats()
	b.Run("check", func(b *testing.B) {
		b.SetBytes(int64(len(args)))
		for b.Loop() {
			if err := fl.Check("http.post", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apply", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			if _, err := f.Apply(Input{Result: doc}, Options{Vault: v, Flow: fl}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, len(doc))
	})
	b.Run("pipeline", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			fl := newFlow()
			fl.Observe("crm.list_customers", doc, Provenance{})
			if err := fl.Check("http.post", args); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Apply(Input{Result: doc}, Options{Vault: v, Flow: fl}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, len(doc))
		b.ReportMetric(float64(st.Bytes)/float64(len(doc)), "flow-B/B")
		b.ReportMetric(float64(st.Values), "values")
	})
	// The same when no rule names the source: only its sensitive values
	// are kept, for the outputs.
	b.Run("pipeline-unruled", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			fl, err := f.NewFlow(FlowOptions{Rules: []Rule{{From: "payments.*", To: "http.*"}}})
			if err != nil {
				b.Fatal(err)
			}
			fl.Observe("crm.list_customers", doc, Provenance{})
			if err := fl.Check("http.post", args); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Apply(Input{Result: doc}, Options{Vault: v, Flow: fl}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, len(doc))
	})
}

// BenchmarkFlowMemory measures the heap a flow takes after observing a
// ~1 MB result (heap-B) against what FlowStats counts (stats-B).
func BenchmarkFlowMemory(b *testing.B) {
	doc := realisticResult(1 << 20)
	f, _ := benchFilter(b)
	var heap, counted float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fl, err := f.NewFlow(FlowOptions{})
		if err != nil {
			b.Fatal(err)
		}
		fl.Observe("crm.list_customers", doc, Provenance{})
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		counted = float64(fl.Stats().Bytes)
		runtime.KeepAlive(fl)
	}
	b.ReportMetric(heap, "heap-B")
	b.ReportMetric(counted, "stats-B")
}

// BenchmarkFlowAnswer measures what the flow costs a run that reads a
// ~1 MB result and answers with a few of its values (ids and a total),
// the common shape of code mode: the result observed, then the answer
// filtered. "whole" indexes the result when it is observed, "lazy" as
// the answer needs it (scope.go). cpu-ms is this process's CPU per run.
func BenchmarkFlowAnswer(b *testing.B) {
	doc := realisticResult(1 << 20)
	f, v := benchFilter(b)
	answer, _ := json.Marshal(map[string]any{"count": 42, "total": 1234.56, "first": []string{"ORD-7-0", "ORD-12-1", "ORD-19-0"}, "who": "user12@example"})
	for _, mode := range []string{"whole", "lazy"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			cpu := startCPU()
			for b.Loop() {
				fl, err := f.NewFlow(FlowOptions{})
				if err != nil {
					b.Fatal(err)
				}
				fl.Observe("crm.list_customers", doc, Provenance{})
				if mode == "whole" {
					fl.Stats()
				}
				if _, err := f.Apply(Input{Result: answer}, Options{Vault: v, Flow: fl}); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, len(doc))
		})
	}
}

// BenchmarkParseJSON parses a realistic 1 MB result into the filter's
// tree, as Flow.Observe does with every large result.
func BenchmarkParseJSON(b *testing.B) {
	doc := realisticResult(1 << 20)
	b.SetBytes(int64(len(doc)))
	cpu := startCPU()
	for b.Loop() {
		if _, err := parseJSON(doc); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, len(doc))
}

// BenchmarkOnePrefix is attack16 J1's shape: 250 values of one letter,
// 6 to 255 bytes long, then 1 MiB of that letter to filter. "flow": the
// values are passwords a tool returned (the known-value stage); "sweep":
// they are passwords the result itself holds, without a flow (the sweep);
// "adds": 1,000 tool results of one new value each, each followed by a
// 100-byte log line filtered, the flow's index growing between searches;
// "long": one value of 100 KB, its first 256 bytes everywhere in 1 MiB;
// "provenance" and "knownin": Flow.Provenance and Flow.KnownIn of 256 KB
// of the letter, the 250 values echoed.
// cpu-ms/op is this process's CPU per operation.
func BenchmarkOnePrefix(b *testing.B) {
	f, v := benchFilter(b)
	var rows []any
	for l := 6; l < 256; l++ {
		rows = append(rows, map[string]any{"password": strings.Repeat("a", l)})
	}
	rowsJSON, _ := json.Marshal(rows)
	text, _ := json.Marshal(strings.Repeat("a", 1<<20))
	b.Run("flow", func(b *testing.B) {
		fl, err := f.NewFlow(FlowOptions{})
		if err != nil {
			b.Fatal(err)
		}
		fl.Observe("util.echo", rowsJSON, Provenance{})
		b.SetBytes(int64(len(text)))
		cpu := startCPU()
		for b.Loop() {
			if _, err := f.Apply(Input{Result: text}, Options{Vault: v, Flow: fl}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.reportMS(b)
	})
	b.Run("sweep", func(b *testing.B) {
		// Values that each end in a "b", where none matches.
		var rows []any
		for l := 5; l < 255; l++ {
			rows = append(rows, map[string]any{"password": strings.Repeat("a", l) + "b"})
		}
		doc, _ := json.Marshal(map[string]any{"rows": rows, "text": strings.Repeat("a", 1<<20)})
		b.SetBytes(int64(len(doc)))
		cpu := startCPU()
		for b.Loop() {
			if _, err := f.Apply(Input{Result: doc}, Options{Vault: v}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.reportMS(b)
	})
	b.Run("long", func(b *testing.B) {
		// One password of 100 KB: "a"s and a "b".
		fl, err := f.NewFlow(FlowOptions{})
		if err != nil {
			b.Fatal(err)
		}
		row, _ := json.Marshal(map[string]any{"password": strings.Repeat("a", 100000) + "b"})
		fl.Observe("util.echo", row, Provenance{})
		b.SetBytes(int64(len(text)))
		cpu := startCPU()
		for b.Loop() {
			if _, err := f.Apply(Input{Result: text}, Options{Vault: v, Flow: fl}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.reportMS(b)
	})
	// What a store keeps with 256 KB of that letter (Provenance), and the
	// secrets it holds (KnownIn).
	fl, err := f.NewFlow(FlowOptions{})
	if err != nil {
		b.Fatal(err)
	}
	fl.Observe("util.echo", rowsJSON, Provenance{})
	data, _ := json.Marshal(map[string]any{"body": strings.Repeat("a", 1<<18)})
	b.Run("provenance", func(b *testing.B) {
		cpu := startCPU()
		for b.Loop() {
			fl.Provenance(data)
		}
		cpu.reportMS(b)
	})
	b.Run("knownin", func(b *testing.B) {
		cpu := startCPU()
		for b.Loop() {
			fl.KnownIn(data)
		}
		cpu.reportMS(b)
	})
	// "adds-crowded": the same with values of one head and 50 lengths.
	for _, mode := range []string{"adds", "adds-crowded"} {
		b.Run(mode, func(b *testing.B) {
			addValues(b, f, v, mode == "adds-crowded")
		})
	}
}

func addValues(b *testing.B, f *Filter, v *Vault, crowded bool) {
	r := rand.New(rand.NewPCG(3, 4))
	line := sentence(r, 15)
	cpu := startCPU()
	for b.Loop() {
		fl, err := f.NewFlow(FlowOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			value := fmt.Sprintf("secret-%08x-%d", r.Uint64(), i)
			if crowded {
				value = fmt.Sprintf("tok_live%s%05d", strings.Repeat("z", i%50), i)
			}
			res, _ := json.Marshal(map[string]any{"password": value})
			fl.Observe("util.echo", res, Provenance{})
			f.ApplyText(line, Options{Vault: v, Flow: fl})
		}
	}
	cpu.reportMS(b)
}

// reportMS adds cpu-ms/op.
func (c cpuTimer) reportMS(b *testing.B) {
	if used := processCPU() - c.start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	}
}
