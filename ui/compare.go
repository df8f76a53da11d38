package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
)

// compareView is the compare screen: statistics of each column against
// its baseline with deltas colored by direction, the verdicts in words
// under them, and the chosen metric's histograms overlaid on shared bins.
type compareView struct {
	cmp *session.Comparison
	// refs and sessions are what was compared, for the HTML report (h).
	refs     []session.Ref
	sessions []*session.Session
	// tested is false until the verdicts' statistics, computed off the UI
	// goroutine (10,000 bootstrap resamples per test), have arrived.
	tested bool
	// verdicts are the verdict lines once tested, as wrapped to
	// verdictsWidth: each frame draws them, and wrapping them again was
	// two fifths of a frame's time.
	verdicts      []string
	verdictsWidth int
	scroll        int // first verdict line shown
	// firstColumn is the first column the table shows where not all fit
	// the width (←/→ move it); clamped when drawn.
	firstColumn int
	labels      []string // short column names: the arm, with a session letter when there are several
	legend      []string // which session each letter stands for
	err         error
	metric      int                      // index into cmp.Metrics
	dists       [][]metrics.Distribution // [metric][column]
}

// compareStats are the rows shown per metric, in the order a short
// terminal keeps them (the table shows them in the comparison's own row
// order); cv shows spread.
var compareStats = []string{"median", "p95", "cv", "p90", "p99"}

// compareTestedMsg carries the comparison's A/B statistics.
type compareTestedMsg struct {
	view           *compareView // the screen that asked, so a late answer for another is dropped
	tests, lengths []session.ABTest
}

// init computes the verdicts off the UI goroutine. ABTests only reads the
// comparison, and the result is stored by showTests, in Update.
func (v *compareView) init() tea.Cmd {
	if v.err != nil {
		return nil
	}
	cmp := v.cmp
	return func() tea.Msg {
		tests, lengths := cmp.ABTests(session.DefaultTestOptions)
		return compareTestedMsg{v, tests, lengths}
	}
}

func (v *compareView) showTests(msg compareTestedMsg) {
	if msg.view == v {
		v.cmp.Tests, v.cmp.Lengths, v.cmp.TestOptions, v.tested = msg.tests, msg.lengths, session.DefaultTestOptions, true
		v.verdicts = nil
	}
}

func newCompareView(refs []session.Ref, sessions []*session.Session, loadErr error) *compareView {
	if loadErr != nil {
		return &compareView{err: loadErr}
	}
	cmp, err := session.Compare(refs, sessions, nil)
	if err != nil {
		return &compareView{err: err}
	}
	v := &compareView{cmp: cmp, refs: refs, sessions: sessions, dists: make([][]metrics.Distribution, len(cmp.Metrics))}
	v.labels, v.legend = session.ShortLabels(cmp.Columns)
	for i, name := range cmp.Metrics {
		m, _ := session.LookupMetric(name)
		v.dists[i] = make([]metrics.Distribution, len(cmp.Columns))
		for c, col := range cmp.Columns {
			for _, x := range col.Values(m) {
				v.dists[i][c].Add(x)
			}
		}
	}
	return v
}

func (v *compareView) update(msg tea.KeyPressMsg) {
	switch {
	case v.cmp == nil:
	case key.Matches(msg, keys.Metric):
		v.metric = (v.metric + 1) % len(v.cmp.Metrics)
	case key.Matches(msg, keys.Next):
		v.scroll++ // clamped when drawn, where the height is known
	case key.Matches(msg, keys.Prev):
		v.scroll = max(0, v.scroll-1)
	case key.Matches(msg, keys.NextColumn):
		v.firstColumn++ // clamped when drawn
	case key.Matches(msg, keys.PrevColumn):
		v.firstColumn = max(0, v.firstColumn-1)
	}
}

// The table's row labels: metric, then statistic.
const compareLabelW = 11 + 7

