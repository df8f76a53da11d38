//go:build unix

package builtin

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps path read-only, so weights are paged in from the file and
// held once; float data is used in place. The slice's capacity runs to
// the mapping's last page (past the file's end it reads zeros), so that
// releasePages can hand back that page too.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	page := os.Getpagesize()
	return unsafe.Slice(&b[0], (len(b)+page-1)/page*page)[:len(b)], nil
}
