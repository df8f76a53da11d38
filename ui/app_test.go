package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/list"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/registry"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// testStart pins the clock, so elapsed and ETA are the same on any machine.
var testStart = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func testConfig(now *time.Time) Config {
	return Config{Profiles: profiles.Builtins(), Base: runner.Options{Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride},
		Now: func() time.Time { return *now }}
}

// testRun is an App showing a run whose events the test delivers.
type testRun struct {
	app  *App
	plan *runner.Plan
	now  time.Time
}

func newTestRun(t testing.TB, profile string) *testRun {
	t.Helper()
	p, err := profiles.Find(profile)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := runner.Resolve(p, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride})
	if err != nil {
		t.Fatal(err)
	}
	plan.Pause = &runner.Pause{}
	tr := &testRun{plan: plan, now: testStart}
	tr.app = New(context.Background(), testConfig(&tr.now))
	_, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tr.app.attach(plan, &activeRun{plan: plan, cancel: cancel, events: make(chan runner.Event), abandoned: make(chan struct{}), done: make(chan struct{})})
	return tr
}

// syntheticRun makes the events of a run: every arm gets warmup then
// timed trials, interleaved, with e2e spread by a fixed pattern and the
// running convergence points the runner would send.
func syntheticRun(arms []string, warmup, trials int) []runner.Event {
	warmups := map[string]int{}
	for _, a := range arms {
		warmups[a] = warmup
	}
	events := []runner.Event{runner.Started{Manifest: "/sessions/s.toml", Arms: arms, Warmup: warmups, TrialsPerArm: trials,
		Power: session.PowerInfo{GPU: "no NVIDIA GPU found (the NVML library is not installed)", CPU: "no CPU package energy (no /sys/class/powercap)",
			RSSProcess: "tokentop (this process)"}}}
	series := make([]metrics.Series, len(arms))
	at := testStart
	for round := 0; round < warmup+trials; round++ {
		for i, arm := range arms {
			e2e := 20 + float64(i)*3 + float64((round*7+i*3)%11)
			if round < warmup {
				e2e += 15
			}
			rec := session.Record{Arm: arm, Trial: round + 1, Phase: session.PhaseTimed, Status: session.StatusOK, StartedAt: at, OutputTokens: 64,
				EnergyQuality: session.EnergyUnavailable, EnergyJ: math.NaN(), AvgPowerW: math.NaN(), JPerToken: math.NaN(), PeakRSSMB: math.NaN()}
			if round < warmup {
				rec.Phase = session.PhaseWarmup
			}
			rec.Timings = metrics.Timings{TTFTMs: 1 + float64(round%3)*0.5, E2EMs: e2e, TPOTMs: e2e / 64, ITLMeanMs: e2e / 64,
				OutputTPS: 64 / (e2e / 1000), ITLP50Ms: math.NaN(), ITLMaxMs: e2e / 40, ITLCV: 0.2 + float64((round*5+i)%7)/50}
			var point metrics.Point
			if rec.Counted() {
				point = series[i].Add(e2e)
			}
			done := runner.TrialDone{Record: rec, Point: point, Warmups: min(round+1, warmup), Measured: max(0, round+1-warmup)}
			events = append(events, done)
			at = at.Add(time.Duration(e2e * float64(time.Millisecond)))
		}
	}
	return events
}

func finished(events []runner.Event, status string) runner.Finished {
	var records []session.Record
	for _, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			records = append(records, td.Record)
		}
	}
	summary := map[string]session.ArmSummary{}
	for arm, recs := range session.ByArm(records) {
		summary[arm] = session.SummarizeArm(recs, 1, 0.01, 0)
	}
	return runner.Finished{Status: status, Manifest: "/sessions/s.toml", Summary: summary}
}

func (tr *testRun) send(msgs ...tea.Msg) {
	for _, m := range msgs {
		tr.app.Update(m)
	}
}

// sendAndRun delivers msg and then the message its command answers with,
// as the program would; for commands that do a little I/O and return.
func (tr *testRun) sendAndRun(msg tea.Msg) {
	if _, cmd := tr.app.Update(msg); cmd != nil {
		if answer := cmd(); answer != nil {
			tr.app.Update(answer)
		}
	}
}

func (tr *testRun) screen() string { return ansi.Strip(tr.app.View().Content) }

func press(s string) tea.KeyPressMsg {
	switch s {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	}
	return tea.KeyPressMsg{Code: rune(s[0]), Text: s}
}

// checkFits fails when the frame is not exactly w×h cells.
func checkFits(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("%d lines at %dx%d", len(lines), w, h)
	}
	for i, l := range lines {
		if got := lipgloss.Width(l); got != w {
			t.Errorf("line %d is %d cells wide at %dx%d: %q", i, got, w, h, ansi.Strip(l))
		}
	}
}

func TestDashboardShowsEveryPanelAtEverySize(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}, {200, 60}} {
		tr := newTestRun(t, "greedy-vs-sampling")
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		tr.send(eventsMsg(syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 30)))
		tr.now = testStart.Add(4 * time.Second)
		tr.send(tickMsg{})
		frame := tr.app.View().Content
		checkFits(t, frame, size[0], size[1])
		screen := tr.screen()
		for _, want := range []string{"e2e ms", "mean e2e ms ±95% CI", "power ·", "no NVIDIA GPU found", "stats", "greedy", "temp-0.8", "top-k-40", "timed", "0:04", "p pause"} {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: %q missing from\n%s", size[0], size[1], want, screen)
			}
		}
	}
}

func TestResizeRelaysEveryPanel(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.send(eventsMsg(syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 10)), tickMsg{})
	for _, size := range [][2]int{{200, 60}, {80, 24}, {100, 30}} {
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFits(t, tr.app.View().Content, size[0], size[1])
	}
}

func TestFramesArePacedByTheTick(t *testing.T) {
	tr := newTestRun(t, "quick")
	events := syntheticRun([]string{"greedy"}, 1, 10)
	tr.send(eventsMsg(events[:1]), tickMsg{})
	before := tr.screen()
	tr.send(eventsMsg(events[1:]))
	if tr.screen() != before {
		t.Error("trials redrew the frame before the tick")
	}
	tr.send(tickMsg{})
	if !strings.Contains(tr.screen(), "10/10 timed") {
		t.Errorf("the tick did not draw the trials:\n%s", tr.screen())
	}
}

func TestStatsTableShowsTheArmsFigures(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun([]string{"greedy", "temp-0.8"}, 2, 25)
	tr.send(tea.WindowSizeMsg{Width: 100, Height: 30}, eventsMsg(events), tickMsg{})
	var e2e, warm []float64
	for _, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok && td.Record.Arm == "greedy" {
			if td.Record.Phase == session.PhaseWarmup {
				warm = append(warm, td.Record.E2EMs)
			} else {
				e2e = append(e2e, td.Record.E2EMs)
			}
		}
	}
	st := metrics.Describe(e2e)
	wantRow := []string{"greedy", "25", "0", formatMs(st.Mean), formatMs(st.Median), formatMs(st.P95), formatMs(st.P99), formatMs(st.Max),
		number(st.CV, 3), number(metrics.Median(warm)/st.Median, 2)}
	fields := statsRow(t, tr.screen(), "greedy")
	if len(fields) < 11 {
		t.Fatalf("stats row %q", fields)
	}
	got := append(fields[:9:9], fields[10])
	if strings.Join(got, " ") != strings.Join(wantRow, " ") {
		t.Errorf("stats row\n got %v\nwant %v", got, wantRow)
	}
}

