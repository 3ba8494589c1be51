package filter

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

func TestCompressRoundTrip(t *testing.T) {
	t.Parallel()
	c, err := NewCompressor(CompressorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, doc := range [][]byte{nil, []byte("{}"), realisticResult(64 << 10)} {
		z := c.Compress(doc)
		got, err := c.Decompress(z)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, doc) {
			t.Fatalf("round trip of %d bytes gave %d bytes", len(doc), len(got))
		}
		if len(doc) > 1000 && len(z)*3 > len(doc) {
			t.Errorf("%d bytes compressed to %d: ratio under 3", len(doc), len(z))
		}
	}
	if _, err := c.Decompress([]byte("not zstd")); err == nil {
		t.Error("Decompress of garbage: no error")
	}
}

func TestCompressConcurrent(t *testing.T) {
	t.Parallel()
	c, err := NewCompressor(CompressorOptions{Level: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	doc := realisticResult(32 << 10)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				got, err := c.Decompress(c.Compress(doc))
				if err != nil || !bytes.Equal(got, doc) {
					t.Errorf("concurrent round trip: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecompressBounded(t *testing.T) {
	t.Parallel()
	c, err := NewCompressor(CompressorOptions{MaxDecodedSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bomb := c.Compress(make([]byte, 1<<20))
	if _, err := c.Decompress(bomb); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Decompress of 1 MiB with a 64 KiB limit: %v, want ErrTooLarge", err)
	}
	if _, err := NewCompressor(CompressorOptions{Level: 9}); err == nil {
		t.Error("level 9 accepted")
	}
}
