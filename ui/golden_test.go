package ui

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// Golden screens: a real Bubble Tea program (teatest) at a fixed size and
// color profile, fed fixed events with the clock pinned. Regenerate with
// go test ./ui -run Golden -update, and read the diff before committing.

func finalScreen(t testing.TB, m tea.Model, w, h int, msgs ...tea.Msg) string {
	t.Helper()
	return finalScreenAfter(t, m, w, h, "", msgs...)
}

// finalScreenAfter waits, before quitting, until the output shows text
// that work in the background produces.
func finalScreenAfter(t testing.TB, m tea.Model, w, h int, text string, msgs ...tea.Msg) string {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	for _, msg := range msgs {
		tm.Send(msg)
	}
	if text != "" {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
			teatest.WithDuration(20*time.Second))
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return ansi.Strip(tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).View().Content)
}

func midRun(t *testing.T) (*testRun, []tea.Msg) {
	tr := newTestRun(t, "greedy-vs-sampling")
	tr.now = testStart.Add(3*time.Second + 400*time.Millisecond)
	events := syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 30)
	return tr, []tea.Msg{eventsMsg(events[:len(events)-30]), tickMsg{}}
}

func TestGoldenDashboard80x24(t *testing.T) {
	tr, msgs := midRun(t)
	golden.RequireEqual(t, finalScreen(t, tr.app, 80, 24, msgs...))
}

// The header counts one thing at every width: timed trials of the plan's
// timed trials (80 columns once counted warmup in too: 23/33 beside
// 20/30 timed at 120), and warmup as warmup while an arm warms up.
func TestDashboardCountsTimedTrialsAtEveryWidth(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		tr, msgs := midRun(t)
		header := strings.SplitN(ansi.Strip(finalScreen(t, tr.app, w, 24, msgs...)), "\n", 3)[1]
		if !strings.Contains(header, "20/30") || strings.Contains(header, "23/33") {
			t.Errorf("at %d columns the header counts %q, want 20/30 timed", w, header)
		}
	}
	tr := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun([]string{"greedy", "temp-0.8", "top-k-40"}, 3, 30)
	screen := ansi.Strip(finalScreen(t, tr.app, 80, 24, eventsMsg(events[:4]), tickMsg{}))
	if header := strings.SplitN(screen, "\n", 3)[1]; !strings.Contains(header, "warmup 1/3") {
		t.Errorf("while warming up the header reads %q, want warmup 1/3", header)
	}
}

func TestGoldenDashboard200x60(t *testing.T) {
	tr, msgs := midRun(t)
	screen := finalScreen(t, tr.app, 200, 60, msgs...)
	golden.RequireEqual(t, screen)
	// Side by side, the power and stats boxes take the rows their content
	// needs (three arms and a header; two status lines and the timeline),
	// and the charts the rest: no tall, mostly blank boxes.
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "╭─ power") {
			if bottom := len(lines) - 2 - i; bottom != 6 {
				t.Errorf("the power and stats boxes are %d rows; their content needs 6", bottom)
			}
		}
	}
}

// finishedRun is a three-arm run that ended, saved where the done view
// can load it for its verdicts.
func finishedRun(t *testing.T) (*testRun, []tea.Msg) {
	tr := newTestRun(t, "greedy-vs-sampling")
	arms := []string{"greedy", "temp-0.8", "top-k-40"}
	events := syntheticRun(arms, 3, 30)
	fin := finished(events, session.StatusComplete)
	var infos []session.ArmInfo
	for _, a := range arms {
		infos = append(infos, session.ArmInfo{Name: a})
	}
	w, err := session.Create(t.TempDir(), &session.Manifest{ID: "S", CreatedAt: testStart, Arms: infos})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			w.Append(td.Record, nil)
		}
	}
	w.Finish(session.StatusComplete, "", "", fin.Summary)
	w.Close()
	fin.Manifest = w.ManifestPath()
	close(tr.app.run.done)
	return tr, []tea.Msg{eventsMsg(append(events, fin)), runEndedMsg{}}
}

// The golden done views replace the session's folder, which differs per
// run, with a fixed one.
func doneScreen(t *testing.T, w, h int) []byte {
	tr, msgs := finishedRun(t)
	screen := finalScreenAfter(t, tr.app, w, h, "✗ slower", msgs...)
	return []byte(regexp.MustCompile(`/\S*/S\.toml *`).ReplaceAllString(screen, "/sessions/S.toml"))
}