// statsRow finds arm's row under the stats table's header.
func statsRow(t *testing.T, screen, arm string) []string {
	t.Helper()
	inTable := false
	for _, line := range strings.Split(screen, "\n") {
		fields := strings.Fields(strings.Trim(line, "│ "))
		if len(fields) > 2 && fields[0] == "arm" && fields[2] == "deg" {
			inTable = true
		} else if inTable && len(fields) > 0 && fields[0] == arm {
			return fields
		}
	}
	t.Fatalf("no stats row for %s:\n%s", arm, screen)
	return nil
}

func TestDegradedTrialSaysWhy(t *testing.T) {
	tr := newTestRun(t, "quick")
	events := syntheticRun([]string{"greedy"}, 0, 3)
	bad := events[2].(runner.TrialDone)
	bad.Record.Status, bad.Record.Error = session.StatusTimeout, "no complete answer within the 30s trial timeout"
	events[2] = bad
	tr.send(tea.WindowSizeMsg{Width: 120, Height: 30}, eventsMsg(events), tickMsg{})
	screen := tr.screen()
	if !strings.Contains(screen, "greedy trial 2 (timed) timeout: no complete answer within the 30s trial timeout") {
		t.Errorf("event line does not say why:\n%s", screen)
	}
	if row := statsRow(t, screen, "greedy"); row[1] != "2" || row[2] != "1" {
		t.Errorf("stats row %v does not count 2 ok and 1 degraded", row)
	}
}

func TestStoppedArmsSayWhy(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	why := "median within ±0.73% after 12 trials"
	tr.send(tea.WindowSizeMsg{Width: 160, Height: 48}, eventsMsg(append(syntheticRun([]string{"greedy", "temp-0.8"}, 1, 12),
		runner.ArmStopped{Arm: "greedy", Decision: runner.Decision{Stop: true, Reason: "the long " + why, Short: why}})), tickMsg{})
	if screen := tr.screen(); !strings.Contains(screen, "stopped: "+why) || strings.Count(screen, "stopped") != 1 {
		t.Errorf("the header does not say which arm stopped and why:\n%s", screen)
	}
	// 80×24 puts the arms on one line: the word stays.
	tr.send(tea.WindowSizeMsg{Width: 80, Height: 24}, tickMsg{})
	if screen := tr.screen(); !strings.Contains(screen, "stopped") {
		t.Errorf("the compact header lost the stop:\n%s", screen)
	}
}

func TestViewKeys(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.send(eventsMsg(syntheticRun([]string{"greedy", "temp-0.8"}, 1, 12)), tickMsg{})
	tr.send(press("m"))
	if !strings.Contains(tr.screen(), "TTFT ms") {
		t.Errorf("m did not switch the histogram to TTFT:\n%s", tr.screen())
	}
	tr.send(press("m"))
	if !strings.Contains(tr.screen(), "TPOT ms") {
		t.Errorf("m does not cycle through the metrics")
	}
	tr.send(press("c"))
	if !strings.Contains(tr.screen(), "running CV") {
		t.Errorf("c did not switch the chart to CV")
	}
	tr.send(press("tab"), press("tab"), press("z"))
	screen := tr.screen()
	if !strings.Contains(screen, "power ·") || strings.Contains(screen, "stats ·") || strings.Contains(screen, "running CV") {
		t.Errorf("tab tab z should zoom the power panel alone:\n%s", screen)
	}
	tr.send(tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}, press("z"))
	if !strings.Contains(tr.screen(), "stats ·") || tr.app.dash.focus != panelConvergence {
		t.Errorf("shift+tab moved focus to %d, want the convergence panel", tr.app.dash.focus)
	}
	tr.send(press("?"))
	if !strings.Contains(tr.screen(), "shift+tab") {
		t.Errorf("? does not show the full help:\n%s", tr.screen())
	}
}

func TestPauseAndStop(t *testing.T) {
	tr := newTestRun(t, "quick")
	tr.send(eventsMsg(syntheticRun([]string{"greedy"}, 0, 2)), tickMsg{})
	tr.send(press("p"))
	if !tr.plan.Pause.Held() || !strings.Contains(tr.screen(), "paused") {
		t.Fatalf("p did not hold the run:\n%s", tr.screen())
	}
	tr.send(press("p"))
	if tr.plan.Pause.Held() || strings.Contains(tr.screen(), "paused") {
		t.Fatalf("second p did not resume")
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.app.run.cancel = cancel
	tr.send(press("s"))
	if ctx.Err() == nil || !strings.Contains(tr.screen(), "stopping") {
		t.Errorf("s did not stop the run:\n%s", tr.screen())
	}
}

func TestQuitAsksWhileRunning(t *testing.T) {
	tr := newTestRun(t, "quick")
	ctx, cancel := context.WithCancel(context.Background())
	tr.app.run.cancel = cancel
	_, cmd := tr.app.Update(press("q"))
	if cmd != nil || !strings.Contains(tr.screen(), "Stop the run and quit?") {
		t.Fatalf("q while running must ask first:\n%s", tr.screen())
	}
	tr.send(press("n"))
	if strings.Contains(tr.screen(), "Stop the run and quit?") || ctx.Err() != nil {
		t.Fatal("n must keep the run going")
	}
	tr.send(press("q"), press("y"))
	if ctx.Err() == nil {
		t.Fatal("y must stop the run")
	}
	// The program quits only once the runner has saved the session.
	close(tr.app.run.done)
	if _, cmd := tr.app.Update(runEndedMsg{}); cmd == nil {
		t.Error("the end of the run did not quit")
	} else if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Errorf("the end of the run answered %T, want tea.QuitMsg", cmd())
	}
	// The command exits 130 on it, as on SIGINT.
	if !tr.app.Outcome().Interrupted {
		t.Error("quitting mid-run is not reported as an interruption")
	}
}

// TestCtrlCStopsTheRunAtOnce: ctrl+c on the dashboard went to the same
// question as q while the run went on behind it, and a second ctrl+c was
// ignored. It stops the run at once, as SIGINT does: the runner saves a
// partial session, and the command exits 130.
func TestCtrlCStopsTheRunAtOnce(t *testing.T) {
	for _, first := range []string{"ctrl+c", "q"} {
		tr := newTestRun(t, "quick")
		ctx, cancel := context.WithCancel(context.Background())
		tr.app.run.cancel = cancel
		tr.send(press(first), press("ctrl+c"))
		if ctx.Err() == nil || strings.Contains(tr.screen(), "Stop the run and quit?") {
			t.Fatalf("%s then ctrl+c: the run goes on:\n%s", first, tr.screen())
		}
		close(tr.app.run.done)
		if _, cmd := tr.app.Update(runEndedMsg{}); cmd == nil {
			t.Fatal("the end of the run did not quit")
		}
		if !tr.app.Outcome().Interrupted {
			t.Error("ctrl+c is not reported as an interruption")
		}
	}
}

