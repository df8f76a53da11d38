//go:build unix

package runner

import "syscall"

// openFilesLimit is the process's soft limit on open files, each request
// in flight holding one connection. Go raises it to the hard limit at
// start, so this is what the run may really open.
func openFilesLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Cur), true
}
