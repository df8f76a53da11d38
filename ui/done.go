package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// doneView is the results screen: what became of the run, the verdicts of
// its arms against the first, and under them the dashboard's own panels
// over the final data (the live charts and the final ones are one code).
// r and c open the report and the chooser in place of the panels, so
// neither ever opens out of sight. Loading and testing sessions is file
// I/O and arithmetic, so it runs as commands, never inside Update.
type doneView struct {
	data   *runData
	dash   *dashboard
	status string
	err    error
	mode   doneMode
	busy   string // what a command is doing for the view, shown until it answers
	// verdicts are the session's arms against its first, once tested.
	verdicts   *session.Comparison
	verdictErr error
	// table is verdictTable of verdicts at a width, kept for the frames
	// that follow at that width: laying it out was a fifth of a frame.
	table struct {
		of    *session.Comparison
		width int
		lines []string
	}
	// load is a load run's answer (sweep knee and goodput, or a together
	// study's speedup), said above the verdicts; nil for other runs.
	load    []string
	report  []string
	scroll  int
	chooser *baselineChooser
}

type doneMode int

const (
	doneResults doneMode = iota
	doneReport
	doneChooser
)

// verdictsMsg carries the arms' tests, and a load run's results in
// words, computed off the UI's path.
type verdictsMsg struct {
	cmp  *session.Comparison
	err  error
	load []string
}

// reportMsg carries the repeatability report, computed off the UI's path.
type reportMsg struct {
	lines []string
	err   error
}

// baselineChooser lists what the finished session can be compared with:
// its own arms against each other, then earlier sessions set up alike,
// then the rest, marked with how they differ.
type baselineChooser struct {
	options []baselineOption
	cursor  int
}

type baselineOption struct {
	label string
	// differs says how the session was set up unlike this one; empty when
	// alike.
	differs string
	refs    []session.Ref
}

// baselinesMsg carries the chooser's options, listed off the UI's path.
type baselinesMsg struct{ options []baselineOption }

// compareLoadedMsg is the chosen comparison, loaded.
type compareLoadedMsg struct {
	refs     []session.Ref
	sessions []*session.Session
	err      error
}

func newDoneView(data *runData, dash *dashboard, status string, err error) *doneView {
	return &doneView{data: data, dash: dash, status: status, err: err}
}

// init tests every arm against the first when the run saved more than one.
func (d *doneView) init() tea.Cmd {
	fin := d.data.finished
	if fin == nil || fin.SaveErr != "" || len(d.data.arms) < 2 {
		return nil
	}
	return func() tea.Msg {
		cmp, err := session.RunVerdicts(fin.Manifest)
		return verdictsMsg{cmp: cmp, err: err, load: loadProse(fin.Manifest)}
	}
}

func (d *doneView) showVerdicts(msg verdictsMsg) {
	d.verdicts, d.verdictErr, d.load = msg.cmp, msg.err, msg.load
}

// saved reports whether the session's files are there to read.
func (d *doneView) saved() bool { return d.data.finished != nil && d.data.finished.SaveErr == "" }

// key handles a key of the done view; the root model has taken quit, help
// and new run.
func (d *doneView) key(msg tea.KeyPressMsg) tea.Cmd {
	if d.busy != "" {
		return nil
	}
	switch {
	case key.Matches(msg, keys.Compare) && d.saved():
		if d.chooser != nil {
			d.mode = doneChooser
			return nil
		}
		return d.listBaselines(d.data.finished.Manifest)
	case key.Matches(msg, keys.Report) && d.saved():
		if d.mode == doneReport {
			d.mode = doneResults
			return nil
		}
		d.mode = doneReport
		if d.report != nil {
			return nil
		}
		d.busy = "computing the repeatability report…"
		manifest := d.data.finished.Manifest
		return func() tea.Msg {
			s, err := session.Load(manifest)
			if err != nil {
				return reportMsg{err: err}
			}
			return reportMsg{lines: session.BuildReport(s, session.DefaultTestOptions).Lines("", "  ")}
		}
	case key.Matches(msg, keys.Back):
		d.mode = doneResults
		return nil
	}
	switch d.mode {
	case doneReport:
		switch {
		case key.Matches(msg, keys.Next):
			d.scroll++ // clamped when drawn, where the height is known
		case key.Matches(msg, keys.Prev):
			d.scroll = max(0, d.scroll-1)
		}
	case doneChooser:
		return d.choose(msg)
	default:
		d.dash.update(msg) // m, tab, z: the panels' own keys
	}
	return nil
}

