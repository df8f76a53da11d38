package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/session"
)

// doneView says where the session was saved, summarises each arm, and
// offers the baselines to compare it with. Listing and loading sessions
// is file I/O, so it runs as commands, never inside Update.
type doneView struct {
	data     *runData
	status   string
	err      error
	choosing *baselineChooser
	busy     string // what a command is doing for the view, shown until it answers
	// report is the session's repeatability report once computed; r
	// shows it in place of the summary.
	report     []string
	showReport bool
	scroll     int
}

// reportMsg carries the repeatability report, computed off the UI's path.
type reportMsg struct {
	lines []string
	err   error
}

// toggleReport shows or hides the report, computing it the first time.
func (d *doneView) toggleReport(manifest string) tea.Cmd {
	d.showReport = !d.showReport
	if !d.showReport || d.report != nil {
		return nil
	}
	d.busy = "computing the repeatability report…"
	return func() tea.Msg {
		s, err := session.Load(manifest)
		if err != nil {
			return reportMsg{err: err}
		}
		return reportMsg{lines: session.BuildReport(s, session.DefaultTestOptions).Lines("", "  ")}
	}
}

func (d *doneView) setReport(msg reportMsg) {
	d.busy = ""
	d.report = msg.lines
	if msg.err != nil {
		d.report = []string{styleBad.Render("No report: " + msg.err.Error())}
	}
}

// baselineChooser lists what the finished session can be compared with:
// its own arms against each other, then earlier sessions, newest first.
type baselineChooser struct {
	options []baselineOption
	cursor  int
}

type baselineOption struct {
	label string
	refs  []session.Ref
}

// baselinesMsg carries the chooser's options, listed off the UI's path.
type baselinesMsg struct{ options []baselineOption }

// compareLoadedMsg is the chosen comparison, loaded.
type compareLoadedMsg struct {
	refs     []session.Ref
	sessions []*session.Session
	err      error
}

func newDoneView(data *runData, status string, err error) *doneView {
	return &doneView{data: data, status: status, err: err}
}

// maxBaselines bounds the chooser to the most recent sessions.
const maxBaselines = 20

// listBaselines lists the comparisons on offer for the session at
// manifest: its arms (one ref per arm, so the first arm is every other's
// baseline), then the other sessions of its folder, newest first.
func (d *doneView) listBaselines(manifest string) tea.Cmd {
	d.busy = "looking for sessions…"
	var ownArms []session.Ref
	for _, a := range d.data.arms {
		ownArms = append(ownArms, session.Ref{Path: manifest, Arm: a.name})
	}
	return func() tea.Msg {
		options := []baselineOption{{label: "this session's arms against each other", refs: ownArms}}
		others, _ := filepath.Glob(filepath.Join(filepath.Dir(manifest), "*.toml"))
		modTime := map[string]int64{}
		for _, o := range others {
			if info, err := os.Stat(o); err == nil {
				modTime[o] = info.ModTime().UnixNano()
			}
		}
		sort.Slice(others, func(i, j int) bool { return modTime[others[i]] > modTime[others[j]] })
		for _, o := range others {
			if o != manifest && len(options) <= maxBaselines {
				options = append(options, baselineOption{label: "baseline " + filepath.Base(o), refs: []session.Ref{{Path: o}, {Path: manifest}}})
			}
		}
		return baselinesMsg{options}
	}
}

func (d *doneView) showBaselines(msg baselinesMsg) {
	d.busy = ""
	d.choosing = &baselineChooser{options: msg.options}
}

