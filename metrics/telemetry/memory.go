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

// MemoryWatch measures one process's peak resident memory per trial.
// On Linux, where the kernel allows, it resets the process's high-water
// mark (clear_refs) at the trial's start and reads VmHWM at its end, so
// the peak is exact; elsewhere, or where it may not, it polls the
// resident size while the trial runs.
type MemoryWatch struct {
	process  *process.Process
	procDir  string // the process's /proc directory on Linux
	Process  string // whose memory, for the manifest
	interval time.Duration
	exact    bool // clear_refs works

	mu     sync.Mutex
	peakMB float64
	stop   chan struct{}
	done   chan struct{}
}

// WatchMemory watches pid (0: this process).
func WatchMemory(pid int, interval time.Duration) (*MemoryWatch, error) {
	who := "tokentop (this process)"
	if pid <= 0 {
		pid = os.Getpid()
	} else {
		who = fmt.Sprintf("pid %d", pid)
	}
	p, err := process.NewProcess(int32(pid))
	if err == nil {
		_, err = p.MemoryInfo()
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the memory of %s: %w", who, err)
	}
	if pid != os.Getpid() {
		if name, err := p.Name(); err == nil && name != "" {
			who = fmt.Sprintf("%s (pid %d)", name, pid)
		}
	}
	m := &MemoryWatch{process: p, procDir: filepath.Join("/proc", strconv.Itoa(pid)), Process: who, interval: interval}
	m.exact = runtime.GOOS == "linux" && m.resetPeak() == nil
	return m, nil
}

func (m *MemoryWatch) resetPeak() error {
	return os.WriteFile(filepath.Join(m.procDir, "clear_refs"), []byte("5"), 0)
}

// Begin starts a trial's watch.
func (m *MemoryWatch) Begin() {
	if m.exact && m.resetPeak() == nil {
		return
	}
	m.exact = false
	m.mu.Lock()
	m.peakMB = math.NaN()
	m.mu.Unlock()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.poll()
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
	mb := m.ResidentMB()
	if math.IsNaN(mb) {
		return
	}
	m.mu.Lock()
	if math.IsNaN(m.peakMB) || mb > m.peakMB {
		m.peakMB = mb
	}
	m.mu.Unlock()
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
	if m.exact {
		kb, err := readStatusKB(filepath.Join(m.procDir, "status"), "VmHWM")
		if err != nil {
			return math.NaN()
		}
		return kb / 1024
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
