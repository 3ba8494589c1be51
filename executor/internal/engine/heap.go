package engine

import (
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// A VM's heap is memory of its own: a region reserved for it alone, from
// which the engine gets all its memory (the engine keeps its own small
// blocks in 4 KiB arenas it asks for here), and a mapping of its own for
// each large block. So the VM can be stopped anywhere, inside a
// built-in's loop too, which polls no interrupt: Kill takes the memory
// away (mprotect), and the VM's goroutine, which asked the runtime to
// panic on a fault (debug.SetPanicOnFault), panics at its next access,
// leaves the engine, and its memory is unmapped. Every built-in that runs
// long walks the heap (properties, elements, strings, buffers).
//
// The heap also counts what the engine uses, as its default allocator
// does, which is how the engine's memory limit holds. A region is kept
// for the next VM when its VM closes normally (its pages stay mapped; all
// but the first heapKeep bytes are given back, or heapKeepWarm for the
// first few regions kept), and unmapped when it was killed.

const (
	// regionSize is the address space a VM's small blocks may use. Only
	// what is touched takes memory; a VM's heap limit is far below it.
	regionSize = 1 << 30
	// maxSmallLog: blocks of up to 1<<maxSmallLog usable bytes are carved
	// from the region, in powers of two; larger ones get a mapping of
	// their own. Sizes are those of the allocator the engine used before
	// (modernc.org/memory), so that a program meets its heap limit where
	// it did.
	maxSmallLog = 14
	// largeHeader is what a large block's mapping counts beside the
	// block, as in that allocator.
	largeHeader = 32
	// heapHeader precedes every block: its size class, or for a large
	// block the size of its mapping.
	heapHeader = 16
	// heapKeep is what a region given back keeps of its pages.
	heapKeep = 1 << 20
	// heapKeepWarm is what the first warmRegions regions kept keep: a VM
	// given a tool result of 1 MB uses a few MiB, and the next VM would
	// take a page fault for each page of it again (about a sixth of what
	// moving such a result into a VM costs). So a pool's VMs keep their
	// pages, and a burst of many VMs gives most back.
	heapKeepWarm = 16 << 20
	warmRegions  = 4
	// maxSpareRegions bounds the regions kept for the next VMs.
	maxSpareRegions = 32
	// mallocOverhead is what the engine's default allocator counts per
	// block besides its usable size (MALLOC_OVERHEAD).
	mallocOverhead = 8
)

var pageSize = uintptr(unix.Getpagesize())

// heap is one VM's memory.
type heap struct {
	region []byte
	base   uintptr
	next   uintptr // bump pointer
	high   uintptr // highest next since the region was mapped or trimmed
	// top is the highest next since the heap was made or restored: the
	// region's bytes from the image's next to top are what a run wrote
	// beyond the image, which restore clears.
	top  uintptr
	free [nClasses]uintptr

	// mu orders Kill against large blocks being mapped and unmapped.
	mu    sync.Mutex
	large map[uintptr][]byte // block address → its mapping
	// pinned are the large blocks of the image, by address: freeing one
	// keeps its mapping, which restore fills again.
	pinned map[uintptr][]byte
	killed atomic.Bool
	// refused counts the allocations refused since the heap was made:
	// past the limit, or with no memory to map. The engine turns each into
	// an exception, which a promise job's internal handler (an element of
	// Promise.all) can drop; VM.Refused reports them. Not in the image:
	// a Reset keeps the count.
	refused atomic.Uint64
}

// nClasses is the number of small block classes, by the log of their
// usable size.
const nClasses = maxSmallLog + 1

// smallLog returns the class of a small block of n usable bytes.
func smallLog(n uintptr) int {
	return max(4, bits.Len(uint((n+15)&^15-1)))
}

// largeSize returns the mapping of a large block of n usable bytes.
func largeSize(n uintptr) uintptr {
	const minMap = 64 << 10
	if n+largeHeader <= minMap {
		return minMap
	}
	return (1<<bits.Len(uint(n+largeHeader-1)) + pageSize - 1) &^ (pageSize - 1)
}

var spare struct {
	sync.Mutex
	regions []spareRegion
}

// spareRegion is a region kept for the next VM; its first resident bytes
// may still be backed by pages.
type spareRegion struct {
	region   []byte
	resident uintptr
}

var errNoRegion = errors.New("engine: cannot reserve memory for a VM")

// newHeap returns a heap with a region kept from an earlier VM, or a new
// one.
func newHeap() (*heap, error) {
	spare.Lock()
	var region []byte
	var resident uintptr
	if n := len(spare.regions); n > 0 {
		region, resident = spare.regions[n-1].region, spare.regions[n-1].resident
		spare.regions = spare.regions[:n-1]
	}
	spare.Unlock()
	if region == nil {
		var err error
		region, err = unix.Mmap(-1, 0, regionSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|reserveFlags)
		if err != nil {
			return nil, errNoRegion
		}
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	return &heap{region: region, base: base, next: base, high: base + resident, large: map[uintptr][]byte{}}, nil
}

// release gives the heap's memory back: its region is kept for another
// VM, unless the VM was killed. Every block must have been freed, or the
// VM abandoned.
func (h *heap) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, m := range h.large {
		if h.pinned[p] == nil {
			unix.Munmap(m)
		}
		delete(h.large, p)
	}
	for p, m := range h.pinned {
		unix.Munmap(m)
		delete(h.pinned, p)
	}
	if h.killed.Load() || h.region == nil {
		if h.region != nil {
			unix.Munmap(h.region)
		}
		h.region = nil
		return
	}
	region := h.region
	h.region = nil
	spare.Lock()
	defer spare.Unlock()
	if len(spare.regions) >= maxSpareRegions {
		unix.Munmap(region)
		return
	}
	keep := uintptr(heapKeep)
	if len(spare.regions) < warmRegions {
		keep = heapKeepWarm
	}
	used := h.high - h.base
	if used > keep {
		discard(region[keep:used])
		used = keep
	}
	// The pages kept hold what the VM's program made: the next VM, whose
	// program is another's, must not find any of it (finding L6). The
	// engine zeroes none of what it allocates, and a program reads some
	// of it (an array's unused slots, a string being built). Clearing is
	// cheaper than the page faults of fresh pages.
	clear(region[:used])
	spare.regions = append(spare.regions, spareRegion{region, used})
}

// heapImage is a heap as it was at one moment, which restore brings back:
// the bytes of its region in use, the allocator's state, and the bytes of
// its large blocks, which stay mapped where they are (pinned).
type heapImage struct {
	bytes []byte
	next  uintptr
	free  [nClasses]uintptr
	large map[uintptr][]byte // block address → the bytes of its mapping
}

// snapshot returns the heap as it is now, and pins its large blocks.
func (h *heap) snapshot() *heapImage {
	h.mu.Lock()
	defer h.mu.Unlock()
	img := &heapImage{
		bytes: append([]byte(nil), h.region[:h.next-h.base]...),
		next:  h.next,
		free:  h.free,
		large: make(map[uintptr][]byte, len(h.large)),
	}
	if h.pinned == nil {
		h.pinned = map[uintptr][]byte{}
	}
	for p, m := range h.large {
		img.large[p] = append([]byte(nil), m...)
		h.pinned[p] = m
	}
	h.top = h.next
	return img
}

// dirty returns what restore would clear and unmap: the bytes of the
// region used beyond img, and the mappings of the large blocks made
// since.
func (h *heap) dirty(img *heapImage) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := int(h.top - img.next)
	for p, m := range h.large {
		if h.pinned[p] == nil {
			n += len(m)
		}
	}
	return n
}