func TestGoldenDone80x24(t *testing.T) { golden.RequireEqual(t, doneScreen(t, 80, 24)) }

func TestGoldenDone200x60(t *testing.T) { golden.RequireEqual(t, doneScreen(t, 200, 60)) }

// twoSessions writes sessions A and B, B slower by the given ms.
func twoSessions(t *testing.T, slower float64) ([]session.Ref, []*session.Session) {
	return twoSessionsOf(t, slower, []string{"greedy", "temp-0.8"})
}

// twoSessionsOf writes sessions A and B of the given arms, B slower.
func twoSessionsOf(t *testing.T, slower float64, arms []string) ([]session.Ref, []*session.Session) {
	dir := t.TempDir()
	var refs []session.Ref
	var sessions []*session.Session
	for i, id := range []string{"A", "B"} {
		path := writeSessionOf(t, dir, id, float64(i)*slower, arms)
		s, err := session.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		refs, sessions = append(refs, session.Ref{Path: path}), append(sessions, s)
	}
	return refs, sessions
}

func TestGoldenCompare80x24(t *testing.T) {
	refs, sessions := twoSessions(t, 4)
	now := testStart
	golden.RequireEqual(t, finalScreenAfter(t, NewCompare(t.Context(), testConfig(&now), refs, sessions), 80, 24, "A#greedy:"))
}

// Two sessions of three arms make six columns, more than 80 cells hold:
// ←/→ bring every one into view, the title says which are shown, and the
// key line offers the arrows only where columns are hidden.
func TestCompareScrollsToColumnsThatDoNotFit(t *testing.T) {
	refs, sessions := twoSessionsOf(t, 4, []string{"greedy", "temp-0.8", "top-k-40"})
	now := testStart
	a := NewCompare(t.Context(), testConfig(&now), refs, sessions)
	screen := ansi.Strip(finalScreenAfter(t, a, 80, 24, "A#greedy:"))
	if !strings.Contains(screen, "←/→ columns") || !strings.Contains(screen, "columns 1–") {
		t.Fatalf("80x24 hides columns without saying so:\n%s", screen)
	}
	seen := map[string]bool{}
	header := func() string {
		for _, line := range strings.Split(ansi.Strip(a.View().Content), "\n") {
			if strings.Contains(line, "metric") && strings.Contains(line, "stat") {
				return line
			}
		}
		t.Fatalf("no table header:\n%s", ansi.Strip(a.View().Content))
		return ""
	}
	for range 6 {
		for _, label := range strings.Fields(strings.Trim(header(), "│")) {
			seen[label] = true
		}
		a.Update(press("right"))
	}
	for _, want := range []string{"A#greedy", "A#temp-0.8", "A#top-k-40", "B#greedy", "B#temp-0.8", "B#top-k-40"} {
		if !seen[want] {
			t.Errorf("→ never showed %s (saw %v)", want, seen)
		}
	}
	for range 6 {
		a.Update(press("left"))
	}
	if !strings.Contains(header(), "A#greedy") {
		t.Errorf("← did not come back to the first column: %s", header())
	}
	a.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	if wide := ansi.Strip(a.View().Content); strings.Contains(wide, "←/→") || !strings.Contains(wide, "B#top-k-40") {
		t.Errorf("at 200x60 every column fits and no arrows are offered:\n%s", wide)
	}
}

// TestTheCompareScreenSaysEachColumnsThinking: where a model reasoned,
// TTFO joins the table and each column's thinking leads the verdicts.
func TestTheCompareScreenSaysEachColumnsThinking(t *testing.T) {
	refs, sessions := twoSessions(t, 4)
	reasoningSessions(sessions)
	now := testStart
	screen := ansi.Strip(finalScreenAfter(t, NewCompare(t.Context(), testConfig(&now), refs, sessions), 200, 60, "A#greedy:"))
	for _, want := range []string{"ttfo_ms", "reasoning: B#greedy thought 42.0 of 64.0 tokens a trial", "median TTFO +83.8%"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q missing from the compare screen:\n%s", want, screen)
		}
	}
}

