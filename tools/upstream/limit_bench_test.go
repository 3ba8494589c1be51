package upstream

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkLimitReader measures what reading a stdio server's messages
// through limitReader costs, no call holding them: a text result, a
// result of many small values (the answer to one of codecell's requests,
// passed on after its values are counted and, past the bound, its keys
// scanned), and small messages. Reports MB/s.
func BenchmarkLimitReader(b *testing.B) {
	nums := make([]string, 200000)
	for i := range nums {
		nums[i] = fmt.Sprint(i % 1000)
	}
	for _, c := range []struct{ name, msg string }{
		{"text-1MiB", `{"jsonrpc":"2.0","id":"codecell-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("a", 1<<20) + `"}]}}` + "\n"},
		{"values-200k", `{"jsonrpc":"2.0","id":"codecell-1","result":{"structuredContent":[` + strings.Join(nums, ",") + `]}}` + "\n"},
		{"small", strings.Repeat(`{"jsonrpc":"2.0","id":"codecell-1","result":{"content":[{"type":"text","text":"ok"}]}}`+"\n", 1000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.msg)))
			buf := make([]byte, 32<<10)
			for b.Loop() {
				r := newLimitReader(strings.NewReader(c.msg), jsonLines, DefaultMaxResponseBytes, nil)
				for {
					if _, err := r.Read(buf); err == io.EOF {
						break
					}
				}
			}
		})
	}
}
