package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MemoryWatch measures one process's peak resident memory per trial.
// Where the kernel allows, it resets the process's high-water mark
// (clear_refs) at the trial's start and reads VmHWM at its end, so the
// peak is exact; otherwise it polls VmRSS while the trial runs.
type MemoryWatch struct {
	proc     string // the process's /proc directory
	Process  string // whose memory, for the manifest
	interval time.Duration
	exact    bool // clear_refs works

	mu     sync.Mutex
	peakKB float64
	stop   chan struct{}
	done   chan struct{}
}

// WatchMemory watches pid (0: this process) under procRoot ("/proc").
func WatchMemory(procRoot string, pid int, interval time.Duration) (*MemoryWatch, error) {
	dir, who := filepath.Join(procRoot, "self"), "tokentop (this process)"
	if pid > 0 {
		dir = filepath.Join(procRoot, strconv.Itoa(pid))
		who = fmt.Sprintf("pid %d", pid)
		if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
			who = fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), pid)
		}
	}
	if _, err := readStatusKB(filepath.Join(dir, "status"), "VmRSS"); err != nil {
		return nil, fmt.Errorf("cannot read the memory of %s: %w", who, err)
	}
	m := &MemoryWatch{proc: dir, Process: who, interval: interval}
	m.exact = m.resetPeak() == nil
	return m, nil
}

func (m *MemoryWatch) resetPeak() error {
	return os.WriteFile(filepath.Join(m.proc, "clear_refs"), []byte("5"), 0)
}

// Begin starts a trial's watch.
func (m *MemoryWatch) Begin() {
	if m.exact && m.resetPeak() == nil {
		return
	}
	m.exact = false
	m.mu.Lock()
	m.peakKB = math.NaN()
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
	kb, err := readStatusKB(filepath.Join(m.proc, "status"), "VmRSS")
	if err != nil {
		return
	}
	m.mu.Lock()
	if math.IsNaN(m.peakKB) || kb > m.peakKB {
		m.peakKB = kb
	}
	m.mu.Unlock()
}

// ResidentMB is the process's resident memory now, in MB; NaN when it
// cannot be read.
func (m *MemoryWatch) ResidentMB() float64 {
	kb, err := readStatusKB(filepath.Join(m.proc, "status"), "VmRSS")
	if err != nil {
		return math.NaN()
	}
	return kb / 1024
}

// End returns the peak resident memory since Begin in MB, NaN when the
// process could not be read (it exited, say).
func (m *MemoryWatch) End() float64 {
	if m.exact {
		kb, err := readStatusKB(filepath.Join(m.proc, "status"), "VmHWM")
		if err != nil {
			return math.NaN()
		}
		return kb / 1024
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peakKB / 1024
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
// port, from /proc/net/tcp{,6} and the processes' socket descriptors
// (only those this user may read).
func FindListener(procRoot string, port int) (int, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(procRoot, "net", table))
		if err != nil {
			continue
		}
		for _, inode := range listeningInodes(data, port) {
			inodes[inode] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d here", port)
	}
	procs, _ := filepath.Glob(filepath.Join(procRoot, "[0-9]*"))
	for _, dir := range procs {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return strconv.Atoi(filepath.Base(dir))
			}
		}
	}
	return 0, errors.New("the process listening on port " + strconv.Itoa(port) + " belongs to another user")
}

// listeningInodes parses a /proc/net/tcp table: the socket inodes in
// state LISTEN (0A) on port.
func listeningInodes(data []byte, port int) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
			out = append(out, f[9])
		}
	}
	return out
}
