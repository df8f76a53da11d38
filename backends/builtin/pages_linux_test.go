package builtin

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// A matrix's tiles ask for huge pages over every whole huge page they
// span, starting at one: the kernel marks such a mapping "hg" in its
// VmFlags, whether or not a huge page was free. Each tiling is 4.5–32
// MiB, where an unaligned start would cost a whole huge page.
func TestTilesAskForHugePages(t *testing.T) {
	if !hugePageAdviceShows(t) {
		t.Skip("this kernel keeps no record of MADV_HUGEPAGE (no transparent huge pages, or an emulator such as qemu-user drops the advice)")
	}
	f32 := func() *Matrix { return NewF32(4096, 2048, make([]float32, 4096*2048)) }
	for _, c := range []struct {
		name  string
		tiled func() *Matrix
	}{
		{"f32", func() *Matrix { return makeF32Tiles(f32(), nil, nil) }},
		{"q8_0", func() *Matrix { return quantizeTo(t, ggmlQ8_0, f32()) }},
		{"q4_k", func() *Matrix { return quantizeTo(t, ggmlQ4_K, f32()) }},
		{"q6_k", func() *Matrix { return quantizeTo(t, ggmlQ6_K, f32()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tiles := c.tiled().tiles
			if tiles == nil {
				t.Skip("this build or CPU keeps rows")
			}
			if at := uintptr(unsafe.Pointer(&tiles[0])); at%hugePageBytes != 0 {
				t.Errorf("the %d bytes of tiles start at %#x, not at a huge page", len(tiles), at)
			}
			flags, err := vmFlags(firstHugePage(tiles))
			if err != nil {
				t.Fatal(err)
			}
			if !hasFlag(flags, "hg") {
				t.Errorf("the tiles' mapping has VmFlags %q, without hg (MADV_HUGEPAGE)", flags)
			}
			runtime.KeepAlive(tiles) // freed, their memory could take other advice
		})
	}
}

// A model's f32 tiles lie back to back in one allocation from a huge
// page's start, advised for huge pages over all of it: allocated a
// matrix at a time, a matrix smaller than two huge pages held one or
// none, and 39–42% of stories110M's tiles stayed in small pages.
func TestModelF32TilesShareOneHugePagedMemory(t *testing.T) {
	w := Synthetic(SyntheticShapes["stories15M"], 1)
	w.tileF32(nil)
	mem := w.tileMemory
	if w.Classifier.tiles == nil {
		t.Skip("this build keeps f32 rows")
	}
	if len(mem.free) != 0 || len(mem.all) != mem.size {
		t.Fatalf("the tiles took %d of the memory's %d bytes", len(mem.all)-len(mem.free), mem.size)
	}
	start := uintptr(unsafe.Pointer(&mem.all[0]))
	if start%hugePageBytes != 0 {
		t.Errorf("the tiles' memory starts at %#x, not at a huge page", start)
	}
	next := start
	for _, m := range w.matrices() {
		at := uintptr(unsafe.Pointer(&(*m).tiles[0]))
		if at != next {
			t.Fatalf("a %d×%d matrix's tiles start at %#x, want %#x: right after the last", (*m).Rows, (*m).Cols, at, next)
		}
		next += uintptr(len((*m).tiles))
	}
	if hugePageAdviceShows(t) {
		// The first layer's query matrix (288×288, 324 KiB) is inside the
		// memory's first huge page, which no matrix of its own spans.
		flags, err := vmFlags(uintptr(unsafe.Pointer(&w.Layers[0].WQ.tiles[0])))
		if err != nil {
			t.Fatal(err)
		}
		if !hasFlag(flags, "hg") {
			t.Errorf("the tiles' memory has VmFlags %q, without hg (MADV_HUGEPAGE)", flags)
		}
	}
	runtime.KeepAlive(w)
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
	return uintptr(unsafe.Pointer(&b[0])) + uintptr(toBoundary(b, hugePageBytes))
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
	w := &Weights{Shape: Shape{Dim: 1024, Heads: 8, SeqLen: 1}, Classifier: NewF32(2048, 1024, make([]float32, 2048*1024))}
	w.tileF32(nil)
	tiled := w.Classifier
	if tiled.tiles == nil {
		t.Skip("this build keeps f32 rows")
	}
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

// Decoding a loaded file's model touches none of the file's mapping (the
// matrices here are tiles or converted rows): on a kernel that maps the
// page cache a 2 MiB folio at a time, a read of one norm there made its
// neighbours' pages resident again beside their copies.
func TestDecodingLeavesTheFileUnmapped(t *testing.T) {
	m, err := Load(filepath.Join("testdata", "archs", "llama-q8_0.gguf"), "")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(m, 1)
	defer e.Close()
	if _, err := e.Generate(t.Context(), m.Tokenizer.Encode("Hello there", true), 8, Sampling{}, func(int) {}); err != nil {
		t.Fatal(err)
	}
	if n := residentPages(t, m.mapped); n != 0 {
		t.Errorf("%d of the file's pages are mapped in after decoding, want 0", n)
	}
}

// residentPages counts b's pages present in this process's page tables.
func residentPages(t *testing.T, b []byte) int {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	first := uintptr(unsafe.Pointer(&b[0])) / page
	entries := make([]byte, 8*((uintptr(len(b))+page-1)/page))
	if _, err := f.ReadAt(entries, int64(first*8)); err != nil {
		t.Skip(err)
	}
	n := 0
	for i := 0; i < len(entries); i += 8 {
		if binary.LittleEndian.Uint64(entries[i:])>>63 == 1 { // bit 63: present
			n++
		}
	}
	return n
}