func (d *doneView) setReport(msg reportMsg) {
	d.busy = ""
	d.report = msg.lines
	if msg.err != nil {
		d.report = []string{styleBad.Render("No report: " + msg.err.Error())}
	}
}

// maxBaselines bounds the chooser to the most recent sessions.
const maxBaselines = 20

// listBaselines lists the comparisons on offer for the session at
// manifest: its arms (one ref per arm, so the first arm is every other's
// baseline), then the other sessions of its folder, those set up alike
// first, newest first within each.
func (d *doneView) listBaselines(manifest string) tea.Cmd {
	d.busy = "looking for sessions…"
	var ownArms []session.Ref
	for _, a := range d.data.arms {
		ownArms = append(ownArms, session.Ref{Path: manifest, Arm: a.name})
	}
	return func() tea.Msg {
		options := []baselineOption{{label: "this session's arms against each other", refs: ownArms}}
		this, err := session.ReadManifest(manifest)
		if err != nil {
			return baselinesMsg{options}
		}
		others, _ := filepath.Glob(filepath.Join(filepath.Dir(manifest), "*.toml"))
		modTime := map[string]int64{}
		for _, o := range others {
			if info, err := os.Stat(o); err == nil {
				modTime[o] = info.ModTime().UnixNano()
			}
		}
		sort.Slice(others, func(i, j int) bool { return modTime[others[i]] > modTime[others[j]] })
		var alike, unlike []baselineOption
		for _, o := range others {
			if o == manifest || len(alike)+len(unlike) >= maxBaselines {
				continue
			}
			m, err := session.ReadManifest(o)
			if err != nil {
				continue // not a session: nothing to offer
			}
			opt := baselineOption{label: "baseline " + filepath.Base(o), refs: []session.Ref{{Path: o}, {Path: manifest}}}
			if diffs := session.ConfigDifferences(m, this); len(diffs) > 0 {
				opt.differs = strings.Join(diffs, "; ")
				unlike = append(unlike, opt)
				continue
			}
			alike = append(alike, opt)
		}
		return baselinesMsg{append(append(options, alike...), unlike...)}
	}
}

func (d *doneView) showBaselines(msg baselinesMsg) {
	d.busy = ""
	d.chooser = &baselineChooser{options: msg.options}
	d.mode = doneChooser
}

// choose moves through the chooser; picking one returns the command that
// loads it.
func (d *doneView) choose(msg tea.KeyPressMsg) tea.Cmd {
	c := d.chooser
	switch {
	case key.Matches(msg, keys.Next):
		c.cursor = min(len(c.options)-1, c.cursor+1)
	case key.Matches(msg, keys.Prev):
		c.cursor = max(0, c.cursor-1)
	case key.Matches(msg, keys.Start):
		d.busy = "loading the sessions…"
		refs := c.options[c.cursor].refs
		return func() tea.Msg {
			loaded := compareLoadedMsg{refs: refs}
			for _, ref := range refs {
				s, err := session.Load(ref.Path)
				if err != nil {
					loaded.err = err
					break
				}
				loaded.sessions = append(loaded.sessions, s)
			}
			return loaded
		}
	}
	return nil
}

// bindings are the keys of the mode in front, for the help line.
func (d *doneView) bindings() []key.Binding {
	switch d.mode {
	case doneReport:
		return []key.Binding{helpScroll, helpReportBack, keys.Compare, keys.Back}
	case doneChooser:
		return []key.Binding{helpScroll, helpChoose, keys.Back}
	}
	if !d.saved() {
		return []key.Binding{keys.NewRun}
	}
	return []key.Binding{keys.Compare, keys.Report, keys.HTML, helpNewRun, keys.Metric, keys.NextPanel, keys.Zoom}
}