// columnWidth is the cells one column of the table takes at its widest.
func (v *compareView) columnWidth(stats []string) (colW, widestDelta int) {
	widestValue := 0
	for _, row := range v.cmp.Rows {
		if slices.Contains(stats, row.Stat) {
			for i, value := range row.Values {
				widestValue = max(widestValue, len(session.FormatValue(value)))
				widestDelta = max(widestDelta, len(session.FormatDelta(row.Deltas[i])))
			}
		}
	}
	widestDelta++ // room for the ✓/✗ of a significant change
	colW = 1 + widestValue + 1 + widestDelta
	for _, l := range v.labels {
		colW = max(colW, 1+cellWidth(l))
	}
	return colW, widestDelta
}

// shownColumns are the columns the table shows at screen width w: all
// where they fit, else as many as fit from firstColumn on.
func (v *compareView) shownColumns(w int) (first, n int) {
	if v.cmp == nil {
		return 0, 0
	}
	colW, _ := v.columnWidth(compareStats)
	total := len(v.cmp.Columns)
	n = min(total, max(1, (w-2-compareLabelW)/colW))
	v.firstColumn = min(v.firstColumn, total-n)
	return v.firstColumn, n
}

// columnsHidden reports whether some columns do not fit width w, so the
// key line offers ←/→.
func (v *compareView) columnsHidden(w int) bool {
	_, n := v.shownColumns(w)
	return v.cmp != nil && n < len(v.cmp.Columns)
}

func (v *compareView) view(w, h int) string {
	if v.err != nil {
		return box("Compare", styleBad.Render(v.err.Error()), w, h, true)
	}
	// The histogram keeps a row per column and its axis, and the verdicts
	// at least three lines; a short terminal drops the p99 and p90, then
	// the CV, then the p95 rows rather than those.
	histH := len(v.cmp.Columns) + 3
	const minVerdictH = 5
	table := v.table(w-2, compareStats)
	for rows := len(compareStats) - 1; rows > 0 && len(table)+2 > h-histH-minVerdictH; rows-- {
		table = v.table(w-2, compareStats[:rows])
	}
	tableH := max(3, min(len(table)+2, h-histH-minVerdictH))
	// The verdicts take what they need of the rest, the histogram the
	// remainder: a short list of verdicts leaves no blank box while the
	// chart is squeezed.
	verdicts := v.verdictLines(w - 2)
	verdictH := h - tableH - histH
	if verdictH >= 3 {
		verdictH = max(min(verdictH, minVerdictH), min(verdictH, len(verdicts)+2))
	}
	histBoxH := h - tableH - verdictH
	if verdictH < 3 { // too short for three boxes: the histogram goes
		verdictH, histBoxH = h-tableH, 0
	}
	metric := v.cmp.Metrics[v.metric]
	title := "Compare · Δ% against the baseline · ✓ better ✗ worse (significant medians)"
	if first, n := v.shownColumns(w); n < len(v.cmp.Columns) {
		title = fmt.Sprintf("Compare · columns %d–%d of %d (←/→) · Δ%% vs the baseline · ✓ better ✗ worse", first+1, first+n, len(v.cmp.Columns))
	}
	out := box(title, strings.Join(table, "\n"), w, tableH, false) + "\n" +
		box("Verdicts · ↑/↓ scroll", v.window(verdicts, verdictH-2), w, verdictH, histBoxH == 0)
	if histBoxH == 0 {
		return out
	}
	var series []histSeries
	for c := range v.cmp.Columns {
		series = append(series, histSeries{name: v.labels[c], color: c, dist: &v.dists[v.metric][c]})
	}
	return out + "\n" + box(histogramTitle(strings.TrimSuffix(metric, "_ms")), renderHistogram(series, w-2, histBoxH-2), w, histBoxH, true)
}

