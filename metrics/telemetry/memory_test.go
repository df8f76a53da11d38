package telemetry

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMemoryWatchOfThisProcess(t *testing.T) {
	m, err := WatchMemory("/proc", 0, 5*time.Millisecond)
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	m.Begin()
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1 // touch every page
	}
	peak := m.End()
	if math.IsNaN(peak) || peak < 64 {
		t.Errorf("peak %.1f MB after touching 64 MB (exact %v)", peak, m.exact)
	}
	_ = ballast[len(ballast)-1]
	if m.Process != "tokentop (this process)" {
		t.Errorf("process %q", m.Process)
	}
}

// fakeProc writes a /proc-like tree: a llama-server listening on 8080.
func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 424242 1 0000000000000000 100 0 0 10 0\n"+
		"   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 515151 1 0000000000000000 20 4 30 10 -1\n")
	write("4242/comm", "llama-server\n")
	write("4242/status", "Name:\tllama-server\nVmHWM:\t  900000 kB\nVmRSS:\t  812345 kB\n")
	os.MkdirAll(filepath.Join(root, "4242", "fd"), 0o755)
	if err := os.Symlink("socket:[424242]", filepath.Join(root, "4242", "fd", "7")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "77", "fd"), 0o755)
	os.Symlink("socket:[515151]", filepath.Join(root, "77", "fd", "3")) // a client, not the listener
	return root
}

func TestFindListenerAndPollItsMemory(t *testing.T) {
	root := fakeProc(t)
	pid, err := FindListener(root, 8080)
	if err != nil || pid != 4242 {
		t.Fatalf("pid %d, %v", pid, err)
	}
	if _, err := FindListener(root, 11434); err == nil || !strings.Contains(err.Error(), "nothing listens on port 11434") {
		t.Errorf("unused port: %v", err)
	}
	m, err := WatchMemory(root, pid, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// A fake tree cannot keep a high-water mark: take the polling path,
	// as for a process whose clear_refs this user may not write.
	m.exact = false
	m.Begin()
	time.Sleep(5 * time.Millisecond)
	if peak := m.End(); math.Abs(peak-812345.0/1024) > 1e-9 || m.Process != "llama-server (pid 4242)" {
		t.Errorf("peak %.3f MB of %s", peak, m.Process)
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

func FuzzListeningInodes(f *testing.F) {
	f.Add([]byte("   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 424242 1\n"), uint16(8080))
	f.Add([]byte("0: :::: 0A a b c d e f\n"), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, port uint16) {
		// Whatever the table holds, a well-formed LISTEN line for port
		// added after it must be found.
		line := fmt.Sprintf("\n   9: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 777777 1\n", port)
		if !slices.Contains(listeningInodes(append(slices.Clone(data), line...), int(port)), "777777") {
			t.Errorf("the listener on %d was not found after %q", port, data)
		}
	})
}
