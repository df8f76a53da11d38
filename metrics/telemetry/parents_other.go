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

// processStart says when pid started, as an identity (the same process
// keeps it): gopsutil's create time, which these systems' kernels give
// directly.
func processStart(pid int32) (uint64, error) {
	p, err := process.NewProcess(pid)
	if err != nil {
		return 0, err
	}
	ms, err := p.CreateTime()
	return uint64(ms), err
}
