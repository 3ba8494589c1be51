package engine

import "golang.org/x/sys/unix"

// reserveFlags reserve a heap's region without committing swap for it.
const reserveFlags = unix.MAP_NORESERVE

// discard gives pages of a heap's region back to the system. Linux maps
// them again zero-filled at the next access: what a VM wrote there is
// gone for the next VM.
func discard(b []byte) {
	unix.Madvise(b, unix.MADV_DONTNEED)
}