// The results screen keeps the run's panels and puts the verdicts of the
// arms against the first at the top, at every size.
func TestDoneViewKeepsThePicturesAndGivesTheAnswer(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		tr := newTestRun(t, "greedy-vs-sampling")
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		events := syntheticRun([]string{"greedy", "temp-0.8"}, 2, 40)
		fin := finished(events, session.StatusComplete)
		fin.Manifest = writeSession(t, t.TempDir(), "A", 0)
		tr.send(eventsMsg(append(events, fin)))
		close(tr.app.run.done)
		_, test := tr.app.Update(runEndedMsg{})
		screen := tr.screen()
		if test == nil || !strings.Contains(screen, "computing the verdicts") {
			t.Fatalf("%v: the verdicts must be a command, said while it runs:\n%s", size, screen)
		}
		tr.send(test())
		screen = tr.screen()
		for _, want := range []string{"✓ Run complete · saved", filepath.Base(fin.Manifest), "verdicts · each arm against greedy (the baseline)",
			"e2e", "TTFT", "ITL mean", "ITL max", "ITL CV", "✗ slower +", "n.s. ", // the synthetic temp-0.8 is slower in e2e
			"e2e ms", "mean e2e ms ±95% CI", "power ·", "c compare", "r report", "q quit"} {
			if !strings.Contains(screen, want) {
				t.Errorf("%v: %q missing from the done view:\n%s", size, want, screen)
			}
		}
		if size[1] == 60 && !strings.Contains(screen, "stats ·") {
			t.Errorf("200×60 has room for the stats table:\n%s", screen)
		}
		checkFits(t, tr.app.View().Content, size[0], size[1])
	}
}

// savedRunDone is a two-arm run whose session is on disk, on its done view.
func savedRunDone(t *testing.T) (*testRun, runner.Finished) {
	tr := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun([]string{"greedy", "temp-0.8"}, 0, 5)
	fin := finished(events, session.StatusComplete)
	fin.Manifest = writeSession(t, t.TempDir(), "A", 0)
	tr.send(eventsMsg(append(events, fin)))
	close(tr.app.run.done)
	tr.send(runEndedMsg{})
	return tr, fin
}

func TestDoneViewShowsTheRepeatabilityReport(t *testing.T) {
	tr, _ := savedRunDone(t)
	_, compute := tr.app.Update(press("r"))
	if compute == nil || !strings.Contains(tr.screen(), "computing the repeatability report") {
		t.Fatalf("r should hand the report to a command:\n%s", tr.screen())
	}
	tr.send(compute())
	screen := tr.screen()
	if !strings.Contains(screen, "repeatability report") || !strings.Contains(screen, "greedy: 40 timed trials (+0 warmup)") || !strings.Contains(screen, "outliers") {
		t.Fatalf("report missing:\n%s", screen)
	}
	for _, key := range []string{"↑/↓ scroll", "r results", "c compare", "esc back"} {
		if !strings.Contains(screen, key) {
			t.Errorf("the report's keys lack %q:\n%s", key, screen)
		}
	}
	checkFits(t, tr.app.View().Content, 80, 24)
	tr.send(press("j"), press("j"))
	if scrolled := tr.screen(); scrolled == screen {
		t.Errorf("↓ did not scroll the report")
	}
	// c opens the chooser in the report's place, never below it, and the
	// run's charts keep the rows the short list does not need.
	tr.sendAndRun(press("c"))
	if screen := tr.screen(); !strings.Contains(screen, "this session's arms against each other") || !strings.Contains(screen, "enter compare") ||
		!strings.Contains(screen, "e2e ms") {
		t.Fatalf("c from the scrolled report must show the chooser over the charts:\n%s", screen)
	}
	tr.send(press("esc"))
	if _, again := tr.app.Update(press("r")); again != nil || !strings.Contains(tr.screen(), "repeatability report") {
		t.Errorf("r again should show the report without recomputing:\n%s", tr.screen())
	}
	tr.send(press("esc"))
	if !strings.Contains(tr.screen(), "e2e ms") {
		t.Errorf("esc should go back to the results:\n%s", tr.screen())
	}
}

// h writes the run's HTML report beside its manifest, off the UI's path,
// and says where; the compare screen writes its own.
func TestHWritesTheHTMLReportAndSaysWhere(t *testing.T) {
	tr, fin := savedRunDone(t)
	_, write := tr.app.Update(press("h"))
	if write == nil || !strings.Contains(tr.screen(), "writing the HTML report") {
		t.Fatalf("h should hand the report to a command:\n%s", tr.screen())
	}
	tr.send(write())
	page := strings.TrimSuffix(fin.Manifest, ".toml") + ".html"
	if doc, err := os.ReadFile(page); err != nil || !strings.Contains(string(doc), "temp-0.8 is ") {
		t.Fatalf("no report at %s: %v", page, err)
	}
	if screen := tr.screen(); !strings.Contains(screen, "✓ HTML report: "+page) {
		t.Errorf("the done view does not say where the report went:\n%s", screen)
	}
	checkFits(t, tr.app.View().Content, 80, 24)
	// The compare screen, this session's arms against each other.
	tr.sendAndRun(press("c"))
	tr.sendAndRun(press("enter"))
	if strings.Contains(tr.screen(), "✓ HTML report") {
		t.Errorf("the compare screen repeats the done view's report as its own:\n%s", tr.screen())
	}
	_, write = tr.app.Update(press("h"))
	if write == nil {
		t.Fatalf("h on the compare screen wrote nothing:\n%s", tr.screen())
	}
	if msg := write().(htmlWrittenMsg); msg.err != nil || !strings.Contains(filepath.Base(msg.path), "compare-A-greedy-vs-A-temp-0.8") {
		t.Errorf("the comparison's report: %+v", msg)
	}
}

// TestPickerShowsEveryProfileAndItsFocusAt80x24: eight profiles (the
// built-ins and a user's) all show at 80x24, one line each with the
// selected one's plan under them, and the focused box and field are marked
// with ▸, not by colour alone.
func TestPickerShowsEveryProfileAndItsFocusAt80x24(t *testing.T) {
	now := testStart
	cfg := testConfig(&now)
	mine := *cfg.Profiles[0]
	mine.Name, mine.Source = "my-profile", "user"
	cfg.Profiles = append(cfg.Profiles, &mine)
	if len(cfg.Profiles) < 8 {
		t.Fatalf("the test wants 8 profiles, has %d", len(cfg.Profiles))
	}
	a := New(context.Background(), cfg)
	a.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	screen := ansi.Strip(a.View().Content)
	checkFits(t, a.View().Content, 80, 24)
	for _, p := range cfg.Profiles {
		if !strings.Contains(screen, p.Name) {
			t.Errorf("profile %s missing at 80x24:\n%s", p.Name, screen)
		}
	}
	if !strings.Contains(screen, "3 warmup + 1500 trials") {
		t.Errorf("the selected profile's plan is not shown:\n%s", screen)
	}
	// The plan took the idle hint's line; the filter key is still listed.
	if !strings.Contains(screen, "/ filter") {
		t.Errorf("the profiles' filter key is not listed:\n%s", screen)
	}
	for _, want := range []string{"▸ Profiles", "▸ Backend", "▸ Run"} {
		screen := ansi.Strip(a.View().Content)
		if strings.Count(screen, "─ ▸ ") != 1 || !strings.Contains(screen, "─ "+want) {
			t.Errorf("focus should be marked on %q alone:\n%s", want, screen)
		}
		a.Update(press("tab"))
	}
	if screen := ansi.Strip(a.View().Content); !strings.Contains(screen, "▸ trials") || strings.Contains(screen, "▸ model") {
		t.Errorf("the focused field is not marked:\n%s", screen)
	}
}

