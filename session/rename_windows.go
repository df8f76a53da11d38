package session

import (
	"errors"
	"syscall"
)

// errorSharingViolation is Windows' ERROR_SHARING_VIOLATION, which
// package syscall does not name.
const errorSharingViolation syscall.Errno = 32

// transientRenameError reports a rename that failed only because another
// process had the file open.
func transientRenameError(err error) bool {
	return errors.Is(err, syscall.ERROR_ACCESS_DENIED) || errors.Is(err, errorSharingViolation)
}