// verdictLines are the comparison's verdict lines wrapped to w,
// significant ones colored by whether the change is for the better.
func (v *compareView) verdictLines(w int) []string {
	if !v.tested {
		return []string{styleDim.Render(fmt.Sprintf("computing the statistics (%d bootstrap resamples per test)…", session.DefaultTestOptions.Resamples))}
	}
	if v.verdicts != nil && v.verdictsWidth == w {
		return v.verdicts
	}
	var lines []string
	add := func(text string, style lipgloss.Style) {
		for _, l := range wrap(text, w) {
			lines = append(lines, style.Render(l))
		}
	}
	for _, line := range v.cmp.Load { // a load run's answer first, as in the done view
		add("load: "+line, lipgloss.NewStyle())
	}
	for _, line := range v.cmp.VerdictLines() {
		t := line.Test
		if t == nil {
			add(line.Text, styleWarn)
			continue
		}
		mark, style := testMark(t)
		add(mark+" "+line.Text, style)
	}
	if v.cmp.Reasoned() { // each column's thinking against its output, after the verdicts
		for i, col := range v.cmp.Columns {
			r := col.Reasoning()
			add(fmt.Sprintf("reasoning: %s thought %.1f of %.1f tokens a trial (means); TTFT p50 %s, TTFO p50 %s",
				v.labels[i], r.ReasoningMean, r.OutputMean, millis(r.TTFTMedian), millis(r.TTFOMedian)), lipgloss.NewStyle())
		}
	}
	for _, line := range v.cmp.SpreadVerdicts() {
		add(line, lipgloss.NewStyle())
	}
	add(v.cmp.TestsNote(), styleDim)
	v.verdicts, v.verdictsWidth = lines, w
	return lines
}

// testMark is how a test's outcome shows: ✓ better or ✗ worse, coloured,
// when significant, a dim · otherwise; the glyph tells without colour.
func testMark(t *session.ABTest) (string, lipgloss.Style) {
	switch {
	case !t.Significant():
		return "·", styleDim
	case t.Better():
		return "✓", styleGood
	}
	return "✗", styleBad
}

// window shows h of lines from the scroll position on.
func (v *compareView) window(lines []string, h int) string {
	v.scroll = min(v.scroll, max(0, len(lines)-h))
	return strings.Join(lines[v.scroll:], "\n")
}

// table is the header and one row per metric statistic. Columns are as
// wide as their widest value and delta, so numbers never touch. Only a
// significant median change is coloured, with ✓ (better) or ✗ (worse)
// beside it so it tells without colour; every other delta stays plain.
// Columns that do not fit w are left out from the side, from the
// firstColumn the screen scrolls to.
func (v *compareView) table(w int, stats []string) []string {
	colW, widestDelta := v.columnWidth(stats)
	first, n := v.shownColumns(w + 2)
	shown := make([]int, 0, n)
	for i := first; i < first+n; i++ {
		shown = append(shown, i)
	}
	var head strings.Builder
	head.WriteString(fmt.Sprintf("%-11s%-7s", "metric", "stat"))
	for _, i := range shown {
		head.WriteString(fmt.Sprintf("%*s", colW, fit(v.labels[i], colW-1)))
	}
	lines := []string{styleBold.Render(head.String())}
	for _, row := range v.cmp.Rows {
		if !slices.Contains(stats, row.Stat) {
			continue
		}
		var b strings.Builder
		b.WriteString(fmt.Sprintf("%-11s%-7s", row.Metric, row.Stat))
		for _, i := range shown {
			delta, style := session.FormatDelta(row.Deltas[i]), lipgloss.NewStyle()
			if t := v.cmp.Test(row.Metric, i); t != nil && row.Stat == "median" && t.Significant() {
				var mark string
				mark, style = testMark(t)
				delta += mark
			}
			b.WriteString(fmt.Sprintf(" %*s ", colW-2-widestDelta, session.FormatValue(row.Values[i])) + style.Render(fmt.Sprintf("%-*s", widestDelta, delta)))
		}
		lines = append(lines, b.String())
	}
	for _, l := range v.legend {
		lines = append(lines, styleDim.Render(l))
	}
	for _, warning := range v.cmp.Warnings {
		lines = append(lines, styleWarn.Render("⚠ "+warning))
	}
	return lines
}