// restore brings the heap back to img, which snapshot took of it: its
// region's bytes and its pinned blocks' as they were, every byte written
// beyond them zero again, and every other large block unmapped. Nothing
// of what ran since can be read in it any more. It reports false for a
// heap that was killed.
func (h *heap) restore(img *heapImage) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.killed.Load() || h.region == nil {
		return false
	}
	for p, m := range h.large {
		if h.pinned[p] == nil {
			unix.Munmap(m)
		}
		delete(h.large, p)
	}
	for p, m := range h.pinned {
		copy(m, img.large[p])
		h.large[p] = m
	}
	copy(h.region, img.bytes)
	// What the run wrote beyond the image: cleared where the pool's VMs
	// keep their pages, given back beyond.
	start, end := img.next-h.base, h.top-h.base
	if cut := max(heapKeepWarm, (start+pageSize-1)&^(pageSize-1)); end > cut {
		discard(h.region[cut:end])
		h.high = min(h.high, h.base+cut)
		end = cut
	}
	if end > start {
		clear(h.region[start:end])
	}
	h.next, h.free, h.top = img.next, img.free, img.next
	return true
}

// kill takes the heap's memory away: any access to it faults.
func (h *heap) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.killed.Swap(true) || h.region == nil {
		return
	}
	unix.Mprotect(h.region, unix.PROT_NONE)
	for _, m := range h.large {
		unix.Mprotect(m, unix.PROT_NONE)
	}
}

