//go:build !windows

package session

// transientRenameError: a rename over an open file succeeds on Unix, so
// no failure is worth retrying.
func transientRenameError(error) bool { return false }