// update moves through the chooser; picking one returns the command that
// loads it.
func (d *doneView) update(msg tea.KeyPressMsg) tea.Cmd {
	c := d.choosing
	if c == nil && d.showReport {
		switch {
		case key.Matches(msg, keys.Next):
			d.scroll++ // clamped when drawn, where the height is known
		case key.Matches(msg, keys.Prev):
			d.scroll = max(0, d.scroll-1)
		}
		return nil
	}
	if c == nil || d.busy != "" {
		return nil
	}
	switch {
	case key.Matches(msg, keys.Next):
		c.cursor = min(len(c.options)-1, c.cursor+1)
	case key.Matches(msg, keys.Prev):
		c.cursor = max(0, c.cursor-1)
	case key.Matches(msg, keys.Back):
		d.choosing = nil
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

func (d *doneView) view(w, h int) string {
	var lines []string
	fin := d.data.finished
	switch {
	case fin != nil: // a run that a failure ended early has its files too
		title := "Run " + fin.Status
		if fin.Note != "" {
			title += " (" + fin.Note + ")"
		}
		style := styleGood
		if fin.Status != session.StatusComplete {
			style = styleWarn
		}
		stem := strings.TrimSuffix(filepath.Base(fin.Manifest), ".toml")
		// The title, like long paths below, wraps rather than lose its
		// end: it says why the run stopped.
		lines = append(lines, wrap(style.Render(title), w-2)...)
		var names []string
		for _, a := range d.data.arms {
			names = append(names, a.name)
		}
		// The title already says the status; the arms' caveats follow it,
		// a line each and a few at most, so the table stays in view (the
		// report, r, lists them all).
		caveats := session.ArmCaveats(names, fin.Summary)
		shown := min(len(caveats), max(2, h/6))
		for _, c := range caveats[:shown] {
			lines = append(lines, styleWarn.Render(fit("⚠ "+c, w-2)))
		}
		if more := len(caveats) - shown; more > 0 {
			lines = append(lines, styleWarn.Render(fmt.Sprintf("⚠ and %d more caveats: r shows the report", more)))
		}
		lines = append(lines, "", ansi.Hardwrap("saved in "+filepath.Dir(fin.Manifest), w-2, true),
			"  "+stem+".toml", styleDim.Render("  "+stem+".trials.csv, .tokens.csv"), "")
		if d.showReport && d.report != nil {
			lines = append(lines, styleBold.Render("Repeatability report")+styleDim.Render(" · ↑/↓ scroll · r summary"))
			var wrapped []string
			for _, l := range d.report {
				wrapped = append(wrapped, wrap(l, w-2)...)
			}
			d.scroll = max(0, min(d.scroll, len(wrapped)-(h-2-len(lines))))
			lines = append(lines, wrapped[d.scroll:]...)
		} else {
			lines = append(lines, summaryTable(d.data.arms, fin.Summary)...)
		}
	case d.err != nil:
		lines = append(lines, wrap(styleBad.Render("Could not run: "+d.err.Error()), w-2)...)
	}
	if c := d.choosing; c != nil {
		lines = append(lines, "", styleBold.Render("Compare with…"))
		for i, o := range c.options {
			mark := "  "
			label := o.label
			if i == c.cursor {
				mark, label = styleSelected.Render("▸ "), styleSelected.Render(label)
			}
			lines = append(lines, mark+label)
		}
		lines = append(lines, styleDim.Render("enter compares · esc goes back"))
	}
	if d.busy != "" {
		lines = append(lines, "", styleDim.Render(d.busy))
	}
	return box("Done", strings.Join(lines, "\n"), w, h, true)
}

// summaryTable is the saved per-arm summary, narrow enough for 80 columns.
func summaryTable(arms []*armData, summary map[string]session.ArmSummary) []string {
	nameW := 6
	for _, a := range arms {
		nameW = min(10, max(nameW, len(a.name)))
	}
	head := fmt.Sprintf("%-*s %4s %4s %20s %7s %6s %7s %5s %7s", nameW, "arm", "n", "deg", "median e2e [95% CI]", "p95", "CV", "tok/s", "wu×", "conv.at")
	lines := []string{styleBold.Render(head)}
	anytimeNote := false
	for _, a := range arms {
		s := summary[a.name]
		e2e := s.Metrics["e2e_ms"]
		conv := "no"
		if s.ConvergedAt > 0 {
			conv = fmt.Sprintf("n=%d", s.ConvergedAt)
		}
		lo, hi, anytime := s.MedianE2EInterval()
		median := formatMs(e2e.Median) + " " + interval(lo, hi, formatMs)
		if anytime {
			median += "*"
			anytimeNote = true
		}
		lines = append(lines, armStyle(a.index).Render(fit(a.name, nameW))+fmt.Sprintf(" %4d %4d %20s %7s %6s %7s %5s %7s",
			s.TimedOK, s.Degraded, median, formatMs(e2e.P95), number(e2e.CV, 3), number(s.OutputTPS, 1), number(s.WarmupRatio, 2), conv))
	}
	if anytimeNote {
		lines = append(lines, styleDim.Render("* the stop rule's anytime-valid interval; others: bootstrap at fixed n"))
	}
	return lines
}
