package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/replay"
)

// The race detector watches the real binary through whole runs of what
// the suite's in-process tests do not reach together: an open loop, a
// server whose metrics are read, headless and on the dashboard in a
// terminal. Every such run once raced (the server metrics' totals,
// written again by a deferred stop while the end's summary read them: a
// -race build exited 66 in 5 of 5 runs). It runs in the race half of CI,
// where this test binary has the detector.
func TestTheRaceDetectorWatchesWholeRuns(t *testing.T) {
	if !raceEnabled {
		t.Skip("runs in the race detector's half of the suite")
	}
	if testing.Short() {
		t.Skip("builds a -race binary and runs it")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("TOKENTOP_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is missing; .ci/run installs it")
		}
		t.Skip("tmux is not installed here; .ci/run installs it, so CI runs this test")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tokentop-race")
	if out, err := exec.Command("go", "build", "-race", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, out)
	}
	srv := replay.NewServer(t, replay.Route{
		"GET /health":      replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":       replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completion": replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream")),
		"GET /metrics":     replay.Serve(replay.Load(t, "llamacpp/metrics_busy")),
	})
	run := []string{"run", "--backend", "llamacpp", "--url", srv.URL, "--profile", "quick", "--rate", "20", "--trials", "60", "--warmup", "1"}

	// Headless: the end's summary is printed as the run's last writes
	// are made.
	headless := exec.Command(bin, append(run, "--headless", "--out", filepath.Join(dir, "headless"))...)
	headless.Env = append(os.Environ(), "GORACE=halt_on_error=0")
	if out, err := headless.CombinedOutput(); err != nil || strings.Contains(string(out), "DATA RACE") {
		t.Errorf("the -race binary, headless: %v\n%s", err, out)
	}

	// The dashboard, in a terminal.
	term := &terminal{t: t, socket: filepath.Join(dir, "tmux.sock")}
	races := filepath.Join(dir, "race.log")
	env := fmt.Sprintf("XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s GORACE=halt_on_error=0", filepath.Join(dir, "data"), filepath.Join(dir, "config"))
	command := fmt.Sprintf("env %s %s %s 2>%s; echo tokentop exited $?; sleep 600", env, bin, strings.Join(run, " "), races)
	term.tmux("new-session", "-d", "-s", "tt", "-x", strconv.Itoa(120), "-y", strconv.Itoa(40), command)
	t.Cleanup(func() { exec.Command("tmux", "-S", term.socket, "kill-server").Run() })
	term.waitFor("Run complete", 3*time.Minute)
	term.keys("q")
	screen := term.waitFor("tokentop exited", 30*time.Second)
	log, _ := os.ReadFile(races)
	if strings.Contains(string(log), "DATA RACE") || !strings.Contains(screen, "tokentop exited 0") {
		t.Errorf("the -race binary:\n%s\n%s", screen, log)
	}
}
