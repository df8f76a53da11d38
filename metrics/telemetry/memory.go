package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	psnet "github.com/shirou/gopsutil/v4/net"
	"github.com/shirou/gopsutil/v4/process"
)

// MemoryWatch measures one process's peak resident memory per trial,
// with the processes it started where it is a server (Ollama's model
// runners hold the model; `ollama serve` itself is 42–45 MB). On Linux,
// where the kernel allows, it resets each process's high-water mark
// (clear_refs) at the trial's start and reads VmHWM at its end, so each
// peak is exact and the figure is their sum (at least the peak of their
// sum, which a model runner's steady memory makes close); elsewhere, or
// where it may not, it polls the resident sizes' sum while the trial
// runs. A server that exited is looked for again at the next trial's
// start (find), so that a restart costs the trials it was down for, not
// the rest of the run.
type MemoryWatch struct {
	process  *process.Process
	start    uint64 // when process started (processStart): whether it still runs
	Process  string // whose memory, for the manifest
	interval time.Duration
	exact    bool // clear_refs works
	// withChildren counts the processes the watched one started.
	withChildren bool
	// find finds the server's process again after it exited; nil for
	// this process.
	find func() (int, error)

	tree []*process.Process // the trial's processes, the watched one first

	begun   int      // trials begun
	history []string // what became of the process, for the manifest
	lost    bool     // it exited and was not found again

	mu     sync.Mutex
	peakMB float64
	stop   chan struct{}
	done   chan struct{}
}

// WatchMemory watches pid (0: this process).
func WatchMemory(pid int, interval time.Duration) (*MemoryWatch, error) {
	return watchMemory(pid, interval, nil)
}

// WatchServerMemory watches a server's process pid and the processes it
// starts; find looks for the server again where pid exits (nil: never).
func WatchServerMemory(pid int, interval time.Duration, find func() (int, error)) (*MemoryWatch, error) {
	return watchMemory(pid, interval, find)
}

func watchMemory(pid int, interval time.Duration, find func() (int, error)) (*MemoryWatch, error) {
	self := pid <= 0
	if self {
		pid = os.Getpid()
	}
	p, start, who, err := openProcess(pid, self)
	if err != nil {
		return nil, err
	}
	m := &MemoryWatch{process: p, start: start, Process: who, interval: interval, withChildren: !self, find: find}
	if m.withChildren {
		m.Process += " with the processes it starts (each one's peak, summed)"
	}
	m.exact = runtime.GOOS == "linux" && resetPeak(p) == nil
	return m, nil
}

// openProcess opens pid, says when it started (processStart) and names
// it for the manifest.
func openProcess(pid int, self bool) (*process.Process, uint64, string, error) {
	who := fmt.Sprintf("pid %d", pid)
	if self {
		who = "tokentop (this process)"
	}
	p, err := process.NewProcess(int32(pid))
	if err == nil {
		_, err = p.MemoryInfo()
	}
	var start uint64
	if err == nil {
		start, err = processStart(int32(pid))
	}
	if err != nil {
		return nil, 0, "", fmt.Errorf("cannot read the memory of %s: %w", who, err)
	}
	if name, err := p.Name(); err == nil && name != "" && !self {
		who = fmt.Sprintf("%s (pid %d)", name, pid)
	}
	return p, start, who, nil
}

func procDir(p *process.Process) string { return filepath.Join("/proc", strconv.Itoa(int(p.Pid))) }

func resetPeak(p *process.Process) error {
	return os.WriteFile(filepath.Join(procDir(p), "clear_refs"), []byte("5"), 0)
}

// Begin starts a trial's watch.
func (m *MemoryWatch) Begin() {
	m.begun++
	m.refind()
	if m.lost {
		m.tree = nil // End says NaN: not measured
		return
	}
	m.tree = []*process.Process{m.process}
	if m.withChildren {
		m.tree = append(m.tree, descendants(m.process)...)
	}
	if m.exact {
		all := true
		for _, p := range m.tree {
			all = all && resetPeak(p) == nil
		}
		if all {
			return
		}
	}
	m.exact = false
	m.mu.Lock()
	m.peakMB = math.NaN()
	m.mu.Unlock()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.poll()
}

