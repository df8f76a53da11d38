package telemetry

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// startServerTree starts a stand-in for `ollama serve`: a small shell
// whose child holds 80 MB, as Ollama's model runner holds the model.
func startServerTree(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `python3 -c "import time; x = bytearray(80 << 20); time.sleep(30)" & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children die with it
	if err := cmd.Start(); err != nil {
		t.Skip("no shell:", err)
	}
	t.Cleanup(func() { killTree(cmd) })
	return cmd
}

func killTree(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

// A server's memory counts the processes it starts: Ollama's front end
// is 42–45 MB while its model runner, a child, holds the model. A server
// that exits is looked for again at the next trial, and the history says
// from which trial memory was another process's, or not measured.
func TestServerMemoryCountsItsChildrenAndOutlivesARestart(t *testing.T) {
	server := startServerTree(t)
	var next []int // the pids find hands out, one a call; none left: not found
	find := func() (int, error) {
		if len(next) == 0 {
			return 0, fmt.Errorf("nothing listens on port 11434")
		}
		pid := next[0]
		next = next[1:]
		return pid, nil
	}
	m, err := WatchServerMemory(server.Process.Pid, 5*time.Millisecond, find)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(m.Process, "with the processes it starts (each one's peak, summed)") {
		t.Errorf("process %q", m.Process)
	}
	var peak float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m.Begin()
		if peak = m.End(); peak >= 80 {
			break
		}
	}
	if !(peak >= 80) || m.History() != "" {
		t.Fatalf("peak %.1f MB of a server whose child holds 80 MB; history %q", peak, m.History())
	}

	// Restarted: the old process gone, a new one in its place.
	killTree(server)
	again := startServerTree(t)
	next = []int{again.Process.Pid}
	m.Begin()
	m.End()
	if h := m.History(); !strings.HasPrefix(h, "from trial run ") || !strings.HasSuffix(h, fmt.Sprintf("sh (pid %d) (the server restarted)", again.Process.Pid)) {
		t.Errorf("after a restart: %q (trials begun %d)", h, m.begun)
	}
	// Gone for good: not measured, and said once.
	killTree(again)
	for range 2 {
		m.Begin()
		if mb := m.End(); !math.IsNaN(mb) {
			t.Errorf("%.1f MB of a server that is gone", mb)
		}
	}
	if h := m.History(); strings.Count(h, "not measured from trial run ") != 1 {
		t.Errorf("gone: %q", h)
	}
}

// A stat line's comm may hold spaces and parentheses: ppid comes after
// its last ')'.
func TestStatParent(t *testing.T) {
	for line, want := range map[string]int32{
		"4242 (ollama) S 1 4242 4242 0 -1":               1,
		"77 (a (tricky) name) R 4242 77 77 0 -1 4194560": 4242,
	} {
		if got, ok := statParent([]byte(line)); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", line, got, ok, want)
		}
	}
	if _, ok := statParent([]byte("4242 (cut")); ok {
		t.Error("a cut line read as whole")
	}
}

// BenchmarkDescendants finds a process's descendants as each trial's
// start does.
func BenchmarkDescendants(b *testing.B) {
	p, err := process.NewProcess(int32(os.Getppid()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		descendants(p)
	}
}
