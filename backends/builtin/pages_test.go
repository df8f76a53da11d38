package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"
)

// Pages handed back come back from the file, unchanged, when read again;
// within finds rows inside the mapping and nothing outside it.
func TestReleasedPagesReadBackFromTheFile(t *testing.T) {
	want := make([]byte, 5*os.Getpagesize()+123)
	for i := range want {
		want[i] = byte(i*7 + i/4096)
	}
	path := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	mapped, err := mapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := unsafe.Slice((*float32)(unsafe.Pointer(&mapped[100])), 1000)
	part := within(mapped, rows)
	if len(part) != 4000 || &part[0] != &mapped[100] {
		t.Fatalf("within: %d bytes from offset %d, want 4000 from 100", len(part), uintptr(unsafe.Pointer(&part[0]))-uintptr(unsafe.Pointer(&mapped[0])))
	}
	if outside := make([]float32, 10); within(mapped, outside) != nil || within(nil, rows) != nil {
		t.Error("within found rows outside the mapping")
	}
	releasePages(part)
	releasePages(mapped)
	if !slices.Equal(mapped, want) {
		t.Error("the file's bytes differ after their pages were handed back")
	}
}
