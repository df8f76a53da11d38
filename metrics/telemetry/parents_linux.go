package telemetry

import (
	"bytes"
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
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.ParseInt(string(fields[1]), 10, 32)
	return int32(ppid), err == nil
}