func TestPickerStartsTheChosenRun(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	a.Update(probeMsg{0, Probe(context.Background(), a.picker.kinds[0], backends.Config{})})
	screen := ansi.Strip(a.View().Content)
	for _, want := range []string{"Profiles", "greedy-vs-sampling", "Backend", "builtin", "probing…", "trials"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the picker:\n%s", want, screen)
		}
	}
	checkFits(t, a.View().Content, 80, 24)
	// Filter to the quick profile, type 2 trials, start.
	a.Update(press("/"))
	for _, r := range "quick" {
		_, cmd := a.Update(press(string(r)))
		applyFilterResults(a, cmd)
	}
	a.Update(press("enter"))
	a.Update(press("tab"))
	a.Update(press("tab"))
	a.Update(press("tab"))
	a.Update(press("x"))
	a.Update(press("enter"))
	if a.screen != screenPicker || !strings.Contains(ansi.Strip(a.View().Content), `trials: "x" is not a count`) {
		t.Fatalf("a bad count must be refused with a clear message:\n%s", ansi.Strip(a.View().Content))
	}
	a.picker.inputs[1].SetValue("-1") // not "the profile's count": that is an empty field
	a.Update(press("enter"))
	if a.screen != screenPicker || !strings.Contains(ansi.Strip(a.View().Content), `trials: "-1" is not a count`) {
		t.Fatalf("a negative count must be refused:\n%s", ansi.Strip(a.View().Content))
	}
	a.picker.inputs[1].SetValue("2")
	a.cfg.Base.OutDir = t.TempDir()
	a.picker.base.OutDir = a.cfg.Base.OutDir
	a.Update(press("enter"))
	if a.screen != screenRun || a.run.plan.Profile.Name != "quick" || a.run.plan.Profile.Trials != 2 || a.run.plan.Targets[0].Kind.Name != "builtin" {
		t.Fatalf("enter did not start quick with 2 trials on builtin: screen %d, %s with %d trials on %s", a.screen, a.run.plan.Profile.Name, a.run.plan.Profile.Trials, a.run.plan.Targets[0].Kind.Name)
	}
	a.run.wait() // the real run, on the built-in engine
	out := a.Outcome()
	if out.Err != nil || out.Finished == nil {
		t.Fatalf("outcome %+v", out)
	}
	s, err := session.Load(out.Finished.Manifest)
	if err != nil || len(s.Records) == 0 {
		t.Fatalf("session %v: %v", out.Finished.Manifest, err)
	}
}

// TestPickerRunsAnABOfTwoPickedTargets: in the backend panel, space picks
// the built-in engine with the profile's model, → moves to the next model
// in the engine's own list, space picks that too, and enter runs the two
// as arms of one interleaved run.
func TestPickerRunsAnABOfTwoPickedTargets(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	a.Update(probeMsg{0, Probe(context.Background(), a.picker.kinds[0], backends.Config{})})
	a.Update(press("/"))
	for _, r := range "quick" {
		_, cmd := a.Update(press(string(r)))
		applyFilterResults(a, cmd)
	}
	a.Update(press("enter"))
	a.Update(press("tab")) // the backend panel, on builtin
	a.Update(press("space"))
	a.Update(press("enter"))
	if screen := ansi.Strip(a.View().Content); a.screen != screenPicker || !strings.Contains(screen, "an A/B needs two picks") {
		t.Fatalf("one pick must not start a run:\n%s", screen)
	}
	a.picker.err = ""
	a.Update(press("right")) // stories260K, the list's first
	a.Update(press("right")) // stories15M-synthetic
	a.Update(press("space"))
	screen := ansi.Strip(a.View().Content)
	for _, want := range []string{"A/B: stories260K vs stories15M-synthetic", "A B ✓ in process", "space A/B pick • ←/→ model"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the picker:\n%s", want, screen)
		}
	}
	checkFits(t, a.View().Content, 80, 24)
	a.picker.inputs[1].SetValue("2")
	a.picker.inputs[2].SetValue("0")
	a.picker.base.OutDir = t.TempDir()
	// Short trials: the race detector beside CI's busy loops made one of
	// 64 tokens on the 15M model outlast the profile's 60 s timeout.
	a.picker.base.MaxTokens = 8
	a.Update(press("enter"))
	if a.screen != screenRun || len(a.run.plan.Targets) != 2 || a.run.plan.Targets[1].Target.Model != "stories15M-synthetic" {
		t.Fatalf("enter did not start the A/B: screen %d, plan %+v", a.screen, a.run.plan)
	}
	a.run.wait()
	out := a.Outcome()
	if out.Err != nil || out.Finished == nil || out.Finished.Summary["stories15M-synthetic"].TimedOK != 2 {
		t.Fatalf("outcome %+v", out)
	}
}

// applyFilterResults runs the list's filtering command, which the program
// would run in the background, and hands its result back.
func applyFilterResults(a *App, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		switch msg := msg.(type) {
		case list.FilterMatchesMsg:
			a.Update(msg)
		case tea.BatchMsg:
			for _, c := range msg {
				applyFilterResults(a, c)
			}
		}
	case <-time.After(100 * time.Millisecond): // a blink or tick: not ours
	}
}

func TestDoneOffersComparisonsAndOpensTheCompareScreen(t *testing.T) {
	dir := t.TempDir()
	older := writeSession(t, dir, "A", 0)
	unlike, err := session.Create(dir, &session.Manifest{ID: "C", CreatedAt: testStart, Profile: session.ProfileInfo{MaxTokens: 64}})
	if err != nil {
		t.Fatal(err)
	}
	unlike.Close()
	newer := writeSession(t, dir, "B", 5)
	tr := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun([]string{"greedy", "temp-0.8"}, 0, 5)
	fin := finished(events, session.StatusComplete)
	fin.Manifest = newer
	tr.send(eventsMsg(append(events, fin)))
	close(tr.app.run.done)
	tr.send(runEndedMsg{})
	tr.sendAndRun(press("c"))
	screen := tr.screen()
	if !strings.Contains(screen, "this session's arms against each other") || !strings.Contains(screen, "baseline "+filepath.Base(older)) {
		t.Fatalf("the chooser does not offer the arms and the older session:\n%s", screen)
	}
	// A session set up differently comes after the alike ones, marked
	// with how it differs; newer though it is.
	if at, unlike := strings.Index(screen, filepath.Base(older)), strings.Index(screen, "≠ set up differently: max_tokens 64 vs 0"); unlike < 0 || unlike < at {
		t.Fatalf("the differently set up session is not listed last and marked:\n%s", screen)
	}
	tr.send(press("j"))
	// Loading is a command: Update only says so and returns at once.
	_, load := tr.app.Update(press("enter"))
	if load == nil || tr.app.screen != screenDone || !strings.Contains(tr.screen(), "loading the sessions…") {
		t.Fatalf("enter should hand the loading to a command:\n%s", tr.screen())
	}
	tr.send(load())
	screen = tr.screen()
	if tr.app.screen != screenCompare || !strings.Contains(screen, "A#greedy") || !strings.Contains(screen, "B#greedy") || !strings.Contains(screen, "+20.0%") {
		t.Fatalf("compare screen of B against A:\n%s", screen)
	}
	tr.send(press("m"))
	if !strings.Contains(tr.screen(), "ttft ms") {
		t.Errorf("m did not switch the compare histogram:\n%s", tr.screen())
	}
	tr.send(press("esc"))
	if tr.app.screen != screenDone {
		t.Errorf("esc did not go back to the done view")
	}
	// The chooser is still open: up to the session's own arms, temp-0.8
	// against greedy, named by arm.
	tr.send(press("k"))
	_, load = tr.app.Update(press("enter"))
	// The verdicts' statistics are a second command, started by the load.
	if _, test := tr.app.Update(load()); test != nil {
		tr.send(test())
	}
	screen = tr.screen()
	if !strings.Contains(screen, "stat    greedy ") || !strings.Contains(screen, "temp-0.8") || !strings.Contains(screen, "33.00 +10.0%✗") || strings.Contains(screen, "A#") {
		t.Errorf("the arms of one session are not compared with each other:\n%s", screen)
	}
	if !strings.Contains(screen, "temp-0.8 is slower than greedy: median e2e +") {
		t.Errorf("no verdict under the table:\n%s", screen)
	}
}

