//go:build !linux

package builtin

// releasePages does nothing where the kernel takes no advice through
// package syscall (see pages_linux.go).
func releasePages([]byte) {}

// adviseHugePages does nothing where the kernel takes no advice through
// package syscall (see pages_linux.go).
func adviseHugePages([]byte) {}

// adviseSmallPages does nothing where adviseHugePages does nothing.
func adviseSmallPages([]byte) {}