func (d *doneView) view(w, h int) string {
	head := d.headLines(w)
	for i, l := range head {
		head[i] = fit(l, w)
	}
	if len(head) >= h {
		return strings.Join(fitLines(strings.Join(head, "\n"), w, h), "\n")
	}
	bodyH := h - len(head)
	var body string
	switch {
	case d.busy != "":
		body = box("", styleDim.Render(d.busy), w, bodyH, true)
	case d.mode == doneReport:
		body = d.reportBox(w, bodyH)
	case d.mode == doneChooser:
		// The list takes the rows it needs; the run's panels keep the rest.
		listH := min(bodyH, len(d.chooser.options)+2)
		body = d.chooserBox(w, listH)
		if rest := bodyH - listH; rest >= 3 && d.data.started != nil {
			body += "\n" + d.dash.body(w, rest)
		} else if rest > 0 {
			body += "\n" + strings.Join(fitLines("", w, rest), "\n")
		}
	case d.data.started == nil: // the run never began: nothing to chart
		body = strings.Join(fitLines("", w, bodyH), "\n")
	default:
		body = d.results(w, bodyH)
	}
	return strings.Join(head, "\n") + "\n" + body
}

// headLines say how the run ended and where its files are: the status
// (wrapped, not cut: it says why a run stopped), a few caveats, the path.
func (d *doneView) headLines(w int) []string {
	fin := d.data.finished
	if fin == nil {
		if d.err != nil {
			return wrap(styleBad.Render("✗ Could not run: "+d.err.Error()), w)
		}
		return []string{fit("Run "+d.status, w)}
	}
	title, style := "✓ Run "+fin.Status, styleGood
	if fin.Status != session.StatusComplete {
		title, style = "⚠ Run "+fin.Status, styleWarn
	}
	if fin.Note != "" {
		title += " (" + fin.Note + ")"
	}
	// The title says the status and what the stop rule reached, in its
	// short form (the report, r, and the manifest's stopped_by give each
	// arm's), wrapped, not cut: it is the answer to "how precise".
	head := style.Render(title)
	if p := fin.Precision; p.Missed {
		head += " " + styleWarn.Render("⚠ "+p.Short)
	} else if p.Short != "" {
		head += ": " + p.Short
	}
	var lines []string
	if fin.SaveErr != "" {
		lines = wrap(head+" "+styleBad.Render("✗ but the session is not saved in full: "+fin.SaveErr), w)
	} else {
		lines = withPath(wrap(head, w), " · saved ", fin.Manifest, w)
	}
	var names []string
	for _, a := range d.data.arms {
		names = append(names, a.name)
	}
	// The arms' caveats follow, two at most, so the charts stay in view
	// (the report, r, lists them all).
	caveats := finishedCaveats(names, *fin)
	shown := min(len(caveats), 2)
	for i, c := range caveats[:shown] {
		if more := len(caveats) - shown; i == shown-1 && more > 0 {
			c += fmt.Sprintf(" (and %d more: r)", more)
		}
		lines = append(lines, styleWarn.Render(fit("⚠ "+c, w)))
	}
	// A lost server's error is the note the title already gives.
	if d.err != nil && fin.SaveErr == "" && !errors.Is(d.err, runner.ErrServerLost) {
		lines = append(lines, wrap(styleBad.Render("✗ "+d.err.Error()), w)...)
	}
	return lines
}