// writeSession saves a two-arm session whose e2e is the synthetic pattern
// plus slower ms.
func writeSession(t *testing.T, dir, id string, slower float64) string {
	t.Helper()
	return writeSessionOf(t, dir, id, slower, []string{"greedy", "temp-0.8"})
}

// writeSessionOf writes session id with the given arms.
func writeSessionOf(t *testing.T, dir, id string, slower float64, arms []string) string {
	t.Helper()
	m := &session.Manifest{ID: id, CreatedAt: testStart}
	for _, a := range arms {
		m.Arms = append(m.Arms, session.ArmInfo{Name: a})
	}
	w, err := session.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, ev := range syntheticRun(arms, 0, 40) {
		if td, ok := ev.(runner.TrialDone); ok {
			td.Record.E2EMs += slower
			if err := w.Append(td.Record, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(session.StatusComplete, "", "", nil); err != nil {
		t.Fatal(err)
	}
	return w.ManifestPath()
}

func TestPickerSaysWhetherTheModelIsThere(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	ollama := 0
	for i, k := range a.picker.kinds {
		if k.Name == "ollama" {
			ollama = i
		}
	}
	report := ProbeReport{Kind: a.picker.kinds[ollama], Info: backends.Info{URL: "http://127.0.0.1:11434", ServerVersion: "0.33.0", Models: []string{"gemma3:270m"}}}
	a.Update(probeMsg{ollama, report})
	if screen := ansi.Strip(a.View().Content); !strings.Contains(screen, "0.33.0 · model gemma3:270m present") {
		t.Errorf("the profile's ollama model is listed but not shown present:\n%s", screen)
	}
	a.picker.inputs[0].SetValue("llama3:8b")
	a.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
	if screen := ansi.Strip(a.View().Content); !strings.Contains(screen, "model llama3:8b not found") {
		t.Errorf("a typed model the server lacks is not flagged:\n%s", screen)
	}
	report.Err, report.Info.Models = errors.New("cannot connect"), nil
	a.Update(probeMsg{ollama, report})
	if screen := ansi.Strip(a.View().Content); !strings.Contains(screen, "✗ at http://127.0.0.1:11434: cannot connect") {
		t.Errorf("an unreachable backend does not say why:\n%s", screen)
	}
}

func TestTinyTerminalsDoNotBreakAnyScreen(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.send(eventsMsg(syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 12)), tickMsg{})
	for _, size := range [][2]int{{1, 1}, {10, 5}, {20, 8}, {40, 12}, {60, 16}} {
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFits(t, tr.app.View().Content, size[0], size[1])
		tr.send(press("z"))
		checkFits(t, tr.app.View().Content, size[0], size[1])
		tr.send(press("z"))
	}
	now := testStart
	picker := New(context.Background(), testConfig(&now))
	for _, size := range [][2]int{{1, 1}, {10, 5}, {20, 8}, {40, 12}} {
		picker.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFits(t, picker.View().Content, size[0], size[1])
	}
}

func TestPowerPanelPacksAChipsPartsAndKeepsTheChart(t *testing.T) {
	// powermetrics on an Apple chip: the whole chip and three parts, as
	// few lines as fit.
	samplerStart := testStart.Add(-time.Second)
	var devices []telemetry.Device
	for _, name := range []string{"Apple SoC (CPU+GPU+ANE)", "Apple CPU", "Apple GPU", "Apple ANE"} {
		devices = append(devices, telemetry.Device{Name: name, ID: name, Kind: telemetry.KindSoCPart})
	}
	devices[0].Kind = telemetry.KindSoC
	started := runner.Started{Manifest: "/sessions/s.toml", Arms: []string{"greedy"}, TrialsPerArm: 3,
		Power: session.PowerInfo{GPU: "Apple GPU and ANE power through powermetrics (sampled)", SamplerStart: &samplerStart, Devices: devices}}
	var msgs []runner.Event
	for i := 0; i < 40; i++ {
		for d, w := range []float64{22, 5, 17, 0} {
			s := telemetry.NewSample(time.Duration(i)*100*time.Millisecond, d)
			s.PowerW = w
			msgs = append(msgs, runner.PowerSample{Sample: s})
		}
	}
	msgs = append(msgs, started)
	msgs = append(msgs, syntheticRun([]string{"greedy"}, 0, 3)[1:]...)
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		tr := newTestRun(t, "quick")
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]}, eventsMsg(msgs), tickMsg{})
		screen := tr.screen()
		wants := []string{"Apple SoC (CPU+GPU+ANE)  22 W  ·  Apple CPU  5 W", "Apple ANE  0 W"}
		if size[0] == 200 {
			wants = append(wants, " W ┤") // at 80×24 no source leaves room for a chart
		}
		for _, want := range wants {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: %q missing from the power panel:\n%s", size[0], size[1], want, screen)
			}
		}
		checkFits(t, tr.app.View().Content, size[0], size[1])
	}
}

