package main

import "os"

// stopSignals end a run cleanly, saving what was measured. Windows has no
// SIGTERM; Go delivers Ctrl+C and Ctrl+Break as os.Interrupt.
var stopSignals = []os.Signal{os.Interrupt}