// results are the verdicts over the dashboard's panels; the panels get
// every row the verdicts do not need.
func (d *doneView) results(w, h int) string {
	const minPanels = 8
	// The box takes the rows its verdicts need, and the panels keep
	// minPanels when they can; but every metric's row comes before the
	// panels: the verdicts are the answer.
	boxRows := max(3, h-minPanels)
	if d.verdicts != nil {
		boxRows = min(h, max(boxRows, len(d.verdicts.Metrics)+5)) // borders, the load's answer, the header, a note
	}
	// One cell short of the box, so the last column never touches its side.
	verdicts := d.verdictLines(w-3, boxRows-2)
	if len(verdicts) == 0 {
		return d.dash.body(w, h)
	}
	boxH := min(len(verdicts)+2, boxRows)
	title := "verdicts · each arm against " + d.data.arms[0].name + " (the baseline) · median change [95% CI]"
	out := box(title, strings.Join(verdicts, "\n"), w, boxH, false)
	if h-boxH < 3 {
		return out
	}
	return out + "\n" + d.dash.body(w, h-boxH)
}

// verdictLines are a load run's answer and the verdict table of the arms
// against the first, or what stands in for it, in at most rows lines
// where it can: the load lines give way first, so that the table keeps
// its notes (what a * means), and the report (r) has them all; but the
// first load line, the run's answer, always stays.
func (d *doneView) verdictLines(w, rows int) []string {
	switch {
	case len(d.data.arms) < 2 || !d.saved():
		return nil
	case d.verdictErr != nil:
		return []string{styleBad.Render("no verdicts: " + d.verdictErr.Error())}
	case d.verdicts == nil:
		return []string{styleDim.Render(fmt.Sprintf("computing the verdicts (%d bootstrap resamples per test)…", session.DefaultTestOptions.Resamples))}
	}
	var lines []string
	for _, line := range d.load {
		lines = append(lines, wrap(line, w)...)
	}
	if d.table.of != d.verdicts || d.table.width != w {
		d.table.of, d.table.width, d.table.lines = d.verdicts, w, verdictTable(d.verdicts, w)
	}
	table := d.table.lines
	switch room := rows - len(table); {
	case len(lines) <= room || len(lines) == 0:
	case room >= 2:
		lines = append(lines[:room-1], styleDim.Render("… r: the report has the load results in full"))
	default: // the load's first line, its answer, whatever it costs the table's last note
		lines = lines[:1]
	}
	notesFrom := len(lines) + 1 + len(d.verdicts.Metrics) // the table's header and a row per metric come first
	lines = append(lines, table...)
	// A box too short for the table says so on its last row, rather than
	// losing lines at its edge without a word.
	if len(lines) > rows && rows >= 1 {
		more, what := len(lines)-rows+1, "has every verdict"
		if rows-1 >= notesFrom {
			what = "has the legend and notes"
		}
		lines = append(lines[:rows-1], styleDim.Render(fit(fmt.Sprintf("… %d more lines: c, then enter, %s", more, what), w)))
	}
	return lines
}

