//go:build !windows

package stream

import "syscall"

// resetErrnos are the errors of a connection the peer reset.
var resetErrnos = []error{syscall.ECONNRESET}
