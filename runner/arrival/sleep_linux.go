package arrival

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep blocks for d on the kernel's high-resolution monotonic
// timer. The runtime's own timers wake up to a millisecond late on Linux
// (the scheduler's wait for them is counted in whole milliseconds), which
// put the dispatcher's p99 lateness at 1–3 ms on an idle machine.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}