func TestPowerPanelDrawsWattsBaselineAndTrialEnergy(t *testing.T) {
	tr := newTestRun(t, "quick")
	samplerStart := testStart.Add(-time.Second)
	started := runner.Started{Manifest: "/sessions/s.toml", Arms: []string{"greedy"}, TrialsPerArm: 3,
		Power: session.PowerInfo{GPU: "1 NVIDIA GPU through NVML", SamplerStart: &samplerStart,
			Devices:  []telemetry.Device{{Name: "Fake H100", ID: "GPU-1", Kind: telemetry.KindGPU, HasCounter: true}},
			Baseline: []session.DeviceBaseline{{ID: "GPU-1", Baseline: telemetry.Baseline{MeanW: 71, StdW: 1, Samples: 60}}}}}
	var msgs []runner.Event
	for i := 0; i < 60; i++ { // idle, then 250 W while the trials run
		s := telemetry.NewSample(time.Duration(i)*50*time.Millisecond, 0)
		s.PowerW = 71
		if i >= 20 {
			s.PowerW = 250
		}
		msgs = append(msgs, runner.PowerSample{Sample: s})
	}
	msgs = append(msgs, started)
	for _, ev := range syntheticRun([]string{"greedy"}, 0, 3)[1:] {
		td := ev.(runner.TrialDone)
		td.Record.EnergyJ, td.Record.JPerToken, td.Record.EnergyQuality, td.Record.EnergyErrJ, td.Record.AvgPowerW = 1.28, 0.02, "counter", 0.1, 250
		msgs = append(msgs, td)
	}
	tr.send(tea.WindowSizeMsg{Width: 100, Height: 40}, eventsMsg(msgs), tickMsg{})
	screen := tr.screen()
	// The stats table has energy columns once every trial of every arm
	// has energy: its median J/token and power.
	for _, want := range []string{"Fake H100  250 W  idle 71 W", "last trial greedy#3: 0.0200 J/token (counter)", " W ┤", "J/tok   W", "0.0200 250"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the screen:\n%s", want, screen)
		}
	}
	checkFits(t, tr.app.View().Content, 100, 40)

	// A trial a little below idle is never a negative figure.
	last := msgs[len(msgs)-1].(runner.TrialDone)
	last.Record.Trial, last.Record.EnergyJ, last.Record.JPerToken = 4, -0.05, -0.05/64
	tr.send(eventsMsg([]runner.Event{last}), tickMsg{})
	if screen := tr.screen(); !strings.Contains(screen, "last trial greedy#4: ≈ idle (counter)") || strings.Contains(screen, "-0.0") {
		t.Errorf("a trial below idle:\n%s", screen)
	}
}

// After a failed run, n opens the picker; quitting from there must not
// report the old failure again (nor exit with its code).
func TestNewRunAfterAFailureForgetsIt(t *testing.T) {
	tr := newTestRun(t, "quick")
	tr.app.run.err = errors.New("the server stopped answering")
	tr.app.run.status = session.StatusFailed
	close(tr.app.run.done)
	tr.send(runEndedMsg{})
	if !strings.Contains(tr.screen(), "Could not run: the server stopped answering") {
		t.Fatalf("the failure is not on the done view:\n%s", tr.screen())
	}
	tr.send(press("n"))
	if tr.app.screen != screenPicker {
		t.Fatalf("n did not open the picker: screen %d", tr.app.screen)
	}
	if out := tr.app.Outcome(); out.Ran || out.Err != nil {
		t.Errorf("quitting from the new picker reports the old run: %+v", out)
	}
}

// The key line says ↑/↓ move: in the Run box they move between its
// fields (tab did, ↓ did nothing), and j and k stay letters there.
func TestPickerArrowsMoveThroughTheRunBox(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	a.Update(press("tab"))
	a.Update(press("tab"))
	if a.picker.focus != focusModel {
		t.Fatalf("two tabs reach focus %d, want the model field", a.picker.focus)
	}
	for _, step := range []struct {
		key  string
		want pickerFocus
	}{{"down", focusTrials}, {"down", focusWarmup}, {"down", focusWarmup}, {"up", focusTrials}, {"up", focusModel}, {"up", focusModel}} {
		a.Update(press(step.key))
		if a.picker.focus != step.want {
			t.Fatalf("%s: focus %d, want %d", step.key, a.picker.focus, step.want)
		}
	}
	a.Update(press("j"))
	if got := a.picker.inputs[0].Value(); got != "j" || a.picker.focus != focusModel {
		t.Errorf("j in the model field: value %q, focus %d; want it typed", got, a.picker.focus)
	}
}

// After n on the done view the picker's focus is its list again, so q
// quits rather than typing into the field the last run came from.
func TestNewRunOpensThePickerOnItsList(t *testing.T) {
	tr := newTestRun(t, "quick")
	tr.app.picker.setFocus(focusWarmup)
	tr.app.picker.inputs[2].SetValue("1")
	close(tr.app.run.done)
	tr.send(runEndedMsg{})
	tr.send(press("n"))
	if tr.app.screen != screenPicker || tr.app.picker.focus != focusProfiles {
		t.Fatalf("n: screen %d, focus %d; want the picker on its list", tr.app.screen, tr.app.picker.focus)
	}
	if _, cmd := tr.app.Update(press("q")); cmd == nil {
		t.Fatal("q on the picker after n did not quit")
	} else if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Errorf("q answered %T, want tea.QuitMsg", cmd())
	}
	if got := tr.app.picker.inputs[2].Value(); got != "1" {
		t.Errorf("q was typed into warmup: %q", got)
	}
}

// At 200x60 the list is as tall as the profiles need and the selected
// one's description is shown whole under it, not cut at the list's width;
// "shipped" says where a profile came from ("builtin" read as the backend).
func TestPickerShowsTheWholeDescriptionWhenWide(t *testing.T) {
	now := testStart
	a := New(context.Background(), testConfig(&now))
	a.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	screen := ansi.Strip(a.View().Content)
	profile := a.picker.selected()
	// The description, wrapped, appears word for word in the left column.
	var left []string
	for _, line := range strings.Split(screen, "\n") {
		left = append(left, strings.Trim(ansi.Cut(line, 0, 100), "│ "))
	}
	if joined := strings.Join(strings.Fields(strings.Join(left, " ")), " "); !strings.Contains(joined, profile.Description) {
		t.Errorf("the description %q is not whole on the screen:\n%s", profile.Description, screen)
	}
	if strings.Contains(screen, "(builtin)") || !strings.Contains(screen, profile.Name+"  (shipped)") {
		t.Errorf("a shipped profile is not labelled so:\n%s", screen)
	}
}

// Probing the built-in engine starts its workers; the probe must stop
// them, or each show of the picker leaks a pool of goroutines.
func TestProbingTheBuiltinEngineLeaksNothing(t *testing.T) {
	kind, err := registry.Lookup("builtin")
	if err != nil {
		t.Fatal(err)
	}
	Probe(context.Background(), kind, backends.Config{Threads: 4}) // warm: lazily started runtime goroutines
	before := runtime.NumGoroutine()
	for range 3 {
		if r := Probe(context.Background(), kind, backends.Config{Threads: 4}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before three probes, %d after", before, after)
	}
}

// While a sweep runs, the dashboard says how many requests are in
// flight, charts each level's aggregate tok/s window by window, and its
// table gives each level's tok/s, req/s and goodput so far, the power
// panel giving way first on a small terminal.
func TestSweepDashboardShowsLevelsAsTheyRun(t *testing.T) {
	arms := []string{"greedy@c1", "greedy@c2"}
	events := syntheticRun(arms, 0, 6)
	started := events[0].(runner.Started)
	started.Load = &session.LoadInfo{Levels: []int{1, 2}, SLO: &session.SLOInfo{TTFTMs: 1.2, Goodput: 0.9}}
	events[0] = started
	for i, ev := range events[1:] {
		td := ev.(runner.TrialDone)
		td.Record.Window, td.InFlight = session.WindowSteady, 2
		events[1+i] = td
	}
	for round, tps := range [][2]float64{{610, 790}, {630, 810}, {620, 800}} {
		for i, arm := range arms {
			events = append(events, runner.BlockDone{Arm: arm, Round: round + 1,
				Throughput: session.Throughput{Concurrency: i + 1, TokensPerS: tps[i], RequestsPerS: tps[i] / 64, WindowS: 0.5, Blocks: 1}})
		}
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		tr := newTestRun(t, "quick")
		tr.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]}, eventsMsg(events), tickMsg{})
		screen := tr.screen()
		// TTFT cycles 1, 1.5, 2 ms: a third of the requests keep within 1.2 ms.
		if !regexp.MustCompile(`greedy@c2 .* 800\.0 +12\.50 +[0-9.]+ +33%`).MatchString(screen) {
			t.Errorf("%dx%d: greedy@c2's tok/s, req/s, TTFT p95 and goodput missing:\n%s", size[0], size[1], screen)
		}
		for _, want := range []string{"2 in flight", "aggregate tok/s per steady window", "greedy@c1 620.0 tok/s",
			"tok/s req/s TTFT p95 goodput", "greedy@c2"} {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: %q missing:\n%s", size[0], size[1], want, screen)
			}
		}
		checkFits(t, tr.app.View().Content, size[0], size[1])
	}
}

