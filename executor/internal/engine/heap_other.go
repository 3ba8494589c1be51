//go:build !linux

package engine

// reserveFlags: a region's pages are committed as they are touched.
const reserveFlags = 0

// discard clears pages of a heap's region. Other systems may keep a
// page's content after MADV_DONTNEED or MADV_FREE, and the next VM, whose
// program is another's, must not find it: the pages are cleared instead.
func discard(b []byte) {
	clear(b)
}
