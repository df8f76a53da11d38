package stream

import "syscall"

// resetErrnos are the errors of a connection the peer reset: Winsock's
// own codes, which syscall.ECONNRESET does not match on Windows.
var resetErrnos = []error{syscall.WSAECONNRESET, syscall.WSAECONNABORTED}