// TestAReasoningRunShowsTTFOAndItsThinking: where an arm's model reasons
// the stats table adds its median TTFO and its thinking against its output
// tokens, and m reaches a TTFO histogram; where none does, m cycles the
// four metrics it always had (TTFO is TTFT there).
func TestAReasoningRunShowsTTFOAndItsThinking(t *testing.T) {
	three := []string{"greedy", "temp-0.8", "top-k-40"}
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.send(tea.WindowSizeMsg{Width: 200, Height: 60}, eventsMsg(reasoningRun(syntheticRun(three, 1, 12))), tickMsg{})
	screen := tr.screen()
	for _, want := range []string{"TTFO p50", "think/out", "48/64"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the dashboard:\n%s", want, screen)
		}
	}
	tr.send(press("m"), press("m"), press("m"), press("m"), tickMsg{})
	if screen := tr.screen(); !strings.Contains(screen, "TTFO ms") {
		t.Errorf("m did not reach the TTFO histogram:\n%s", screen)
	}
	plain := newTestRun(t, "greedy-vs-sampling")
	plain.send(tea.WindowSizeMsg{Width: 200, Height: 60}, eventsMsg(syntheticRun(three, 1, 12)), press("m"), press("m"), press("m"), press("m"), tickMsg{})
	if screen := plain.screen(); strings.Contains(screen, "TTFO") || !strings.Contains(screen, "e2e ms") {
		t.Errorf("TTFO shown where no model reasons:\n%s", screen)
	}
}

// Past 1,000 trials the main job's three arms still share the header's
// one line at 80×24 (the bars shrink) and at 200×60, so every arm keeps
// its rows in the histogram and the stats below, through to the done view.
func TestEveryArmStaysPastAThousandTrials(t *testing.T) {
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.Width, size.Height), func(t *testing.T) { everyArmStays(t, size) })
	}
}

func everyArmStays(t *testing.T, size tea.WindowSizeMsg) {
	tr := newTestRun(t, "greedy-vs-sampling")
	three := []string{"greedy", "temp-0.8", "top-k-40"}
	tr.send(size, eventsMsg(syntheticRun(three, 3, 1200)), tickMsg{})
	// At 80×24 one line holds the three; with room, a line each.
	header := strings.Split(tr.screen(), "\n")[1]
	if size.Height >= 60 {
		header = strings.Join(strings.Split(tr.screen(), "\n")[1:4], "\n")
	}
	for _, a := range three {
		if !strings.Contains(header, a+" ") || !strings.Contains(header, "1200/1200") && !strings.Contains(header, "1203/1203") {
			t.Errorf("the header does not hold %s:\n%s", a, tr.screen())
		}
		if strings.Count(tr.screen(), a) < 3 { // header, histogram, convergence or stats
			t.Errorf("%s vanishes from the panels:\n%s", a, tr.screen())
		}
	}
	if strings.Contains(tr.screen(), "more arms") {
		t.Errorf("arms left out:\n%s", tr.screen())
	}

	// Through to the done view, with a long path and a missed target: the
	// head keeps to two lines and the histogram to every arm.
	events := syntheticRun(three, 3, 1200)
	fin := finished(events, session.StatusComplete)
	fin.Manifest = "/home/someone/with/a/rather/deep/folder/tokentop/sessions/20261125T101010Z-greedy-vs-sampling-builtin.toml"
	fin.Precision = session.Precision{Missed: true, Short: "mean e2e ±2% not reached by greedy, temp-0.8: stopped at the cap of 1,500 trials"}
	tr.send(eventsMsg{fin})
	close(tr.app.run.done)
	tr.send(runEndedMsg{}, verdictsMsg{cmp: armsComparison(t, three)})
	screen := strings.Split(tr.screen(), "\n")
	head := slices.IndexFunc(screen, func(l string) bool { return strings.HasPrefix(l, "╭") })
	if head < 1 || head > 2 || !strings.HasSuffix(strings.TrimSpace(screen[head-1]), "/20261125T101010Z-greedy-vs-sampling-builtin.toml") {
		t.Errorf("the path should end the head within two lines, its folders elided where they do not fit:\n%s", tr.screen())
	}
	top := slices.IndexFunc(screen, func(l string) bool { return strings.Contains(l, "e2e ms  │ p50") })
	if top < 0 {
		t.Fatalf("no histogram on the done view:\n%s", tr.screen())
	}
	bottom := top + slices.IndexFunc(screen[top:], func(l string) bool { return strings.HasPrefix(l, "╰") })
	for _, a := range three {
		if !slices.ContainsFunc(screen[top+1:bottom], func(l string) bool { return strings.HasPrefix(strings.TrimLeft(l, "│"), a+" ") }) {
			t.Errorf("the done view's histogram lost %s:\n%s", a, tr.screen())
		}
	}
}

// An open loop's dashboard gives each rate offered against the rate
// achieved, the queue past the due times and TTFT both ways.
func TestTheDashboardOfAnOpenLoopShowsOfferedAndAchieved(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	arms := []string{"greedy@r20", "greedy@r80"}
	tr.send(tea.WindowSizeMsg{Width: 80, Height: 24}, eventsMsg(openLoopEvents(syntheticRun(arms, 0, 40))), tickMsg{})
	screen := tr.screen()
	for _, want := range []string{"offered achieved queue p99 TTFT p95 due p95", "greedy@r20", "20.0", "80.0", "waiting"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the open loop's dashboard:\n%s", want, screen)
		}
	}
}

