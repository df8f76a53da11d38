//go:build !linux

package telemetry

import "github.com/shirou/gopsutil/v4/process"

// parents maps each process of the machine to its parent, through
// gopsutil (no /proc to read).
func parents() map[int32]int32 {
	all, err := process.Processes()
	if err != nil {
		return nil
	}
	out := make(map[int32]int32, len(all))
	for _, p := range all {
		if ppid, err := p.Ppid(); err == nil {
			out[p.Pid] = ppid
		}
	}
	return out
}
