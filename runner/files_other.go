//go:build !unix

package runner

// openFilesLimit is unknown where there is no RLIMIT_NOFILE.
func openFilesLimit() (uint64, bool) { return 0, false }