// TestCompareGivesSpareRowsToTheHistogram: at 200×60 the verdicts need a
// dozen rows; the box takes those and the histogram the rest, instead of
// a blank verdict box above a histogram of one row per column.
func TestCompareGivesSpareRowsToTheHistogram(t *testing.T) {
	refs, sessions := twoSessions(t, 4)
	now := testStart
	screen := finalScreenAfter(t, NewCompare(t.Context(), testConfig(&now), refs, sessions), 200, 60, "A#greedy:")
	var box string
	rows := map[string]int{}
	blank := 0
	for _, line := range strings.Split(screen, "\n") {
		switch {
		case strings.HasPrefix(line, "╭─ Verdicts"):
			box = "verdicts"
		case strings.HasPrefix(line, "╭─ e2e"):
			box = "histogram"
		case strings.HasPrefix(line, "╰"):
			box = ""
		case box != "":
			rows[box]++
			if box == "verdicts" && strings.Trim(line, "│ ") == "" {
				blank++
			}
		}
	}
	if blank > 0 || rows["verdicts"] == 0 || rows["histogram"] <= len(sessions)*2+1 {
		t.Errorf("verdicts %d rows (%d blank), histogram %d rows:\n%s", rows["verdicts"], blank, rows["histogram"], screen)
	}
}

// TestWrapKeepsNumbersWhole: ansi.Wrap breaks after any hyphen, which cut
// "-16.7%" into "[-" and "16.7%"; wrap breaks at spaces only.
func TestWrapKeepsNumbersWhole(t *testing.T) {
	lines := wrap("top-k-40 vs greedy: median TTFT +0.0% [-16.7%, +33.3%]", 38)
	if len(lines) != 2 || lines[0] != "top-k-40 vs greedy: median TTFT +0.0%" || lines[1] != "[-16.7%, +33.3%]" {
		t.Errorf("%q", lines)
	}
}

// Extreme values: a delta of thousands of percent and values of many
// digits keep a space between every number, at 80 columns too (scrolled
// to the columns with deltas) as at 300.
func TestCompareNumbersNeverTouch(t *testing.T) {
	for _, w := range []int{78, 298} {
		checkCompareNumbersApart(t, w)
	}
}

