package ui

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// histogramPanel shows every arm's distribution of one metric; m cycles
// the metric.
type histogramPanel struct{ presses int } // m presses; the metric is shown(data)

func (p *histogramPanel) update(msg tea.KeyPressMsg) {
	if key.Matches(msg, keys.Metric) {
		p.presses++
	}
}

// shown is the index into histMetrics drawn: the presses cycle through
// the metrics the run has (TTFO only where an arm reasons).
func (p *histogramPanel) shown(data *runData) int { return p.presses % data.histShown() }

func (p *histogramPanel) title(data *runData) string {
	return histogramTitle(histMetrics[p.shown(data)].label)
}

func (p *histogramPanel) view(data *runData, w, h int) string {
	var series []histSeries
	for _, a := range data.arms {
		series = append(series, histSeries{name: a.name, color: a.index, dist: &a.dists[p.shown(data)]})
	}
	return renderHistogram(series, w, h)
}

// histSeries is one arm (or session) drawn in a histogram.
type histSeries struct {
	name  string
	color int
	dist  *metrics.Distribution
}

const (
	medianGlyph = "│"
	p95Glyph    = "┆"
)

var eighths = []string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// histogramTitle names the metric and the marker glyphs.
func histogramTitle(metric string) string {
	return fmt.Sprintf("%s ms  %s p50 %s p95", metric, medianGlyph, p95Glyph)
}

// renderHistogram draws every series over the same bins, one band of rows
// per series with the axis under them, in exactly w×h cells. Bins span the
// smallest value to the largest p99 (beyond it, values pile into the last
// bin, marked ≥), so one outlier does not squash the rest into a column.
func renderHistogram(series []histSeries, w, h int) string {
	nameW, hasData := 0, false
	for _, s := range series {
		if s.dist.N() > 0 {
			nameW, hasData = max(nameW, cellWidth(s.name)), true
		}
	}
	if !hasData {
		return styleDim.Render("waiting for timed trials…")
	}
	nameW = min(nameW, w/4) // names are cut only when the bars would get less than ¾
	plotW := w - nameW - 1
	if plotW < 2 || h < 2 {
		return styleDim.Render("too small for the histogram")
	}
	names, dists := make([]string, len(series)), make([]*metrics.Distribution, len(series))
	for i, s := range series {
		names[i], dists[i] = s.name, s.dist
	}
	// Bins come from the data, shared by every series; a bin wider than a
	// column spans several. Columns place the median and p95 markers.
	hist := figure.NewHistogram(names, dists, plotW)
	bins := len(hist.Edges) - 1
	lo, hi := hist.Lo(), hist.Hi()
	columnEdges := metrics.EqualBins(lo, hi, plotW)
	rows := max(1, (h-1)/len(hist.Series))
	var lines []string
	for _, hs := range hist.Series {
		counts := hs.Counts
		peak := 0
		for _, c := range counts {
			peak = max(peak, c)
		}
		color := series[hs.Index].color
		medianCol, p95Col := figure.Bin(columnEdges, hs.Stats.Median), figure.Bin(columnEdges, hs.Stats.P95)
		style := armStyle(color)
		paints := [4]paint{paintPlain, armPaint(color), paintBold, paintDim}
		for r := 0; r < rows; r++ {
			var b strings.Builder
			if r == 0 {
				b.WriteString(style.Render(fit(hs.Name, nameW)) + " ")
			} else {
				b.WriteString(strings.Repeat(" ", nameW+1))
			}
			// Cells of one style are rendered as one run: styling each
			// cell alone was most of the panel's cost.
			var run strings.Builder
			runStyle := -1
			flush := func() {
				if run.Len() > 0 {
					b.WriteString(paints[runStyle].apply(run.String()))
					run.Reset()
				}
			}
			for col := range plotW {
				c := counts[col*bins/plotW]
				level := int(math.Round(float64(c) / float64(peak) * float64(rows*8)))
				fill := min(8, max(0, level-(rows-1-r)*8))
				glyph, kind := " ", cellPlain
				switch {
				case fill > 0:
					glyph, kind = eighths[fill], cellBar
				case col == medianCol:
					glyph, kind = medianGlyph, cellMedian
				case col == p95Col:
					glyph, kind = p95Glyph, cellP95
				}
				if kind != runStyle {
					flush()
					runStyle = kind
				}
				run.WriteString(glyph)
			}
			flush()
			lines = append(lines, b.String())
		}
	}
	loLabel, hiLabel := formatMs(lo), formatMs(hi)
	if hist.Overflow {
		hiLabel = "≥" + hiLabel
	}
	gap := max(1, plotW-cellWidth(loLabel)-cellWidth(hiLabel))
	lines = append(lines, strings.Repeat(" ", nameW+1)+styleDim.Render(loLabel+strings.Repeat(" ", gap)+hiLabel))
	// Rows that do not divide among the series go above the bars, so the
	// axis sits on the panel's floor rather than over a blank row.
	if spare := h - len(lines); spare > 0 {
		lines = append(make([]string, spare), lines...)
	}
	return strings.Join(lines, "\n")
}

// The kinds of histogram cell, each drawn in its own paint.
const (
	cellPlain = iota
	cellBar
	cellMedian
	cellP95
)

// formatMs gives a latency three significant figures wide.
func formatMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	// Below a millisecond, three figures (a built-in engine's 36 µs ITL
	// read 0.04 beside arms 17% apart).
	return fmt.Sprintf("%.*f", session.ThreeFigures(v), v)
}
