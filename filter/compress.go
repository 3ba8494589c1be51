package filter

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// Compressor compresses stored results with zstd. Its encoder and decoder
// are created once and reused; it is safe for concurrent use, and up to
// GOMAXPROCS calls of each kind run in parallel.
type Compressor struct {
	enc     *zstd.Encoder
	dec     *zstd.Decoder
	maxSize int
}

// CompressorOptions configure a Compressor.
type CompressorOptions struct {
	// Level is zstd's speed/ratio trade-off: 1 fastest, 2 default,
	// 3 better, 4 best. 0 means 2.
	Level int
	// MaxDecodedSize bounds what Decompress will produce, against
	// decompression bombs. 0 means 256 MiB.
	MaxDecodedSize int
}

// ErrTooLarge is compressed data that decodes to more than
// CompressorOptions.MaxDecodedSize.
var ErrTooLarge = errors.New("decoded size exceeds the limit")

// NewCompressor returns a Compressor; Close releases it.
func NewCompressor(opts CompressorOptions) (*Compressor, error) {
	level := zstd.SpeedDefault
	switch opts.Level {
	case 0, 2:
	case 1:
		level = zstd.SpeedFastest
	case 3:
		level = zstd.SpeedBetterCompression
	case 4:
		level = zstd.SpeedBestCompression
	default:
		return nil, fmt.Errorf("new compressor: level %d is not 1 to 4", opts.Level)
	}
	if opts.MaxDecodedSize <= 0 {
		opts.MaxDecodedSize = 256 << 20
	}
	procs := runtime.GOMAXPROCS(0)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(procs))
	if err != nil {
		return nil, fmt.Errorf("new compressor: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(procs), zstd.WithDecoderMaxMemory(uint64(opts.MaxDecodedSize)))
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("new compressor: %w", err)
	}
	return &Compressor{enc: enc, dec: dec, maxSize: opts.MaxDecodedSize}, nil
}

// Compress returns src compressed as one zstd frame.
func (c *Compressor) Compress(src []byte) []byte {
	return c.enc.EncodeAll(src, make([]byte, 0, len(src)/4+64))
}

// Decompress returns the data of a zstd frame made by Compress.
func (c *Compressor) Decompress(src []byte) ([]byte, error) {
	out, err := c.dec.DecodeAll(src, nil)
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, fmt.Errorf("decompress: %w (%d bytes)", ErrTooLarge, c.maxSize)
		}
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}

// Close releases the encoder and decoder. The Compressor must not be used
// after.
func (c *Compressor) Close() {
	c.enc.Close()
	c.dec.Close()
}
