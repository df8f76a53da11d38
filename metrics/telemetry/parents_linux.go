package telemetry

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// parents maps each process of the machine to its parent, from each
// one's /proc/<pid>/stat: "pid (comm) state ppid …", whose comm may hold
// spaces and parentheses, so ppid is read after its last ')'.
func parents() map[int32]int32 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int32]int32, len(entries))
	for _, e := range entries {
		pid, err := strconv.ParseInt(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it exited meanwhile
		}
		if ppid, ok := statParent(stat); ok {
			out[int32(pid)] = ppid
		}
	}
	return out
}

// statParent is the ppid of a /proc/<pid>/stat line.
func statParent(stat []byte) (int32, bool) {
	field, ok := statField(stat, 4)
	if !ok {
		return 0, false
	}
	ppid, err := strconv.ParseInt(string(field), 10, 32)
	return int32(ppid), err == nil
}

// statStart is the start time of a /proc/<pid>/stat line: clock ticks
// from boot to the process's start, fixed for its life.
func statStart(stat []byte) (uint64, bool) {
	field, ok := statField(stat, 22)
	if !ok {
		return 0, false
	}
	start, err := strconv.ParseUint(string(field), 10, 64)
	return start, err == nil
}

// statField is field n (from 1, as proc(5) numbers them) of a stat line,
// for n past the comm (2).
func statField(stat []byte, n int) ([]byte, bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return nil, false
	}
	fields := bytes.Fields(stat[end+1:]) // from field 3, the state
	if len(fields) < n-2 {
		return nil, false
	}
	return fields[n-3], true
}

// processStart says when pid started, as an identity: the same process
// keeps it, one that took a dead one's pid has another. gopsutil's
// IsRunning compares create times in wall-clock milliseconds, which it
// derives from the boot time in whole seconds (/proc/stat's btime); on
// a VM whose clock is being corrected that boot time moved by a second
// under a live process, and a running server read as exited.
func processStart(pid int32) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, err
	}
	start, ok := statStart(stat)
	if !ok {
		return 0, fmt.Errorf("/proc/%d/stat: no start time in %q", pid, stat)
	}
	return start, nil
}
