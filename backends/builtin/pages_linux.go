package builtin

import (
	"os"
	"syscall"
	"unsafe"
)

// releasePages hands back the resident pages wholly inside b, a part of a
// weights file mapped read-only (never other memory: the pages of an
// anonymous mapping would read back as zeros). Loading reads the file
// (the tiles and Q8_0's rows copied out of it), and the kernels read the
// copies; what the engine reads of the file again (norms, embedding rows)
// comes back from the page cache. So the file and its tiles are not all
// resident at once, and the resident size a session reports is the
// engine's own. It is advice: on failure the pages stay.
func releasePages(b []byte) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first, end := (start+page-1)&^(page-1), (start+uintptr(len(b)))&^(page-1)
	if first < end {
		_ = syscall.Madvise(b[first-start:end-start], syscall.MADV_DONTNEED)
	}
}