// refind looks for a server whose process exited: the same listener
// under a new pid after a restart. Its history says from which trial
// memory was another process's, or was not measured.
func (m *MemoryWatch) refind() {
	if m.find == nil {
		return
	}
	if start, err := processStart(m.process.Pid); err == nil && start == m.start {
		return // still running
	}
	if pid, err := m.find(); err == nil {
		if p, start, who, err := openProcess(pid, false); err == nil {
			m.process, m.start, m.lost = p, start, false
			m.history = append(m.history, fmt.Sprintf("from trial run %d (warmup included), %s (the server restarted)", m.begun, who))
			return
		}
	}
	if !m.lost {
		m.lost = true
		m.history = append(m.history, fmt.Sprintf("not measured from trial run %d (warmup included) on, but where it came back: the process exited and no server was found in its place", m.begun))
	}
}

// History says what became of the watched process during the run: ""
// where it ran throughout.
func (m *MemoryWatch) History() string { return strings.Join(m.history, "; ") }

// descendants are the processes p started, and theirs, found in one pass
// over the machine's processes (parents), before every trial: 1.0 ms
// among 70 processes, where gopsutil's Children, which reads every
// process again for each one it is asked of, took 6.6 ms
// (BenchmarkDescendants).
func descendants(p *process.Process) []*process.Process {
	children := map[int32][]int32{}
	for pid, ppid := range parents() {
		if pid != ppid {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []*process.Process
	for queue := []int32{p.Pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if q, err := process.NewProcess(c); err == nil {
				out = append(out, q)
			}
			queue = append(queue, c)
		}
	}
	return out
}

func (m *MemoryWatch) poll() {
	defer close(m.done)
	ticker := time.NewTicker(m.interval)
	defer ticker.Stop()
	for {
		m.sample()
		select {
		case <-ticker.C:
		case <-m.stop:
			m.sample()
			return
		}
	}
}

func (m *MemoryWatch) sample() {
	mb := m.treeMB()
	if math.IsNaN(mb) {
		return
	}
	m.mu.Lock()
	if math.IsNaN(m.peakMB) || mb > m.peakMB {
		m.peakMB = mb
	}
	m.mu.Unlock()
}

// treeMB is the trial's processes' resident memory now, summed; NaN
// where the watched one cannot be read (a child that exited adds 0).
func (m *MemoryWatch) treeMB() float64 {
	var sum float64
	for k, p := range m.tree {
		info, err := p.MemoryInfo()
		if err != nil {
			if k == 0 {
				return math.NaN()
			}
			continue
		}
		sum += float64(info.RSS) / (1 << 20)
	}
	return sum
}

// ResidentMB is the process's resident memory now, in MB; NaN when it
// cannot be read.
func (m *MemoryWatch) ResidentMB() float64 {
	info, err := m.process.MemoryInfo()
	if err != nil {
		return math.NaN()
	}
	return float64(info.RSS) / (1 << 20)
}

// End returns the peak resident memory since Begin in MB, NaN when the
// process could not be read (it exited, say).
func (m *MemoryWatch) End() float64 {
	if len(m.tree) == 0 {
		return math.NaN()
	}
	if m.exact {
		var sum float64
		for k, p := range m.tree {
			kb, err := readStatusKB(filepath.Join(procDir(p), "status"), "VmHWM")
			if err != nil {
				if k == 0 {
					return math.NaN()
				}
				continue // a child that exited during the trial
			}
			sum += kb / 1024
		}
		return sum
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peakMB
}

func readStatusKB(path, key string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseStatusKB(data, key)
}

// parseStatusKB finds "key:   1234 kB" in a /proc/<pid>/status file.
func parseStatusKB(data []byte, key string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%s: %q is not \"<n> kB\"", key, truncate(strings.TrimSpace(v), 40))
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a count of kB", key, truncate(fields[0], 40))
		}
		return float64(n), nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// FindListener returns the pid of the local process listening on TCP
// port (on every OS; only processes this user may see are named).
func FindListener(port int) (int, error) {
	conns, err := psnet.Connections("tcp")
	if err != nil {
		return 0, fmt.Errorf("cannot list this machine's sockets: %w", err)
	}
	listening := false
	for _, c := range conns {
		if c.Status != "LISTEN" || c.Laddr.Port != uint32(port) {
			continue
		}
		if c.Pid > 0 {
			return int(c.Pid), nil
		}
		listening = true
	}
	if listening {
		return 0, errors.New("the process listening on port " + strconv.Itoa(port) + " belongs to another user")
	}
	return 0, fmt.Errorf("nothing listens on port %d here", port)
}
