package builtin

import (
	"os"
	"syscall"
	"unsafe"
)

// releasePages hands back the resident pages wholly inside b: a part of
// a weights file mapped read-only, or an allocation's padding, which
// nothing reads (never other memory: the pages of an anonymous mapping
// read back as zeros). Loading reads the file (the tiles and Q8_0's rows
// copied out of it), and the kernels read the copies; what the engine
// reads of the file again (norms, embedding rows) comes back from the
// page cache. So the file and its tiles are not all resident at once, and
// the resident size a session reports is the engine's own. It is advice:
// on failure the pages stay.
func releasePages(b []byte) {
	advise(b, uintptr(os.Getpagesize()), syscall.MADV_DONTNEED)
}

// adviseHugePages asks the kernel to back the part of b that spans whole
// huge pages with them; b is to be written next, when its pages are
// made. Decode reads each tile once a token, front to back: with 4 KiB
// pages that stream pays a page walk every 4 KiB, and on the development
// VM one thread read 19 GB/s through them against 30 through 2 MiB pages
// (BenchmarkMemoryBandwidth).
// It is advice: where transparent huge pages are off, or none is free,
// or the heap reused pages already made, they stay small.
func adviseHugePages(b []byte) {
	advise(b, hugePageBytes, syscall.MADV_HUGEPAGE)
}

// adviseSmallPages takes adviseHugePages' advice back from b, which is
// about to be garbage. The heap reuses its memory for whatever comes
// next, and where the advice stayed the kernel's khugepaged may fill a
// sparsely used 2 MiB of it out to a whole huge page: why Go's runtime
// gives its heap no such advice.
func adviseSmallPages(b []byte) {
	advise(b, hugePageBytes, syscall.MADV_NOHUGEPAGE)
}

// advise gives the kernel advice for the whole units of unit bytes
// inside b.
func advise(b []byte, unit uintptr, advice int) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first, end := start+uintptr(toBoundary(b, unit)), (start+uintptr(len(b)))&^(unit-1)
	if first < end {
		_ = syscall.Madvise(b[first-start:end-start], advice)
	}
}
