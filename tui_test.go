package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tokentop/tokentop/session"
)

// The real-terminal test: the built binary in tmux, driven with send-keys
// and read with capture-pane, asserting on what a person would see.
func TestDashboardInARealTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("TOKENTOP_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is missing; .ci/run installs it")
		}
		t.Skip("tmux is not installed here; .ci/run installs it, so CI runs this test")
	}
	bin := buildBinary(t)
	// The small terminal also runs with NO_COLOR set.
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		noColor := size[0] == 80
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) { driveDashboard(t, bin, size[0], size[1], noColor) })
	}
}

type terminal struct {
	t      *testing.T
	socket string
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (term *terminal) screen() string { return term.tmux("capture-pane", "-p", "-t", "tt") }

func (term *terminal) keys(keys ...string) {
	term.tmux(append([]string{"send-keys", "-t", "tt"}, keys...)...)
}

func (term *terminal) waitFor(what string, within time.Duration) string {
	term.t.Helper()
	deadline := time.Now().Add(within)
	for {
		screen := term.screen()
		if strings.Contains(screen, what) {
			return screen
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("%q did not appear within %v; the screen:\n%s", what, within, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func driveDashboard(t *testing.T, bin string, w, h int, noColor bool) {
	dir := t.TempDir()
	term := &terminal{t: t, socket: filepath.Join(dir, "tmux.sock")}
	data := filepath.Join(dir, "data")
	env := fmt.Sprintf("XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s", data, filepath.Join(dir, "config"))
	if noColor {
		env += " NO_COLOR=1"
	}
	term.tmux("new-session", "-d", "-s", "tt", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		fmt.Sprintf("env %s %s; echo tokentop exited $?; sleep 600", env, bin))
	t.Cleanup(func() { exec.Command("tmux", "-S", term.socket, "kill-server").Run() })

	// The picker: filter the profiles to quick, type a trial count, start.
	term.waitFor("✓ in process", 20*time.Second)
	term.keys("/")
	term.keys("-l", "quick")
	term.keys("Enter", "Tab", "Tab", "Tab")
	const trials = 250
	term.keys("-l", strconv.Itoa(trials))
	term.keys("Enter")

	screen := term.waitFor(fmt.Sprintf("/%d timed", trials), 20*time.Second)
	// A capture can land while the terminal is still painting a frame:
	// each piece must be there within a few frames, not in the first.
	for _, want := range []string{"tokentop quick · builtin · stories260K", "e2e ms", "mean e2e ms ±95% CI", "power ·", "no NVIDIA GPU", "stats", "p pause", "q quit"} {
		screen = term.waitFor(want, 5*time.Second)
	}
	// Arms are colored (foreground SGR 3x/9x/38), unless NO_COLOR is set.
	colored := regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;)`).MatchString(term.tmux("capture-pane", "-p", "-e", "-t", "tt"))
	if colored == noColor {
		t.Errorf("NO_COLOR=%v but colors on screen: %v", noColor, colored)
	}
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if len(lines) > h {
		t.Errorf("the dashboard has %d lines in a %d-line terminal", len(lines), h)
	}

	// Pause: once the trial in flight is done, the count must stand still.
	term.keys("p")
	term.waitFor("paused", 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	before := timedCount(t, term.screen(), trials)
	time.Sleep(700 * time.Millisecond)
	if after := timedCount(t, term.screen(), trials); after != before || after == trials {
		t.Fatalf("paused at %d timed trials, then %d", before, after)
	}
	term.keys("p")

	screen = term.waitFor("Run complete", 60*time.Second)
	sessions := filepath.Join(data, "tokentop", "sessions")
	paths, _ := filepath.Glob(filepath.Join(sessions, "*.toml"))
	if len(paths) != 1 {
		t.Fatalf("sessions saved: %v", paths)
	}
	// The file's name is always there; its folders where they fit. A
	// capture can land while the done view's first frame is still being
	// painted (its key line last): each piece within a few frames.
	for _, want := range []string{"Run complete · saved", filepath.Base(paths[0]), "greedy", "e2e ms", "r report"} {
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(unboxed(screen), want) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			screen = term.screen()
		}
		if !strings.Contains(unboxed(screen), want) {
			t.Errorf("%q is not on the done view:\n%s", want, screen)
		}
	}
	s, err := session.Load(paths[0])
	if err != nil || s.Manifest.Status != session.StatusComplete || len(s.Records) != trials+1 {
		t.Fatalf("session %s: status %s, %d records, %v", paths[0], s.Manifest.Status, len(s.Records), err)
	}

	// q leaves the alternate screen and prints the summary and where the
	// files are, fitted to the terminal: joining the lines the terminal
	// itself wrapped (-J) shows any line printed wider than it.
	term.keys("q")
	term.waitFor("tokentop exited 0", 10*time.Second)
	printed := term.tmux("capture-pane", "-p", "-J", "-t", "tt")
	if !strings.Contains(printed, paths[0]) || !strings.Contains(printed, "median [95% CI]") {
		t.Errorf("the summary or the saved path is not printed after quitting:\n%s", printed)
	}
	for _, line := range strings.Split(printed, "\n") {
		// Only a word longer than the terminal (the path) may wrap.
		if utf8.RuneCountInString(line) > w && len(strings.Fields(line)) > 1 {
			t.Errorf("a %d-column line in a %d-column terminal: %q", utf8.RuneCountInString(line), w, line)
		}
	}
}

// unboxed joins the screen's lines without panel borders, so that text
// wrapped inside a panel reads as one string.
func unboxed(screen string) string {
	var b strings.Builder
	for _, line := range strings.Split(screen, "\n") {
		b.WriteString(strings.TrimRight(strings.Trim(line, "│╭╮╰╯"), " "))
	}
	return b.String()
}

var timedCountPattern = regexp.MustCompile(`(\d+)/(\d+) timed`)

func timedCount(t *testing.T, screen string, trials int) int {
	t.Helper()
	for _, m := range timedCountPattern.FindAllStringSubmatch(screen, -1) {
		if m[2] == strconv.Itoa(trials) {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatalf("no trial count on the screen:\n%s", screen)
	return 0
}

// startInTmux runs the binary with args in a w×h tmux session whose data
// folders are under dir, echoing its exit status when it ends.
func startInTmux(t *testing.T, bin, dir string, w, h int, args ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("TOKENTOP_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is missing; .ci/run installs it")
		}
		t.Skip("tmux is not installed here; .ci/run installs it, so CI runs this test")
	}
	term := &terminal{t: t, socket: filepath.Join(dir, "tmux.sock")}
	env := fmt.Sprintf("XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s NO_COLOR=1", filepath.Join(dir, "data"), filepath.Join(dir, "config"))
	term.tmux("new-session", "-d", "-s", "tt", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		fmt.Sprintf("env %s %s %s; echo tokentop exited $?; sleep 600", env, bin, strings.Join(args, " ")))
	t.Cleanup(func() { exec.Command("tmux", "-S", term.socket, "kill-server").Run() })
	return term
}

// TestCtrlCStopsADashboardRunInARealTerminal: ctrl+c on the dashboard
// opened the q question and the run went on to its cap. It stops the run
// at once, saves it as partial and exits 130, as SIGINT does.
func TestCtrlCStopsADashboardRunInARealTerminal(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	term := startInTmux(t, bin, dir, 80, 24, "run", "--profile", "quick", "--trials", "100000", "--warmup", "1", "--max-tokens", "8", "--out", out)
	term.waitFor("/100000 timed", 30*time.Second)
	term.keys("C-c")
	term.waitFor("tokentop exited 130", 30*time.Second)
	paths, _ := filepath.Glob(filepath.Join(out, "*.toml"))
	if len(paths) != 1 {
		t.Fatalf("sessions: %v", paths)
	}
	s, err := session.Load(paths[0])
	if err != nil || s.Manifest.Status != session.StatusPartial || len(s.Records) >= 100000 {
		t.Errorf("status %s, %d records, %v", s.Manifest.Status, len(s.Records), err)
	}
}

// TestTheDoneViewAtSixtyByTwentyAndItsReport: at 60×20 the done view
// panicked as its verdicts arrived (and the process exited 0); at 80×24
// h did, and no report was written. Both now show, h writes the page, and
// q exits 0.
func TestTheDoneViewAtSixtyByTwentyAndItsReport(t *testing.T) {
	bin := buildBinary(t)
	for _, size := range [][2]int{{60, 20}, {80, 24}} {
		dir := t.TempDir()
		term := startInTmux(t, bin, dir, size[0], size[1], "run", "--profile", "quick", "--arm", "name=cold", "--arm", "name=hot,temperature=0.8",
			"--trials", "40", "--warmup", "2", "--max-tokens", "8", "--out", filepath.Join(dir, "out"))
		term.waitFor("Run complete", 60*time.Second)
		term.waitFor("ITL CV", 60*time.Second) // the verdicts' last row
		term.keys("h")
		screen := term.waitFor("HTML report:", 30*time.Second)
		if strings.Contains(screen, "tokentop exited") {
			t.Fatalf("%dx%d: the program ended:\n%s", size[0], size[1], screen)
		}
		pages, _ := filepath.Glob(filepath.Join(dir, "out", "*.html"))
		if len(pages) != 1 {
			t.Errorf("%dx%d: reports written: %v", size[0], size[1], pages)
		}
		term.keys("q")
		term.waitFor("tokentop exited 0", 30*time.Second)
	}
}
