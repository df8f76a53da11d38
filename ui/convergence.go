package ui

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/guptarohit/asciigraph"
)

// convergenceView is what the convergence panel charts.
type convergenceView int

const (
	viewMean       convergenceView = iota // running mean of e2e with its 95% CI
	viewCV                                // running CV of e2e
	viewThroughput                        // a sweep's aggregate tok/s, steady window by window
)

// convergencePanel charts the running mean of e2e, or with c its running
// CV; a sweep opens on its aggregate throughput, and c cycles through all
// three.
type convergencePanel struct{ presses int }

func (p *convergencePanel) update(msg tea.KeyPressMsg) {
	if key.Matches(msg, keys.Chart) {
		p.presses++
	}
}

func (p *convergencePanel) shown(data *runData) convergenceView {
	views := []convergenceView{viewMean, viewCV}
	if data.sweep() {
		views = []convergenceView{viewThroughput, viewMean, viewCV}
	}
	return views[p.presses%len(views)]
}

func (p *convergencePanel) title(data *runData) string {
	switch p.shown(data) {
	case viewCV:
		return "running CV of e2e · ▲ mean steady"
	case viewThroughput:
		return "aggregate tok/s per steady window · c: mean/CV"
	}
	return "mean e2e ms ±95% CI · ▲ steady"
}

func (p *convergencePanel) view(data *runData, w, h int) string {
	return renderConvergence(data.arms, data.convergeTol, p.shown(data), w, h)
}

// series is how many points an arm has in view v, and the i-th.
func (v convergenceView) series(a *armData) (int, func(i int) float64) {
	switch v {
	case viewThroughput:
		return len(a.blockTPS), func(i int) float64 { return a.blockTPS[i] }
	case viewCV:
		return len(a.points), func(i int) float64 { return a.points[i].CV }
	}
	return len(a.points), func(i int) float64 { return a.points[i].Mean }
}

// renderConvergence plots each arm's running mean (or running CV) of e2e
// against the trial number on one shared x axis, marks with ▲ where each
// arm converged, and lists mean ± 95% CI half-width, CV and converged_at
// per arm; or a sweep's aggregate tok/s block by block, with each arm's
// aggregate so far. It samples at most one point per column, so a frame
// costs the same for 10 trials as for 10,000.
func renderConvergence(arms []*armData, tol float64, v convergenceView, w, h int) string {
	maxN := 0
	for _, a := range arms {
		n, _ := v.series(a)
		maxN = max(maxN, n)
	}
	legend := convergenceLegend(arms, tol)
	markerRows := 1 // one row for the ▲ markers
	if v == viewThroughput {
		legend, markerRows = throughputLegend(arms, w), 0
	}
	graphRows := h - len(legend) - markerRows
	if graphRows < 3 && len(arms) > 1 {
		// Short panels keep the chart: the legend shrinks to one line that
		// still ties each glyph to its arm.
		var names []string
		for _, a := range arms {
			names = append(names, armStyle(a.index).Render(armGlyph(a.index)+" "+a.name))
		}
		if short := strings.Join(names, "  "); cellWidth(short) <= w {
			legend, graphRows = []string{short}, h-1-markerRows
		}
	}
	if maxN < 2 || graphRows < 2 {
		msg := "needs 2 timed trials per arm"
		if v == viewThroughput {
			msg = "needs 2 timed blocks of an arm (each block's steady window is a point)"
		}
		if maxN >= 2 {
			msg = "too short for the chart: z zooms this panel"
		}
		// Wrapped, not cut: the message says what to do.
		return styleDim.Render(strings.Join(wrap(msg, w), "\n")) + "\n" + strings.Join(legend, "\n")
	}
	const labelW = 9 // a 7-cell label, fixed so the panel never jitters, plus asciigraph's margins
	// One column per trial, so the running mean grows across the panel as
	// trials arrive. A sweep has only a few steady windows per level: they
	// are drawn as steps across the whole panel rather than in a strip at
	// its left edge.
	cols := min(maxN, w-labelW-1)
	if v == viewThroughput {
		cols = w - labelW - 1
	}
	if cols < 2 {
		return strings.Join(legend, "\n")
	}
	var data [][]float64
	var colors []asciigraph.AnsiColor
	var chars []asciigraph.CharSet
	for _, a := range arms {
		n, at := v.series(a)
		if n == 0 {
			continue
		}
		series := make([]float64, cols)
		for c := range series {
			i := sampleIndex(c, cols, maxN)
			series[c] = math.NaN()
			if i < n {
				series[c] = at(i)
			}
		}
		if !hasFinite(series) {
			continue
		}
		data = append(data, series)
		colors = append(colors, armGraphColor(a.index))
		chars = append(chars, asciigraph.CreateCharSet(armGlyph(a.index)))
	}
	if len(data) == 0 {
		return strings.Join(legend, "\n")
	}
	plot := asciigraph.PlotMany(data, asciigraph.Height(graphRows-1),
		asciigraph.SeriesColors(colors...), asciigraph.SeriesChars(chars...),
		asciigraph.YAxisValueFormatter(func(v float64) string { return fmt.Sprintf("%7.3g", v) }))
	// The first data column is the axis glyph's; find it rather than
	// assume asciigraph's margins.
	firstLine := ansi.Strip(strings.SplitN(plot, "\n", 2)[0])
	axisCol := -1
	if i := strings.IndexAny(firstLine, "┤┼"); i >= 0 {
		axisCol = utf8.RuneCountInString(firstLine[:i])
	}
	if markerRows == 0 {
		return strings.Join(append(strings.Split(plot, "\n"), legend...), "\n")
	}
	markers := []rune(strings.Repeat(" ", w))
	for _, a := range arms {
		if at := a.convergence(tol); at > 0 && len(a.points) > 1 && axisCol >= 0 {
			col := axisCol + columnOf(at-1, cols, maxN)
			if col < len(markers) {
				markers[col] = '▲'
			}
		}
	}
	lines := append(strings.Split(plot, "\n"), styleDim.Render(string(markers)))
	return strings.Join(append(lines, legend...), "\n")
}

