package htmlreport

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// BuildGrid lays out a grid's comparison: its cells ranked, each axis
// value's geometric mean, the phase split, and a chart of every cell's
// median e2e with its interval.
func BuildGrid(cmp *grid.Comparison) *Report {
	r := &Report{Title: "tokentop grid: " + cmp.Name, Subtitle: "axes: " + strings.Join(cmp.Axes, " × "), Caveats: cmp.Caveats,
		Setups: []Setup{{Session: "grid " + cmp.Name, Rows: cmp.Setup}}}
	arms := map[string]bool{}
	for _, row := range cmp.Rows {
		arms[row.Arm] = true
	}
	cells := session.Table{Header: []string{"rank", "group", "cell", strings.Join(cmp.Axes, " · "), "n", "e2e median [95% CI] ms", "TTFT p50 [95% CI] ms", "TPOT p50 [95% CI] ms", "tok/s"}}
	interval := func(e metrics.Estimate) string {
		return fmt.Sprintf("%s [%s, %s]", session.FormatValue(e.Value), session.FormatValue(e.Lo), session.FormatValue(e.Hi))
	}
	for _, row := range cmp.Rows {
		rank := strconv.Itoa(row.Rank)
		if row.Rank == 0 {
			rank = "—"
		}
		label := row.Label
		if len(arms) > 1 { // the arm only where the cells have several
			label += " · " + row.Arm
		}
		cells.Rows = append(cells.Rows, []string{rank, orDash(row.Group), row.Cell, label, strconv.Itoa(row.N), interval(row.E2E), interval(row.TTFT), interval(row.TPOT),
			session.FormatValue(row.TokensPerS)})
	}
	means := session.Table{Header: []string{"axis", "value", "matched rows", "e2e geomean ms", "vs fastest", "tok/s geomean"}}
	for _, m := range cmp.Means {
		means.Rows = append(means.Rows, []string{m.Axis, m.Value, strconv.Itoa(m.Rows), session.FormatValue(m.E2E),
			fmt.Sprintf("%.2f×", m.E2ERatioVsFaster), session.FormatValue(m.TokensPerS)})
	}
	lead := &Lead{Heading: "Cells, ranked", ID: "cells", Tables: []Table{{Caption: "every cell's arm, fastest first", Class: "cells", Table: cells}}}
	if len(means.Rows) > 0 {
		lead.Tables = append(lead.Tables, Table{Caption: "each axis value across the other axes (matched rows only)", Table: means})
	}
	if len(cmp.Fits) > 0 {
		lead.Lines = append(lead.Lines, grid.PhaseSplitMethod+":")
	}
	for _, f := range cmp.Fits {
		lead.Lines = append(lead.Lines, fmt.Sprintf("%s, %s: %s (n %d)", f.Group, f.What, f.Words, f.N))
	}
	lead.Lines = append(lead.Lines, cmp.Method())
	r.Lead = lead
	p, err := cellsChart(cmp)
	r.addChart(Chart{Name: "cells",
		Caption: "Each cell's median e2e (dot) with its bootstrap 95% interval (bar), fastest at the top, on a log scale; the table above gives each cell's values. Overlapping bars do not mean two cells are alike, nor apart ones that they differ: the group letters in the table say what the tests found."}, p, err)
	return r
}

// cellsChart draws every row's median e2e and interval, one row per line,
// the fastest on top.
func cellsChart(cmp *grid.Comparison) (*plot.Plot, error) {
	var e elements
	p := newPlot("Median e2e by cell, with 95% intervals", "e2e (ms, log scale)", "")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var pts plotter.XYs
	var errs plotter.XErrors
	var ticks []plot.Tick
	xLo, xHi := math.Inf(1), math.Inf(-1)
	n := len(cmp.Rows)
	for i, row := range cmp.Rows {
		if !(row.E2E.Value > 0) {
			continue
		}
		y := float64(n - i) // the fastest on top
		pts = append(pts, plotter.XY{X: row.E2E.Value, Y: y})
		lo, hi := row.E2E.Value-row.E2E.Lo, row.E2E.Hi-row.E2E.Value
		if math.IsNaN(lo) || math.IsNaN(hi) {
			lo, hi = 0, 0
		}
		errs = append(errs, struct{ Low, High float64 }{lo, hi})
		// The cell's ID, rank and group: its values are in the table above,
		// and a long label would run into the plot in a browser's wider font.
		label := fmt.Sprintf("%s · rank %d %s", row.Cell, row.Rank, row.Group)
		if row.Rank == 0 {
			label = row.Cell + " · unranked"
		}
		ticks = append(ticks, plot.Tick{Value: y, Label: label})
		xLo, xHi = math.Min(xLo, row.E2E.Value-lo), math.Max(xHi, row.E2E.Value+hi)
	}
	if len(pts) == 0 {
		return p, nil
	}
	dots := e.scatter(pts)
	dots.GlyphStyle = draw.GlyphStyle{Color: hexColor(figure.Arm(0).Hex), Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	bars, err := plotter.NewXErrorBars(struct {
		plotter.XYs
		plotter.XErrors
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	bars.LineStyle.Color = hexColor(figure.Arm(0).Hex)
	p.Add(bars, dots)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	// An invisible tick mark keeps the labels clear of the axis: a
	// browser's font is wider than the one gonum measures, and with no gap
	// "rank 12" ran into the axis line.
	p.Y.Tick.Length, p.Y.Tick.LineStyle.Width = vg.Points(6), 0
	p.Y.Min, p.Y.Max = 0.5, float64(n)+0.5
	p.X.Min, p.X.Max = xLo/1.3, xHi*1.3 // the end dots clear of the frame
	return p, e.err
}