// verdictTable lays the tests out with a row per metric and a column per
// compared arm: a glyph and a word for a significant change (✓ better,
// ✗ worse, so colour is never the only sign), "n.s." otherwise, and the
// median's change with its interval. Narrow terminals drop the
// intervals, then the arms that still do not fit (compare has them all).
func verdictTable(cmp *session.Comparison, w int) []string {
	labels, _ := session.ShortLabels(cmp.Columns)
	var columns []int
	for i, col := range cmp.Columns {
		if col.Baseline != i {
			columns = append(columns, i)
		}
	}
	spanned := false    // a significant change whose medians' interval spans none
	unadjusted := false // no significant change, yet an interval that excludes none
	cell := func(t *session.ABTest, short bool) (string, lipgloss.Style) {
		switch {
		case t == nil || t.NA == 0 || t.NB == 0:
			return "no data", styleDim
		case t.TooFew:
			return "too few trials", styleDim
		case t.Metric.Name == "j_per_token":
			// Energy as a ratio, never a figure where an arm is not
			// distinguishable from idle.
			ratio, idle, differs := cmp.EnergyRatio(t, short)
			switch {
			case idle != nil:
				return "≈ idle: no ratio", styleDim
			case !t.Significant() || !differs:
				return "n.s. " + ratio, styleDim
			}
			mark, style := testMark(t)
			return mark + " " + ratio, style
		case t.IntervalWithoutVerdict():
			unadjusted = true
			return "n.s.† " + t.Change(short), styleDim
		case !t.Significant():
			return "n.s. " + t.Change(short), styleDim
		}
		word := t.Direction()
		if !t.IntervalShowsIt() {
			word += "*"
			spanned = true
		}
		mark, style := testMark(t)
		return mark + " " + word + " " + t.Change(short), style
	}
	labelW := len("ITL mean")
	for _, name := range cmp.Metrics {
		m, _ := session.LookupMetric(name)
		labelW = max(labelW, cellWidth(m.Label))
	}
	widths := func(short bool) []int {
		out := make([]int, len(columns))
		for j, col := range columns {
			out[j] = cellWidth(labels[col])
			for _, name := range cmp.Metrics {
				text, _ := cell(cmp.Test(name, col), short)
				out[j] = max(out[j], cellWidth(text))
			}
		}
		return out
	}
	fits := func(ws []int) int { // how many columns fit in w
		used := labelW
		for j, cw := range ws {
			if used += 2 + cw; used > w {
				return j
			}
		}
		return len(ws)
	}
	short := false
	ws := widths(false)
	if fits(ws) < len(ws) {
		short, ws = true, widths(true)
	}
	shown := max(1, fits(ws))
	var lines []string
	head := strings.Repeat(" ", labelW)
	for j := range shown {
		head += "  " + fit(labels[columns[j]], ws[j])
	}
	lines = append(lines, styleBold.Render(head))
	for _, name := range cmp.Metrics {
		m, _ := session.LookupMetric(name)
		row := fit(m.Label, labelW)
		for j := range shown {
			text, style := cell(cmp.Test(name, columns[j]), short)
			row += "  " + style.Render(fit(text, ws[j]))
		}
		lines = append(lines, row)
	}
	var notes []string
	// The compare screen's first choice, this session's arms against each
	// other, has every arm and every interval.
	if more := len(columns) - shown; more > 0 {
		notes = append(notes, fmt.Sprintf("%d more arms: c, then enter, compares every arm", more))
	}
	if short {
		notes = append(notes, "intervals: c, then enter")
	}
	if spanned {
		notes = append(notes, "* significant, but the medians' interval spans no change: the distributions differ as a whole")
	}
	if unadjusted {
		notes = append(notes, "† not significant, though the interval excludes no change: the interval is not adjusted for the family of tests; the Holm-adjusted test decides")
	}
	legend := fmt.Sprintf("✓/✗ significant (Mann-Whitney, Holm-adjusted p < %g) · n.s. not significant", session.Alpha)
	// Notes wrap rather than lose their end: a caveat cut at the edge
	// would hide what it asks the reader to do.
	for _, l := range cmp.VerdictLines() {
		if l.Test == nil { // output lengths that differ: the verdicts' caveat
			for _, line := range wrap("⚠ "+l.Text, w) {
				lines = append(lines, styleWarn.Render(line))
			}
		}
	}
	for _, note := range append([]string{legend}, notes...) {
		for _, line := range wrap(note, w) {
			lines = append(lines, styleDim.Render(line))
		}
	}
	return lines
}

func (d *doneView) reportBox(w, h int) string {
	var wrapped []string
	for _, l := range d.report {
		wrapped = append(wrapped, wrap(l, w-2)...)
	}
	d.scroll = max(0, min(d.scroll, len(wrapped)-(h-2)))
	return box("repeatability report", strings.Join(wrapped[d.scroll:], "\n"), w, h, true)
}

func (d *doneView) chooserBox(w, h int) string {
	c := d.chooser
	var lines []string
	for i, o := range c.options {
		mark, label := "  ", o.label
		if i == c.cursor {
			mark, label = styleSelected.Render("▸ "), styleSelected.Render(label)
		}
		if o.differs != "" {
			label += styleWarn.Render(" ≠ set up differently: " + o.differs)
		}
		lines = append(lines, fit(mark+label, w-2))
	}
	// Keep the cursor in view.
	first := max(0, c.cursor-(h-3))
	return box("compare with… · sessions set up alike first; ≠ marks the rest", strings.Join(lines[first:], "\n"), w, h, true)
}
