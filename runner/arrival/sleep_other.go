//go:build !linux

package arrival

import "time"

// preciseSleep is the runtime's sleep where the kernel's own timer is not
// reached through x/sys (macOS, Windows): the dispatcher's busy wait
// before each request makes up for its lateness.
func preciseSleep(d time.Duration) { time.Sleep(d) }
