package telemetry

import (
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMemoryWatchOfThisProcess(t *testing.T) {
	m, err := WatchMemory(0, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && !m.exact {
		t.Log("clear_refs is not writable here: the peak is polled")
	}
	for _, exact := range []bool{m.exact, false} {
		m.exact = exact
		m.Begin()
		ballast := make([]byte, 64<<20)
		for i := range ballast {
			ballast[i] = 1 // touch every page
		}
		peak := m.End()
		if math.IsNaN(peak) || peak < 64 {
			t.Errorf("peak %.1f MB after touching 64 MB (exact %v)", peak, exact)
		}
		_ = ballast[len(ballast)-1]
	}
	if m.Process != "tokentop (this process)" {
		t.Errorf("process %q", m.Process)
	}
}

func TestFindListenerFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := FindListener(port)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("port %d: pid %d (this is %d), %v", port, pid, os.Getpid(), err)
	}
	ln.Close()
	if _, err := FindListener(port); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("nothing listens on port %d", port)) {
		t.Errorf("closed port: %v", err)
	}
	if _, err := WatchMemory(1<<30, time.Millisecond); err == nil || !strings.Contains(err.Error(), "cannot read the memory of pid") {
		t.Errorf("no such process: %v", err)
	}
}

func FuzzParseStatusKB(f *testing.F) {
	f.Add([]byte("Name:\tx\nVmHWM:\t  900000 kB\nVmRSS:\t  812345 kB\n"))
	f.Add([]byte("VmRSS: 12 MB\n"))
	f.Add([]byte("VmRSS:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if kb, err := parseStatusKB(data, "VmRSS"); err == nil && (kb < 0 || math.IsNaN(kb)) {
			t.Errorf("%q gave %v", data, kb)
		}
	})
}

// BenchmarkResidentMB: one poll of a process's resident memory, taken
// every --power-interval where the peak cannot be read exactly.
func BenchmarkResidentMB(b *testing.B) {
	m, err := WatchMemory(0, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if math.IsNaN(m.ResidentMB()) {
			b.Fatal("no RSS")
		}
	}
}