// sampleIndex maps column c of cols to a trial index in [0, n).
func sampleIndex(c, cols, n int) int {
	if cols <= 1 {
		return n - 1
	}
	return int(math.Round(float64(c) * float64(n-1) / float64(cols-1)))
}

// columnOf is the inverse of sampleIndex.
func columnOf(i, cols, n int) int {
	if n <= 1 {
		return 0
	}
	return int(math.Round(float64(i) * float64(cols-1) / float64(n-1)))
}

func hasFinite(xs []float64) bool {
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return true
		}
	}
	return false
}

// convergenceLegend has one line per arm.
func convergenceLegend(arms []*armData, tol float64) []string {
	var lines []string
	for _, a := range arms {
		line := armStyle(a.index).Render(armGlyph(a.index) + " " + a.name)
		if n := len(a.points); n > 0 {
			p := a.points[n-1]
			line += fmt.Sprintf(" %s", formatMs(p.Mean))
			if !math.IsNaN(p.HalfWidth) {
				line += "±" + formatMs(p.HalfWidth)
			}
			if !math.IsNaN(p.CV) {
				line += fmt.Sprintf(" cv %.3f", p.CV)
			}
			// ▲ holds only once the mean has stayed in its band for a
			// while (metrics.ConvergedAt), so early noise earns none.
			if at := a.convergence(tol); n > 1 && at > 0 {
				line += fmt.Sprintf(" ▲%d", at)
			} else if n > 1 {
				line += " unsteady"
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// throughputLegend has one line per arm: its aggregate tok/s and req/s
// over the steady windows so far, and how many windows; the window count
// and then req/s give way on a narrow panel.
func throughputLegend(arms []*armData, w int) []string {
	var lines []string
	for _, a := range arms {
		name := armStyle(a.index).Render(armGlyph(a.index) + " " + a.name)
		line := name
		if n := len(a.blockTPS); n > 0 {
			tps, rps := a.aggregate()
			windows := fmt.Sprintf("%d windows", n)
			if n == 1 {
				windows = "1 window"
			}
			for _, figures := range []string{
				fmt.Sprintf(" %s tok/s · %s req/s · %s", number(tps, 1), number(rps, 2), windows),
				fmt.Sprintf(" %s tok/s · %s req/s", number(tps, 1), number(rps, 2)),
				fmt.Sprintf(" %s tok/s", number(tps, 1)),
			} {
				if line = name + figures; cellWidth(line) <= w {
					break
				}
			}
		}
		lines = append(lines, line)
	}
	return lines
}
