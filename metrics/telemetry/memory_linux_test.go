package telemetry

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// startServerTree starts a stand-in for `ollama serve`: a small shell
// whose child holds 80 MB, as Ollama's model runner holds the model. The
// child is this test binary (TestHelperHoldsEightyMB): with a python3
// child (behind pyenv's shims, 0.35 s to start on an idle machine), CI's
// -race run once read only the shell's 4.4 MB in the 10 s the test then
// waited, the child not seen holding its 80 MB.
func startServerTree(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `"$0" -test.run='^TestHelperHoldsEightyMB$' & wait`, os.Args[0])
	cmd.Env = append(os.Environ(), holdEightyMB+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children die with it
	if err := cmd.Start(); err != nil {
		t.Skip("no shell:", err)
	}
	t.Cleanup(func() { killTree(cmd) })
	return cmd
}

// holdEightyMB is the variable that makes TestHelperHoldsEightyMB hold
// its memory: set, the test binary is startServerTree's child.
const holdEightyMB = "TOKENTOP_TEST_HOLD_80MB"

// TestHelperHoldsEightyMB is startServerTree's child, not a test: it
// holds 80 MB, every page written, until killed (a minute at most).
func TestHelperHoldsEightyMB(t *testing.T) {
	if os.Getenv(holdEightyMB) != "1" {
		t.Skip("startServerTree's child, run by it")
	}
	held := make([]byte, 80<<20)
	for i := range held {
		held[i] = 1
	}
	time.Sleep(time.Minute)
	runtime.KeepAlive(held)
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
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
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

// A stat line's comm may hold spaces and parentheses: ppid and the start
// time are counted from after its last ')'.
func TestStatFields(t *testing.T) {
	for line, want := range map[string][2]uint64{
		"8629 (cat) R 8626 8626 1143 0 -1 4194304 123 0 0 0 0 0 0 0 20 0 1 0 630133 3133440 380": {8626, 630133},
		"77 (a (tricky) name) R 4242 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 99 0 0":         {4242, 99},
	} {
		ppid, okParent := statParent([]byte(line))
		start, okStart := statStart([]byte(line))
		if !okParent || !okStart || uint64(ppid) != want[0] || start != want[1] {
			t.Errorf("%q: ppid %d %v, start %d %v, want %v", line, ppid, okParent, start, okStart, want)
		}
	}
	if ppid, ok := statParent([]byte("4242 (ollama) S 1 4242")); !ok || ppid != 1 {
		t.Errorf("a short line's ppid: %d %v", ppid, ok)
	}
	for _, cut := range []string{"4242 (cut", "4242 (ollama) S 1 4242 4242 0 -1", "4242 (ollama) S 1 4242 4242 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0"} {
		if start, ok := statStart([]byte(cut)); ok {
			t.Errorf("%q: a start time (%d) read from a cut line", cut, start)
		}
	}
	if _, ok := statParent([]byte("4242 (cut")); ok {
		t.Error("a cut line read as whole")
	}
}

// A process keeps its start time, and the watch tells it from another.
// The start that is read twice is a child's: under qemu's user emulation
// (.ci/portable-tests) a process's own /proc/self/stat is qemu's answer,
// whose start is that of the thread reading it (Go moves a goroutine
// between threads), where the kernel's, read for any other process, is
// the process's. In use the watch rereads only a server's start, which is
// never tokentop's own (where a test's server runs in process, under qemu
// its history may read a restart; no test asserts on that history).
func TestProcessStartIsAnIdentity(t *testing.T) {
	self, err := processStart(int32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	child := startServerTree(t)
	theirs, err := processStart(int32(child.Process.Pid))
	if err != nil || theirs < self {
		t.Fatalf("a child started at %d (%v), before its parent's %d", theirs, err, self)
	}
	if again, err := processStart(int32(child.Process.Pid)); err != nil || again != theirs {
		t.Fatalf("a child started at %d, then at %d (%v)", theirs, again, err)
	}
	killTree(child)
	if _, err := processStart(int32(child.Process.Pid)); err == nil {
		t.Error("a process that exited still has a start time")
	}
}

// The stat line's parsers never panic on what /proc might hold.
func FuzzStatFields(f *testing.F) {
	f.Add([]byte("8629 (cat) R 8626 8626 1143 0 -1 4194304 123 0 0 0 0 0 0 0 20 0 1 0 630133 3133440 380"))
	f.Add([]byte("77 (a (tricky) name) R"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, stat []byte) {
		statParent(stat)
		statStart(stat)
	})
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
