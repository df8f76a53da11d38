package ui

import (
	"fmt"
	"github.com/charmbracelet/x/ansi"
	"math"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// panel identifies a dashboard panel; tab cycles focus in this order.
type panel int

const (
	panelHistogram panel = iota
	panelConvergence
	panelPower
	panelStats
	panelCount
)

// panelModel is one dashboard panel: it keeps its own view choices,
// handles the keys meant for it, and draws itself from the run's data.
type panelModel interface {
	update(msg tea.KeyPressMsg)
	title(data *runData) string
	view(data *runData, w, h int) string
}

// dashboard is the run view: header, four panels and the event line. It
// lays the panels out and moves focus; the run's data lives in runData.
type dashboard struct {
	data    *runData
	backend string // kind and where it runs
	panels  [panelCount]panelModel
	focus   panel
	zoomed  bool
	paused  bool
	begin   time.Time // when the run started, for elapsed and ETA
	end     time.Time // when it finished
}

func newDashboard(data *runData, backend string, begin time.Time) *dashboard {
	return &dashboard{data: data, backend: backend, begin: begin,
		panels: [panelCount]panelModel{&histogramPanel{}, &convergencePanel{}, powerPanel{}, statsPanel{}}}
}

// update handles focus and zoom, and hands other keys to every panel
// (m and c act whether or not their panel has focus); run control (pause,
// stop, quit) belongs to the root model.
func (d *dashboard) update(msg tea.KeyPressMsg) {
	switch {
	case key.Matches(msg, keys.NextPanel):
		d.focus = (d.focus + 1) % panelCount
	case key.Matches(msg, keys.PrevPanel):
		d.focus = (d.focus + panelCount - 1) % panelCount
	case key.Matches(msg, keys.Zoom):
		d.zoomed = !d.zoomed
	default:
		for _, p := range d.panels {
			p.update(msg)
		}
	}
}

// view renders the dashboard in exactly w×h cells (h ≥ 2): the header,
// the panels in the rows it leaves, the event line. A header taller than
// the terminal keeps its first lines and says how many arms it left out.
func (d *dashboard) view(w, h int, now time.Time) string {
	if d.data.finished != nil && d.end.IsZero() {
		d.end = now
	}
	header := d.header(w, h < 30, now)
	switch room := h - 1; {
	case room < 2 && len(header) > room:
		header = header[:max(0, room)]
	case len(header) > room:
		left := len(header) - room + 1
		header = append(header[:room-1], fit(styleDim.Render(fmt.Sprintf("… %d more arms' progress: a taller terminal shows them", left)), w))
	}
	lines := header
	if bodyH := h - len(header) - 1; bodyH > 0 {
		lines = append(lines, d.body(w, bodyH))
	}
	return strings.Join(append(lines, d.eventLine(w)), "\n")
}

// body lays the panels out in exactly w×h cells (h ≥ 1).
func (d *dashboard) body(w, h int) string {
	if d.zoomed {
		return d.panel(d.focus, w, h)
	}
	statsH := len(d.data.arms) + 3
	powerH := 4 // status and timeline
	if len(d.data.traces) > 0 {
		powerH = min(12, max(6, h/3)) // room for the watts chart
	}
	powerH += serverRows(d.data.servers, h)
	if bottomH := max(statsH, powerH+1); w >= 140 && h >= bottomH+3 {
		// Side by side the power panel has room for both status lines
		// and the timeline; neither box takes more than its content, so
		// the spare rows go to the charts.
		top := d.topRow(w, h-bottomH)
		powerW := w * 2 / 5
		bottom := sideBySide(d.panel(panelPower, powerW, bottomH), d.panel(panelStats, w-powerW, bottomH))
		return top + "\n" + bottom
	}
	// Short terminals take rows from the stats, then the power panel (in
	// a sweep the other way round), so the charts keep at least half; a
	// box too short to show a line of its own goes, its rows to the
	// charts.
	topH := min(h, max(h/2, h-statsH-powerH))
	if d.data.sweep() {
		// A sweep's answer is its table of levels: the power panel gives
		// way first.
		statsH = min(statsH, h-topH)
		powerH = h - topH - statsH
	} else {
		powerH = min(powerH, h-topH)
		statsH = h - topH - powerH
	}
	// The header and an arm at least, and with more arms room to say how
	// many did not fit.
	if statsH < min(len(d.data.arms)+3, 5) {
		topH, statsH = topH+statsH, 0
	}
	if powerH < 3 {
		topH, powerH = topH+powerH, 0
	}
	// Nor do the charts keep a box too short to show a line.
	switch {
	case topH >= 3:
	case powerH > 0:
		topH, powerH = 0, powerH+topH
	case statsH > 0:
		topH, statsH = 0, statsH+topH
	default:
		return strings.Join(fitLines("", w, h), "\n")
	}
	var rows []string
	if topH > 0 {
		rows = append(rows, d.topRow(w, topH))
	}
	if powerH > 0 {
		rows = append(rows, d.panel(panelPower, w, powerH))
	}
	if statsH > 0 {
		rows = append(rows, d.panel(panelStats, w, statsH))
	}
	return strings.Join(rows, "\n")
}

func (d *dashboard) topRow(w, h int) string {
	left := w / 2
	return sideBySide(d.panel(panelHistogram, left, h), d.panel(panelConvergence, w-left, h))
}

// panel draws one panel in its box.
func (d *dashboard) panel(p panel, w, h int) string {
	m := d.panels[p]
	return box(focusTitle(m.title(d.data), p == d.focus), m.view(d.data, w-2, h-2), w, h, p == d.focus)
}

// header is the title line and one progress line per arm.
func (d *dashboard) header(w int, compactHeader bool, now time.Time) []string {
	data := d.data
	end := now
	if !d.end.IsZero() {
		end = d.end
	}
	elapsed := end.Sub(d.begin)
	title := styleTitle.Render("tokentop") + " " + data.profile + " · " + d.backend
	if data.model != "" {
		title += " · " + data.model
	}
	if data.started != nil {
		// What sets the arms' targets apart, and only that: "f32 vs q8_0".
		var labels []string
		for _, a := range data.started.Arms {
			if l := data.started.Labels[a]; l != "" && !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		if len(labels) > 1 {
			title += " · " + strings.Join(labels, " vs ")
		}
	}
	status := d.phase() + " · " + clock(elapsed)
	if data.started != nil && data.started.Load != nil && data.finished == nil {
		status = fmt.Sprintf("%s · %d in flight · %s", d.phase(), data.inFlight, clock(elapsed))
		if data.openLoop() {
			status = fmt.Sprintf("%s · %d in flight, %d waiting · %s", d.phase(), data.inFlight, data.waiting, clock(elapsed))
		}
	}
	if eta, ok := d.eta(elapsed); ok {
		status += " · ETA " + clock(eta)
	}
	// The title gives way to the status, never touching it.
	if room := w - cellWidth(status) - 2; cellWidth(title) > room {
		title = ansi.Truncate(title, max(0, room), "…")
	}
	gap := w - cellWidth(title) - cellWidth(status)
	lines := []string{fit(title+strings.Repeat(" ", max(1, gap))+styleBold.Render(status), w)}
	if data.started == nil {
		return lines
	}
	nameW := 0
	for _, a := range data.arms {
		nameW = max(nameW, len(a.name))
	}
	nameW = min(nameW, w/3)
	trials := data.started.TrialsPerArm
	var full []string
	type compactArm struct {
		name, short string
		done        float64
	}
	var compact []compactArm
	for _, a := range data.arms {
		warmup := data.started.Warmup[a.name]
		counts := fmt.Sprintf(" %d/%d timed", a.timed, trials)
		done := float64(a.warmupDone+a.timed) / float64(max(1, warmup+trials))
		if d := data.started.Duration; d > 0 {
			counts = fmt.Sprintf(" %.1f/%g s steady · %d timed", a.windowS, d.Seconds(), a.timed)
			done = a.progress(d)
		}
		if warmup > 0 {
			counts += fmt.Sprintf(" · %d/%d warmup", a.warmupDone, warmup)
		}
		switch {
		case a.stopped != "":
			counts += " · stopped: " + a.stopped
		case a.reached != "":
			counts += " · " + a.reached + ", runs on with the others"
		}
		name := armStyle(a.index).Render(fit(a.name, nameW))
		barW := max(10, min(40, w-nameW-1-cellWidth(counts)))
		full = append(full, fit(name+" "+progressBar(done, barW)+counts, w))
		// The same count as the full line's "timed", warmup apart: a
		// count of both read as timed trials that were not.
		short := fmt.Sprintf(" %d/%d", a.timed, trials)
		if a.warmupDone < warmup && a.timed == 0 {
			short = fmt.Sprintf(" warmup %d/%d", a.warmupDone, warmup)
		}
		if d := data.started.Duration; d > 0 {
			short = fmt.Sprintf(" %.0f/%gs", a.windowS, d.Seconds())
		}
		switch {
		case a.stopped != "":
			short += " stopped"
		case a.reached != "":
			short += " reached"
		}
		compact = append(compact, compactArm{armStyle(a.index).Render(a.name), short, done})
	}
	// Short terminals get every arm on one line when it fits, leaving the
	// rows to the charts: the bars shrink, then go, before the line
	// breaks (four-digit counts of three arms do not fit 80 columns with
	// bars of 8).
	if compactHeader && len(data.arms) > 1 {
		for _, barW := range []int{8, 6, 4, 0} {
			parts := make([]string, len(compact))
			for i, c := range compact {
				parts[i] = c.name + c.short
				if barW > 0 {
					parts[i] = c.name + " " + progressBar(c.done, barW) + c.short
				}
			}
			if oneLine := strings.Join(parts, "  "); cellWidth(oneLine) <= w {
				return append(lines, fit(oneLine, w))
			}
		}
	}
	return append(lines, full...)
}

// phase names where the run is: probing, warming up, timed, converged
// (every arm's 95% CI half-width within the tolerance of its mean),
// paused or done.
func (d *dashboard) phase() string {
	data := d.data
	switch {
	case data.finished != nil:
		return "done (" + data.finished.Status + ")"
	case data.started == nil:
		return "probing backend…"
	case d.paused:
		return "paused"
	}
	if data.lastWarmup {
		return "warming up"
	}
	converged := len(data.arms) > 0
	for _, a := range data.arms {
		n := len(a.points)
		if n < 2 || !(a.points[n-1].HalfWidth <= data.convergeTol*a.points[n-1].Mean) {
			converged = false
		}
	}
	if converged {
		return "timed · converged"
	}
	return "timed"
}

// eta extrapolates the time per trial so far over the trials left.
func (d *dashboard) eta(elapsed time.Duration) (time.Duration, bool) {
	data := d.data
	done := data.trialsDone()
	if data.started == nil || data.finished != nil || done == 0 {
		return 0, false
	}
	if d := data.started.Duration; d > 0 {
		// Run by steady time: extrapolate the share of it done so far.
		share := 0.0
		for _, a := range data.arms {
			share += a.progress(d) / float64(len(data.arms))
		}
		if share <= 0 {
			return 0, false
		}
		return time.Duration(float64(elapsed) * (1 - share) / share), true
	}
	left := -done
	for _, a := range data.arms {
		if a.stopped == "" {
			left += data.started.Warmup[a.name] + data.started.TrialsPerArm
		} else {
			left += a.warmupDone + a.timed
		}
	}
	return time.Duration(float64(elapsed) / float64(done) * float64(max(0, left))), true
}

func (d *dashboard) eventLine(w int) string {
	if d.data.event == "" {
		return fit(styleDim.Render("no errors or warnings"), w)
	}
	return fit(styleWarn.Render("⚠ "+d.data.event), w)
}

// progressBar draws done (0..1) in w cells.
func progressBar(done float64, w int) string {
	if math.IsNaN(done) {
		done = 0
	}
	full := int(math.Round(math.Min(1, math.Max(0, done)) * float64(w)))
	return armBarStyle.Render(strings.Repeat("█", full)) + styleDim.Render(strings.Repeat("░", w-full))
}

// clock formats a duration as m:ss (h:mm:ss past an hour).
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