// alloc returns a block of n usable bytes, or 0.
func (h *heap) alloc(n uintptr) uintptr {
	if n <= 1<<maxSmallLog {
		c := smallLog(n)
		b := h.free[c]
		if b != 0 {
			h.free[c] = *(*uintptr)(ptr(b))
		} else {
			size := uintptr(1)<<c + heapHeader
			if h.next+size > h.base+regionSize {
				return 0
			}
			b = h.next
			h.next += size
			h.high = max(h.high, h.next)
			h.top = max(h.top, h.next)
		}
		*(*uintptr)(ptr(b)) = uintptr(c)
		return b + heapHeader
	}
	size := largeSize(n)
	m, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return 0
	}
	b := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	*(*uintptr)(ptr(b)) = size
	// Registered under the lock, so that Kill protects it, or refused.
	h.mu.Lock()
	killed := h.killed.Load()
	if !killed {
		h.large[b] = m
	}
	h.mu.Unlock()
	if killed {
		unix.Munmap(m)
		return 0
	}
	return b + heapHeader
}

// usable returns the usable size of block p.
func usable(p uintptr) uintptr {
	x := *(*uintptr)(ptr(p - heapHeader))
	if x < nClasses {
		return 1 << x
	}
	return x - largeHeader
}

// dealloc frees block p.
func (h *heap) dealloc(p uintptr) {
	b := p - heapHeader
	x := *(*uintptr)(ptr(b))
	if x < nClasses {
		*(*uintptr)(ptr(b)) = h.free[x]
		h.free[x] = b
		return
	}
	h.mu.Lock()
	m, ok := h.large[b]
	if ok && !h.killed.Load() {
		delete(h.large, b)
		if h.pinned[b] != nil {
			ok = false // restore fills it again
		}
	} else {
		ok = false // a killed heap's mappings go with it
	}
	h.mu.Unlock()
	if ok {
		unix.Munmap(m) // outside the lock: Kill never waits for it
	}
}

// The engine's allocator functions (JSMallocFunctions), over the heap
// whose address is the malloc state's opaque: they count blocks and bytes
// and refuse what would pass the limit, as the engine's default ones do.

func heapOf(s uintptr) (*heap, *lib.TJSMallocState) {
	st := (*lib.TJSMallocState)(ptr(s))
	return (*heap)(ptr(st.Fopaque)), st
}

func heapMalloc(tls *libc.TLS, s uintptr, size lib.Tsize_t) uintptr {
	h, st := heapOf(s)

	if st.Fmalloc_size+size > st.Fmalloc_limit {
		h.refused.Add(1)
		return 0
	}
	p := h.alloc(uintptr(size))
	if p == 0 {
		h.refused.Add(1)
		return 0
	}
	st.Fmalloc_count++
	st.Fmalloc_size += lib.Tsize_t(usable(p)) + mallocOverhead
	return p
}

func heapFree(tls *libc.TLS, s uintptr, p uintptr) {
	if p == 0 {
		return
	}
	h, st := heapOf(s)
	st.Fmalloc_count--
	st.Fmalloc_size -= lib.Tsize_t(usable(p)) + mallocOverhead
	h.dealloc(p)
}

func heapRealloc(tls *libc.TLS, s uintptr, p uintptr, size lib.Tsize_t) uintptr {
	if p == 0 {
		if size == 0 {
			return 0
		}
		return heapMalloc(tls, s, size)
	}
	if size == 0 {
		heapFree(tls, s, p)
		return 0
	}
	h, st := heapOf(s)
	old := usable(p)
	if uintptr(size) <= old && (old <= 2*uintptr(size) || old <= 64) {
		return p // it fits, and keeps at least half of the block
	}
	if st.Fmalloc_size+size-lib.Tsize_t(old) > st.Fmalloc_limit {
		h.refused.Add(1)
		return 0
	}
	q := h.alloc(uintptr(size))
	if q == 0 {
		h.refused.Add(1)
		return 0
	}
	copy(unsafe.Slice((*byte)(ptr(q)), size), unsafe.Slice((*byte)(ptr(p)), min(old, uintptr(size))))
	st.Fmalloc_size += lib.Tsize_t(usable(q)) - lib.Tsize_t(old)
	h.dealloc(p)
	return q
}

func heapUsableSize(tls *libc.TLS, p uintptr) lib.Tsize_t {
	if p == 0 {
		return 0
	}
	return lib.Tsize_t(usable(p))
}

// heapFuncs is the JSMallocFunctions of every heap, in C memory.
var heapFuncs = func() uintptr {
	p := libc.Xmalloc(nil, lib.Tsize_t(unsafe.Sizeof(lib.TJSMallocFunctions{})))
	*(*lib.TJSMallocFunctions)(ptr(p)) = lib.TJSMallocFunctions{
		Fjs_malloc:             fp(heapMalloc),
		Fjs_free:               fp(heapFree),
		Fjs_realloc:            fp(heapRealloc),
		Fjs_malloc_usable_size: fp(heapUsableSize),
	}
	return p
}()