// The compare view keeps its verdict lines as wrapped to the last width:
// a resize and back, or new tests, draw what a fresh view would.
func TestCompareVerdictLinesFollowWidthAndTests(t *testing.T) {
	refs, sessions := twoSessions(t, 40000)
	fresh := func(w int) []string {
		v := newCompareView(refs, sessions, nil)
		v.showTests(v.init()().(compareTestedMsg))
		return v.verdictLines(w)
	}
	v := newCompareView(refs, sessions, nil)
	msg := v.init()().(compareTestedMsg)
	v.showTests(msg)
	for _, w := range []int{60, 140, 60, 20} {
		if got, want := v.verdictLines(w), fresh(w); !slices.Equal(got, want) {
			t.Fatalf("at %d cells after other widths:\n%s\nwhere a fresh view draws\n%s", w, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	before := strings.Join(v.verdictLines(60), "\n")
	msg.tests = nil // answers that say less: the lines must follow them
	v.showTests(msg)
	if after := strings.Join(v.verdictLines(60), "\n"); after == before {
		t.Errorf("new tests left the verdict lines as they were:\n%s", after)
	}
}

func checkCompareNumbersApart(t *testing.T, w int) {
	refs, sessions := twoSessions(t, 40000)
	v := newCompareView(refs, sessions, nil)
	v.firstColumn = len(v.cmp.Columns) // as far right as ← ever goes; clamped
	number := regexp.MustCompile(`^(-?[0-9.]+(e[+-][0-9]+)?|[+-][0-9.]+%[✓✗]?|—)$`)
	rows, width := 0, 0
	table := v.table(w, compareStats)
	if cells := ansi.StringWidth(table[0]); cells > w {
		t.Errorf("at %d cells the header is %d wide", w, cells)
	}
	for _, line := range table {
		fields := strings.Fields(ansi.Strip(line))
		if len(fields) < 3 || !strings.HasSuffix(fields[0], "_ms") && !strings.HasSuffix(fields[0], "_tps") {
			continue // the header, the legend
		}
		rows++
		// Columns sized from their content line up: every row is as wide.
		if w := ansi.StringWidth(line); width == 0 {
			width = w
		} else if w != width {
			t.Errorf("row %q is %d cells wide, the first %d: a cell overflowed its column", ansi.Strip(line), w, width)
		}
		for _, f := range fields[2:] {
			if !number.MatchString(f) {
				t.Errorf("%q: numbers touch in %q", f, ansi.Strip(line))
			}
		}
	}
	if rows == 0 || !strings.Contains(strings.Join(table, "\n"), "%") {
		t.Fatalf("at %d cells no table rows checked", w)
	}
}

// Extreme figures (tok/s over 10,000, a warmup ratio over 10) keep a
// space between columns; long arm names stay apart; six arms at 80×24 say
// that some did not fit instead of dropping one silently.
func TestStatsColumnsFitTheirContent(t *testing.T) {
	names := []string{"temperature-0.7-long", "temperature-0.9-long", "c", "d", "e", "f"}
	data := newRunData("p", "m", 0.01)
	for _, name := range names {
		a := data.arm(name)
		a.dists[0].Add(0.5)
		a.dists[0].Add(0.6)
		a.warmupE2E.Add(7) // a warmup ratio of 12.7
		a.throughput.Add(128, 0.55)
	}
	table := ansi.Strip(renderStatsTable(data.arms, trialTable, 200, 10))
	if !strings.Contains(table, "temperature-0.7-long") || !strings.Contains(table, "temperature-0.9-long") {
		t.Errorf("long names cut at 200 columns:\n%s", table)
	}
	for _, line := range strings.Split(table, "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) != 11 {
			t.Errorf("%d fields, want 11 (figures touching?): %q", len(fields), line)
		}
	}
	small := ansi.Strip(renderStatsTable(data.arms, trialTable, 78, 5))
	if lines := strings.Split(small, "\n"); len(lines) != 5 || !strings.Contains(lines[4], "+3 more arms") {
		t.Errorf("six arms in 5 rows:\n%s", small)
	}
}

// armsComparison tests a synthetic session's arms against its first, as
// the done view does.
func armsComparison(t *testing.T, arms []string) *session.Comparison {
	t.Helper()
	return eventsComparison(t, arms, syntheticRun(arms, 0, 30))
}

// eventsComparison is the arms' verdicts over the trials of events.
func eventsComparison(t *testing.T, arms []string, events []runner.Event) *session.Comparison {
	t.Helper()
	s := &session.Session{Path: "/s/S.toml", Manifest: &session.Manifest{Status: session.StatusComplete}}
	var refs []session.Ref
	var sessions []*session.Session
	for _, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			s.Records = append(s.Records, td.Record)
		}
	}
	for _, a := range arms {
		s.Manifest.Arms = append(s.Manifest.Arms, session.ArmInfo{Name: a})
		refs, sessions = append(refs, session.Ref{Path: s.Path, Arm: a}), append(sessions, s)
	}
	cmp, err := session.Compare(refs, sessions, session.VerdictMetrics(refs, sessions))
	if err != nil {
		t.Fatal(err)
	}
	cmp.RunTests(session.TestOptions{Resamples: 200, Seed: 1})
	return cmp
}

// A narrow verdict table drops the intervals, then the arms that do not
// fit, and points at the screen that has them all: compare, this
// session's arms (the report, r, has no verdicts).
func TestNarrowVerdictTablePointsAtCompare(t *testing.T) {
	arms := []string{"greedy", "temp-0.5", "temp-0.8", "temp-1.0", "top-k-40", "top-p-0.9"}
	cmp := armsComparison(t, arms)
	wide := ansi.Strip(strings.Join(verdictTable(cmp, 198), "\n"))
	if !strings.Contains(wide, "top-p-0.9") || !strings.Contains(wide, "%, +") || strings.Contains(wide, "c, then enter") {
		t.Errorf("200 columns hold every arm with its intervals:\n%s", wide)
	}
	narrow := ansi.Strip(strings.Join(verdictTable(cmp, 78), "\n"))
	if strings.Contains(narrow, "[") || !strings.Contains(narrow, "intervals: c, then enter") || !strings.Contains(narrow, "more arms: c, then enter") {
		t.Errorf("78 columns:\n%s", narrow)
	}
	for _, line := range strings.Split(narrow, "\n") {
		if ansi.StringWidth(line) > 78 {
			t.Errorf("%q is wider than 78", line)
		}
	}
}