// Two servers' metrics at 80×24 share one line, so that the stats table
// keeps its rows; at 200×60 each has its own. Either way each server's
// numbers, or why it has none, begin where they can be read.
func TestServersMetricsLeaveTheStatsTheirRows(t *testing.T) {
	tr := newTestRun(t, "greedy-vs-sampling")
	arms := []string{"greedy", "temp-0.8", "top-k-40"}
	events := append(syntheticRun(arms, 3, 10),
		runner.ServerMetrics{Server: 0, Targets: []string{"llamacpp"}, TokensPerSecond: 192, PrefixHitRate: 0.8,
			View: telemetry.ServerView{Running: 1, Waiting: 0, KVCache: math.NaN(), Generated: 9, PrefixHits: 8, PrefixQueries: 10, PrefixHitRate: math.NaN()}},
		runner.ServerMetrics{Server: 1, Targets: []string{"vllm"}, Unavailable: "http://h:8000/metrics answered HTTP 404"})
	tr.send(eventsMsg(events), tickMsg{})
	for _, c := range []struct {
		w, h        int
		serverLines int
	}{{80, 24, 1}, {200, 60, 2}} {
		tr.send(tea.WindowSizeMsg{Width: c.w, Height: c.h})
		screen := tr.screen()
		lines := 0
		for _, l := range strings.Split(screen, "\n") {
			if strings.Contains(l, "llamacpp: 1 running · 0 waiting · prefix hits 80% · 192 tok/s") || strings.Contains(l, "vllm: no metrics") {
				lines++
			}
		}
		if lines != c.serverLines || !strings.Contains(screen, "─ stats ·") {
			t.Errorf("%dx%d: %d server lines, want %d; stats shown: %v\n%s", c.w, c.h, lines, c.serverLines, strings.Contains(screen, "─ stats ·"), screen)
		}
		for _, a := range arms {
			if !strings.Contains(screen, "│"+a+" ") {
				t.Errorf("%dx%d: the stats table lost %s", c.w, c.h, a)
			}
		}
	}
}

// The H200 drill's recorded session (../shared/gpu/recorded/h200-run2: an
// 8,000-token prefill against plain decode), replayed into the
// dashboard: the done view's verdicts give energy per token as a ratio
// with its interval, and the power panel the last trial's figure.
func TestDoneViewTellsEnergyOfTheH200Drill(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "gpu", "recorded", "h200-run2", "20261128T171235Z-quick-openai.toml")
	s, err := session.Load(path)
	if err != nil {
		t.Fatalf("%v (check out ../shared beside the repository)", err)
	}
	tr := newTestRun(t, "quick")
	tr.send(tea.WindowSizeMsg{Width: 100, Height: 34})
	events := []runner.Event{runner.Started{Manifest: path, Arms: []string{"decode", "prefill8k"}, TrialsPerArm: s.Manifest.Profile.Trials, Power: *s.Manifest.Power}}
	measured := map[string]int{}
	for _, r := range s.Records {
		if r.Counted() {
			measured[r.Arm]++
		}
		events = append(events, runner.TrialDone{Record: r, Measured: measured[r.Arm]})
	}
	events = append(events, runner.Finished{Status: s.Manifest.Status, Manifest: path, Summary: s.Manifest.Summary})
	tr.send(eventsMsg(events))
	close(tr.app.run.done)
	_, verdicts := tr.app.Update(runEndedMsg{})
	tr.send(verdicts())
	screen := tr.screen()
	for _, want := range []string{"energy per token  ✗ 6.00× [", "last trial prefill8k#12: 12.09 J/token (counter)"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the done view:\n%s", want, screen)
		}
	}
	checkFits(t, tr.app.View().Content, 100, 34)
}

// Where the GPU reads its instantaneous power, the panel draws and shows
// it, and says so: NVML's averaged reading hid an 887 W prefill at 310 W.
func TestPowerPanelShowsTheInstantaneousReading(t *testing.T) {
	data := &runData{}
	data.traces = []*powerTrace{newPowerTrace(telemetry.Device{Name: "NVIDIA H200", Kind: telemetry.KindGPU, HasInstant: true})}
	s := telemetry.NewSample(time.Second, 0)
	s.PowerW, s.PowerInstantW = 310, 887
	data.addPower(s)
	if got := ansi.Strip(renderWatts(data, 100, 12, testStart)); !strings.Contains(got, "NVIDIA H200  887 W instantaneous") {
		t.Errorf("the panel:\n%s", got)
	}
}

// A server whose metrics hold none of the serving series (a GPU exporter
// at the server's /metrics) says so, not "openai:" and nothing; and a
// power panel too short for its chart still draws the trial timeline.
func TestServerAndPowerLinesSayWhatTheyHave(t *testing.T) {
	nan := math.NaN()
	lines := serverLines([]runner.ServerMetrics{{Targets: []string{"openai"}, TokensPerSecond: nan, PrefixHitRate: nan,
		View: telemetry.ServerView{Running: nan, Waiting: nan, KVCache: nan, Generated: nan}}})
	if len(lines) != 1 || ansi.Strip(lines[0]) != "openai: metrics read, none of the serving series tokentop knows" {
		t.Errorf("%q", lines)
	}
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.send(tea.WindowSizeMsg{Width: 80, Height: 24}, eventsMsg(energyRun(syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 40))), tickMsg{})
	if screen := tr.screen(); !strings.Contains(screen, "░░░░░█████") {
		t.Errorf("no timeline in a short power panel:\n%s", screen)
	}
}

// Once the run is over, a server's line leads with the run's tok/s, not
// its last scrape interval's (663 tok/s over 0.19 s where the run's was
// 286.6), says where the count is a lower bound, and gives the most its
// gauges read rather than the last scrape's queue (at 80 columns the rate
// was cut off behind it).
func TestTheDoneServerLineIsTheRunsRate(t *testing.T) {
	nan := math.NaN()
	d := &runData{}
	d.apply(runner.ServerMetrics{Targets: []string{"llamacpp"}, TokensPerSecond: 663, PrefixHitRate: nan,
		View: telemetry.ServerView{Running: 0, Waiting: 0, KVCache: nan, Generated: 4000}})
	if got := ansi.Strip(serverLines(d.servers)[0]); got != "llamacpp: 0 running · 0 waiting · 663 tok/s" {
		t.Errorf("while running: %q", got)
	}
	info := &session.ServerMetricsInfo{Servers: []session.ServerMetricsSource{{Targets: []string{"llamacpp"}, Status: "scraped", TokensGenerated: 4000, TokensPerSecond: 286.6,
		PeakRunning: 4, PeakWaiting: 1}}}
	d.apply(runner.Finished{ServerMetrics: info})
	if got := ansi.Strip(serverLines(d.servers)[0]); got != "llamacpp: 287 tok/s over the run · at most 4 running · 1 waiting" {
		t.Errorf("done: %q", got)
	}
	info.Servers[0].Restarts = 1
	d.apply(runner.Finished{ServerMetrics: info})
	if got := ansi.Strip(serverLines(d.servers)[0]); got != "llamacpp: ≥ 287 tok/s over the run · at most 4 running · 1 waiting" {
		t.Errorf("done, a restart: %q", got)
	}
}

// A shard's done view and headless summary say first that it holds its
// share of the run: its rates read as the run's otherwise (10 req/s
// offered, 5.2 achieved by shard 0 of 2).
func TestAShardSaysItIsAShare(t *testing.T) {
	events := syntheticRun([]string{"greedy"}, 1, 6)
	fin := finished(events, session.StatusComplete)
	fin.Shard = &session.ShardInfo{Index: 0, Count: 2, Host: "gen-0"}
	want := "shard 0 of 2: this session holds every 2nd request of the run"
	tr := newTestRun(t, "quick")
	tr.send(tea.WindowSizeMsg{Width: 200, Height: 60}, eventsMsg(append(events, fin)))
	close(tr.app.run.done)
	tr.send(runEndedMsg{})
	if screen := tr.screen(); !strings.Contains(screen, want) {
		t.Errorf("done view:\n%s", screen)
	}
	var out strings.Builder
	WriteFinished(&out, 0, []string{"greedy"}, fin)
	if !strings.Contains(out.String(), "caveat: "+want) {
		t.Errorf("headless:\n%s", out.String())
	}
}
