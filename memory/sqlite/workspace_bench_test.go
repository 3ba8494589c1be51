package sqlite

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkListFiles measures workspace.list over a workspace of 16
// files of 8 MiB (memory.max_file_bytes) that do not compress: µs a
// listing. Reproduce with
//
//	go test -tags sqlite_fts5 -run '^$' -bench ListFiles -count 3 ./memory/sqlite/
func BenchmarkListFiles(b *testing.B) {
	s := openTest(b, Config{})
	alice := as(b.Context(), "alice")
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 8<<20)
	for i := range 16 {
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		if _, _, err := s.WriteFile(alice, fmt.Sprintf("f%02d.bin", i), data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		l, err := s.ListFiles(alice, "")
		if err != nil || len(l.Files) != 16 {
			b.Fatalf("%d files, %v", len(l.Files), err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/list")
}