// A load run's lines give way to the verdict table in a short box: the
// table keeps its notes, and a line says where the rest is.
func TestLoadLinesGiveWayToTheVerdictTable(t *testing.T) {
	arms := []string{"greedy@c1", "greedy@c2", "greedy@c4", "greedy@c8"}
	cmp := armsComparison(t, arms)
	load := []string{"greedy: tok/s 604 at 1, 783 at 2, 1041 at 4, 1216 at 8 streams", "greedy: knee at 4 streams: p95 TTFT is 2.1× its value at 1 stream (over 2×)",
		"greedy: goodput (SLO TTFT ≤ 60 ms): the highest level with at least 90% of requests within it is 2 streams"}
	d := &doneView{data: &runData{arms: []*armData{{name: arms[0]}, {name: arms[1]}}, finished: &runner.Finished{Manifest: "/s/S.toml"}}, verdicts: cmp, load: load}
	table := verdictTable(cmp, 77)
	lines := ansi.Strip(strings.Join(d.verdictLines(77, len(table)+3), "\n"))
	if !strings.HasSuffix(lines, ansi.Strip(strings.Join(table, "\n"))) || !strings.Contains(lines, "knee at 4 streams") ||
		strings.Contains(lines, "goodput") || !strings.Contains(lines, "r: the report has the load results in full") {
		t.Errorf("%d rows:\n%s", len(table)+3, lines)
	}
	for _, rows := range []int{len(table) + 1, len(table)} { // no room: the answer stays, the table's last note gives way
		if lines := ansi.Strip(strings.Join(d.verdictLines(77, rows), "\n")); !strings.HasPrefix(lines, load[0]) || strings.Contains(lines, "knee") {
			t.Errorf("%d rows:\n%s", rows, lines)
		}
	}
	if all := ansi.Strip(strings.Join(d.verdictLines(77, 40), "\n")); !strings.Contains(all, "goodput") || strings.Contains(all, "in full") {
		t.Errorf("40 rows:\n%s", all)
	}
}

// The done view keeps its verdict table as laid out at the last width:
// other widths, and new verdicts, draw their own.
func TestDoneVerdictTableFollowsWidthAndVerdicts(t *testing.T) {
	two, six := armsComparison(t, []string{"greedy", "temp-0.8"}), armsComparison(t, []string{"greedy", "temp-0.5", "temp-0.8", "temp-1.0", "top-k-40", "top-p-0.9"})
	d := &doneView{data: &runData{arms: []*armData{{name: "greedy"}, {name: "temp-0.8"}}, finished: &runner.Finished{Manifest: "/s/S.toml"}}}
	for _, step := range []struct {
		cmp *session.Comparison
		w   int
	}{{two, 77}, {two, 198}, {two, 77}, {six, 77}, {six, 198}, {two, 198}} {
		d.showVerdicts(verdictsMsg{cmp: step.cmp})
		got, want := strings.Join(d.verdictLines(step.w, 40), "\n"), strings.Join(verdictTable(step.cmp, step.w), "\n")
		if got != want {
			t.Fatalf("%d arms at %d cells:\n%s\nwhere the table is\n%s", len(step.cmp.Columns), step.w, got, want)
		}
	}
}

// The verdict table keeps a cell between its last column and the box's
// side at every width, the widths where its columns just fit included.
func TestVerdictsNeverTouchTheirBox(t *testing.T) {
	for w := 76; w <= 90; w++ { // around 80, where the columns just fit at some widths
		tr, msgs := finishedRun(t)
		screen := finalScreenAfter(t, tr.app, w, 30, "✗ slower", msgs...)
		lines := strings.Split(screen, "\n")
		for _, line := range lines[1:] {
			if strings.HasPrefix(line, "╰") {
				break
			}
			runes := []rune(strings.TrimRight(line, " "))
			if n := len(runes); n >= 2 && runes[n-1] == '│' && runes[0] == '│' && runes[n-2] != ' ' {
				t.Errorf("at %d columns a verdict touches the box: %q", w, line)
			}
		}
	}
}
