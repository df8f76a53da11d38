package builtin

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// An f32 matrix's tiles ask for huge pages over every whole huge page
// they span: the kernel marks such a mapping "hg" in its VmFlags, whether
// or not a huge page was free.
func TestF32TilesAskForHugePages(t *testing.T) {
	if !hugePageAdviceShows(t) {
		t.Skip("this kernel keeps no record of MADV_HUGEPAGE (no transparent huge pages, or an emulator such as qemu-user drops the advice)")
	}
	m := NewF32(2048, 1024, make([]float32, 2048*1024)) // 8 MiB of tiles
	tiles := makeF32Tiles(m, nil)
	flags, err := vmFlags(firstHugePage(tiles))
	if err != nil {
		t.Fatal(err)
	}
	if !hasFlag(flags, "hg") {
		t.Errorf("the tiles' mapping has VmFlags %q, without hg (MADV_HUGEPAGE)", flags)
	}
	runtime.KeepAlive(tiles) // freed, their memory could take other advice
}

// hugePageAdviceShows is whether MADV_HUGEPAGE given directly to a
// mapping of its own shows as "hg" in its VmFlags.
func hugePageAdviceShows(t *testing.T) bool {
	b, err := syscall.Mmap(-1, 0, 2*hugePageBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if syscall.Madvise(b, syscall.MADV_HUGEPAGE) != nil {
		return false
	}
	flags, err := vmFlags(uintptr(unsafe.Pointer(&b[0])))
	return err == nil && hasFlag(flags, "hg")
}

// firstHugePage is where the first whole huge page inside b starts.
func firstHugePage(b []byte) uintptr {
	return (uintptr(unsafe.Pointer(&b[0])) + hugePageBytes - 1) &^ (hugePageBytes - 1)
}

// hasFlag is whether flag is one of a VmFlags line's flags.
func hasFlag(flags, flag string) bool { return slices.Contains(strings.Fields(flags), flag) }

// vmFlags is the VmFlags line of the mapping in /proc/self/smaps that
// holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	holds := false
	for lines.Scan() {
		line := lines.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			holds = lo <= addr && addr < hi
		} else if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && holds {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
}

// A closed backend's model is garbage: its f32 tiles' memory goes back
// to the heap without the advice, marked "nh" (MADV_NOHUGEPAGE).
func TestClosedBackendTakesHugePageAdviceBack(t *testing.T) {
	if !hugePageAdviceShows(t) {
		t.Skip("this kernel keeps no record of MADV_HUGEPAGE")
	}
	m := NewF32(2048, 1024, make([]float32, 2048*1024))
	tiled := &Matrix{Rows: m.Rows, Cols: m.Cols, tiles: makeF32Tiles(m, nil)}
	w := &Weights{Shape: Shape{Dim: 1024, Heads: 8, SeqLen: 1}, Classifier: tiled}
	b := &Backend{engine: NewEngine(&Model{Weights: w}, 1)}
	inside := firstHugePage(tiled.tiles)
	b.Close()
	flags, err := vmFlags(inside)
	if err != nil {
		t.Fatal(err)
	}
	if hasFlag(flags, "hg") || !hasFlag(flags, "nh") {
		t.Errorf("after Close the tiles' mapping has VmFlags %q: want nh, not hg", flags)
	}
	runtime.KeepAlive(tiled) // freed, its memory could take other advice
}
