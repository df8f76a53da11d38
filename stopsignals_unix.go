//go:build !windows

package main

import (
	"os"
	"syscall"
)

// stopSignals end a run cleanly, saving what was measured: Ctrl+C and a
// polite kill.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
