//go:build !unix

package filter

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }
