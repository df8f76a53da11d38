package htmlreport

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// Charts are sized for a 16:9 slide; the page scales them to its width.
const (
	chartW = 8 * vg.Inch
	chartH = 4.5 * vg.Inch
	// maxBins caps the histograms' bins, as a panel's columns cap the
	// dashboard's: the same rule, figure.NewHistogram, picks them.
	maxBins = 120
	// maxPoints caps the points of one curve: a 100k-trial session is
	// drawn from its summary, not from 100k SVG elements.
	maxPoints = 600
)

// column is one arm (or session#arm) as the charts draw it.
type column struct {
	label  string
	mark   figure.ArmMark
	values map[string][]float64 // counted values per metric, in run order
	// trials are every trial of the arm, warmup and degraded included,
	// in run order, for the timeline.
	trials []*session.Record
	tol    float64 // the convergence tolerance its run used
	// typical and slowest are the token arrivals of the trials with the
	// median and the largest ITL max; nil without a tokens file.
	typical, slowest *session.Arrivals
}

// newPlot is a plot with the report's look: a light grid, the legend in
// the top right corner.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// plainTicks are gonum's default ticks labelled without trailing zeros:
// a token index reads 25, not 25.00, and 0.5 keeps its one decimal.
type plainTicks struct{ plot.DefaultTicks }

func (t plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.DefaultTicks.Ticks(lo, hi)
	for i := range ticks {
		ticks[i].Label = trimZeros(ticks[i].Label)
	}
	return ticks
}

// trimZeros drops a decimal label's trailing zeros, and its point when
// nothing follows it; labels in exponent form are left as they are.
func trimZeros(label string) string {
	if !strings.Contains(label, ".") || strings.ContainsAny(label, "eE") {
		return label
	}
	return strings.TrimSuffix(strings.TrimRight(label, "0"), ".")
}

// legendRow is the share of a value axis that one legend row takes, a
// chart's height in the page: the axis is extended by the rows' band so
// that the legend sits above the data, never on it.
const legendRow = 0.06

// roomForLegend is the axis maximum that leaves a band for rows legend
// entries above top, on an axis from lo.
func roomForLegend(lo, top float64, rows int) float64 {
	share := legendRow*float64(rows) + 0.04
	return lo + (top-lo)/(1-share)
}

// clippedNote says, for an axis label, how many values lie past the axis
// and how far, drawn as triangles at its edge.
func clippedNote(c figure.Clipped, edge float64) string {
	trials := "trials"
	if c.N == 1 {
		trials = "trial"
	}
	return fmt.Sprintf(" · %d %s past %s, up to %s, drawn as triangles at the edge", c.N, trials, session.FormatValue(edge), session.FormatValue(c.Max))
}

// elements makes a chart's plotters and keeps the first error: a part
// that cannot be made (a point that is not a number) fails its chart,
// which the report then names among its caveats, instead of a nil part
// that panics when drawn. A failed part is an empty one, never drawn.
type elements struct{ err error }

func (e *elements) keep(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
}

func (e *elements) line(xys plotter.XYs) *plotter.Line {
	l, err := plotter.NewLine(xys)
	if e.keep(err); err != nil {
		return &plotter.Line{}
	}
	return l
}

func (e *elements) scatter(xys plotter.XYs) *plotter.Scatter {
	s, err := plotter.NewScatter(xys)
	if e.keep(err); err != nil {
		return &plotter.Scatter{}
	}
	return s
}

func (e *elements) polygon(xys plotter.XYs) *plotter.Polygon {
	poly, err := plotter.NewPolygon(xys)
	if e.keep(err); err != nil {
		return &plotter.Polygon{}
	}
	return poly
}

func lineStyle(m figure.ArmMark) draw.LineStyle {
	dashes := make([]vg.Length, len(m.Dash))
	for i, d := range m.Dash {
		dashes[i] = vg.Points(d)
	}
	return draw.LineStyle{Color: hexColor(m.Hex), Width: vg.Points(1.5), Dashes: dashes}
}

func hexColor(hex string) color.RGBA {
	var r, g, b uint8
	fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b)
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

var (
	failedRed  = color.RGBA{R: 190, A: 255}
	legendGray = color.Gray{Y: 60} // markers that mean the same for every arm
)

// legendGlyph is a legend entry's marker: a point drawn nowhere on the
// plot, only in the legend.
func (e *elements) legendGlyph(shape draw.GlyphDrawer, c color.Color, radius vg.Length) *plotter.Scatter {
	s := e.scatter(plotter.XYs{{}})
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: radius, Shape: shape}
	return s
}

func faded(c color.RGBA, alpha uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: alpha}
}

// histogramChart draws every column's share of trials per bin over the
// shared bins, as outlines so that overlaps stay readable, with each
// column's p50, p95 and p99 as glyphs above the bars.
func histogramChart(metric session.Metric, cols []column) (*plot.Plot, error) {
	var e elements
	names := make([]string, len(cols))
	dists := make([]*metrics.Distribution, len(cols))
	for i, c := range cols {
		names[i], dists[i] = c.label, &metrics.Distribution{}
		for _, v := range c.values[metric.Name] {
			dists[i].Add(v)
		}
	}
	hist := figure.NewHistogram(names, dists, maxBins)
	p := newPlot(metric.Label+": distribution", unitLabel(metric), "share of trials (%)")
	if len(hist.Series) == 0 {
		return p, nil
	}
	peak := 0.0
	for _, s := range hist.Series {
		xys := make(plotter.XYs, 0, len(s.Counts)+1)
		for b, c := range s.Counts {
			share := 100 * float64(c) / float64(s.Stats.N)
			peak = math.Max(peak, share)
			xys = append(xys, plotter.XY{X: hist.Edges[b], Y: share})
		}
		xys = append(xys, plotter.XY{X: hist.Hi(), Y: xys[len(xys)-1].Y})
		line := e.line(xys)
		line.StepStyle = plotter.PostStep
		line.LineStyle = lineStyle(cols[s.Index].mark)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	// One row of marks per column above the tallest bar.
	marks := []struct {
		name  string
		shape draw.GlyphDrawer
		value func(metrics.Stats) float64
	}{
		{"p50", draw.CircleGlyph{}, func(st metrics.Stats) float64 { return st.P50 }},
		{"p95", draw.TriangleGlyph{}, func(st metrics.Stats) float64 { return st.P95 }},
		{"p99", draw.CrossGlyph{}, func(st metrics.Stats) float64 { return st.P99 }},
	}
	for k, s := range hist.Series {
		y := peak * (1.08 + 0.07*float64(k))
		for _, m := range marks {
			sc := e.scatter(plotter.XYs{{X: math.Min(m.value(s.Stats), hist.Hi()), Y: y}})
			sc.GlyphStyle = draw.GlyphStyle{Color: hexColor(cols[s.Index].mark.Hex), Radius: vg.Points(3.5), Shape: m.shape}
			p.Add(sc)
		}
	}
	// The caption says what the glyphs mean; the legend (arms only) keeps
	// the top band, above the marks, and the marks at the ends of the
	// bins keep their whole glyph.
	p.Y.Max = roomForLegend(0, peak*(1.08+0.07*float64(len(hist.Series))), len(hist.Series))
	pad := 0.02 * (hist.Hi() - hist.Lo())
	p.X.Min, p.X.Max = hist.Lo()-pad, hist.Hi()+pad
	if hist.Overflow {
		p.X.Label.Text += fmt.Sprintf(" (values past %s pile into the last bin)", session.FormatValue(hist.Hi()))
	}
	return p, e.err
}

// ecdfChart draws each column's empirical CDF from at most maxPoints of
// its quantiles.
func ecdfChart(metric session.Metric, cols []column) (*plot.Plot, error) {
	var e elements
	p := newPlot(metric.Label+": share of trials at or below", unitLabel(metric), "share of trials (%)")
	var sorted [][]float64
	for _, c := range cols {
		values := slices.Clone(c.values[metric.Name])
		slices.Sort(values)
		sorted = append(sorted, values)
	}
	// A far outlier would squeeze every curve against the left edge: the
	// axis ends at AxisTop, and the values past it are triangles at the
	// right edge, at their share, counted in the label.
	top := figure.AxisTop(sorted...)
	clipped := figure.ClippedAbove(top, sorted...)
	rows := 0
	for i, c := range cols {
		values := sorted[i]
		n := len(values)
		if n == 0 {
			continue
		}
		steps := min(n, maxPoints)
		xys := make(plotter.XYs, 0, steps)
		for i := range steps {
			k := (i + 1) * n / steps // the k smallest values
			xys = append(xys, plotter.XY{X: values[k-1], Y: 100 * float64(k) / float64(n)})
		}
		line := e.line(xys)
		line.StepStyle = plotter.PostStep
		line.LineStyle = lineStyle(c.mark)
		p.Add(line)
		p.Legend.Add(c.label, line)
		rows++
		if clipped.N > 0 {
			var past plotter.XYs
			for k := n - 1; k >= 0 && values[k] > top; k-- {
				past = append(past, plotter.XY{X: top, Y: 100 * float64(k+1) / float64(n)})
			}
			if len(past) > 0 {
				sc := e.scatter(past)
				sc.GlyphStyle = draw.GlyphStyle{Color: hexColor(c.mark.Hex), Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}
				p.Add(sc)
			}
		}
	}
	if clipped.N > 0 {
		p.X.Max = top
		p.X.Label.Text += clippedNote(clipped, top)
	}
	// The legend's band is above 100%; the ticks stop at 100.
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, 100, rows)
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25}, {Value: 50, Label: "50"}, {Value: 75}, {Value: 100, Label: "100"}})
	return p, e.err
}

// convergenceChart draws each column's running mean e2e with its 95%
// confidence band, and marks where it converged.
func convergenceChart(cols []column) (*plot.Plot, error) {
	var e elements
	p := newPlot("e2e: running mean with its 95% confidence band, and running median", "timed trials", "e2e (ms)")
	converged := false
	yLo, yHi := math.Inf(1), math.Inf(-1)
	for _, c := range cols {
		values := c.values["e2e_ms"]
		if len(values) < 2 {
			continue
		}
		var series metrics.Series
		var running metrics.RunningMedian
		step := max(1, len(values)/maxPoints)
		// The first few trials' band is wide enough to flatten the rest:
		// the axis spans the band from the tenth trial on.
		settled := min(10, len(values))
		var mean, median, upper, lower plotter.XYs
		for i, v := range values {
			pt, med := series.Add(v), running.Add(v)
			if (i+1)%step != 0 && i != len(values)-1 {
				continue
			}
			mean = append(mean, plotter.XY{X: float64(pt.N), Y: pt.Mean})
			median = append(median, plotter.XY{X: float64(pt.N), Y: med})
			if pt.N >= settled && !math.IsNaN(pt.HalfWidth) {
				yLo, yHi = math.Min(yLo, pt.Mean-pt.HalfWidth), math.Max(yHi, pt.Mean+pt.HalfWidth)
			}
			if !math.IsNaN(pt.HalfWidth) {
				upper = append(upper, plotter.XY{X: float64(pt.N), Y: pt.Mean + pt.HalfWidth})
				lower = append(lower, plotter.XY{X: float64(pt.N), Y: pt.Mean - pt.HalfWidth})
			}
		}
		if len(upper) > 1 {
			slices.Reverse(lower)
			band := e.polygon(append(upper, lower...))
			band.Color = faded(hexColor(c.mark.Hex), 40)
			band.LineStyle.Width = 0
			p.Add(band)
		}
		line := e.line(mean)
		line.LineStyle = lineStyle(c.mark)
		p.Add(line)
		dots := e.scatter(median)
		dots.GlyphStyle = draw.GlyphStyle{Color: hexColor(c.mark.Hex), Radius: vg.Points(0.9), Shape: draw.CircleGlyph{}}
		p.Add(dots)
		// Where the trials-needed estimate lands: the n at which this
		// arm's CV gives a ±tol interval of the mean, marked when it is
		// near enough to see and said in the legend either way.
		need := metrics.TrialsForMean(series.CV(), c.tol)
		p.Legend.Add(fmt.Sprintf("%s (±%g%% needs %d trials)", c.label, c.tol*100, need), line)
		if n := len(values); need > 0 && need <= 3*n {
			x := float64(need)
			mark := e.line(plotter.XYs{{X: x, Y: series.Mean() * (1 - 3*c.tol)}, {X: x, Y: series.Mean() * (1 + 3*c.tol)}})
			mark.LineStyle = draw.LineStyle{Color: hexColor(c.mark.Hex), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}
			p.Add(mark)
		}
		if at := metrics.ConvergedAt(values, c.tol); at > 0 {
			var w metrics.Welford
			for _, v := range values[:at] {
				w.Add(v)
			}
			sc := e.scatter(plotter.XYs{{X: float64(at), Y: w.Mean()}})
			sc.GlyphStyle = draw.GlyphStyle{Color: hexColor(c.mark.Hex), Radius: vg.Points(5), Shape: draw.PyramidGlyph{}}
			p.Add(sc)
			converged = true
		}
	}
	if len(cols) > 0 {
		p.Legend.Add("running median (dots)", e.legendGlyph(draw.CircleGlyph{}, legendGray, vg.Points(1.5)))
	}
	if converged {
		p.Legend.Add(fmt.Sprintf("converged (stays within ±%g%%)", cols[0].tol*100), e.legendGlyph(draw.PyramidGlyph{}, legendGray, vg.Points(4)))
	}
	if yHi > yLo {
		pad := (yHi - yLo) * 0.35 // room for the legend
		p.Y.Min, p.Y.Max = yLo-pad/4, yHi+pad
	}
	return p, e.err
}

// timelineChart draws every trial's e2e against the time it started, so
// warmup, drift and outliers show at a glance: warmup trials as rings,
// timed ones as dots, failed ones as crosses at the top. A column with
// more trials than maxPoints is drawn as each time slice's median and
// maximum.
func timelineChart(cols []column) (*plot.Plot, error) {
	var e elements
	p := newPlot("e2e of every trial, in run order", "seconds since the first trial", "e2e (ms)")
	var origin int64 = math.MaxInt64
	var sorted [][]float64
	for _, c := range cols {
		var values []float64
		for _, r := range c.trials {
			origin = min(origin, r.StartedAt.UnixNano())
			if !math.IsNaN(r.E2EMs) && r.Status == session.StatusOK {
				values = append(values, r.E2EMs)
			}
		}
		slices.Sort(values)
		sorted = append(sorted, values)
	}
	// A far outlier would flatten every other trial into a line: the axis
	// ends at AxisTop and the trials above it are triangles on its top
	// line, counted in the legend; failed trials, which have no e2e, are
	// crosses on it too.
	top := figure.AxisTop(sorted...)
	if math.IsNaN(top) {
		top = 1
	}
	clipped := figure.ClippedAbove(top, sorted...)
	seconds := func(r *session.Record) float64 { return float64(r.StartedAt.UnixNano()-origin) / 1e9 }
	var warmupShown, failedShown bool
	rows := 0
	for _, c := range cols {
		var warm, timed, failed, past plotter.XYs
		for _, r := range c.trials {
			switch {
			case r.Status != session.StatusOK:
				failed = append(failed, plotter.XY{X: seconds(r), Y: top})
			case r.E2EMs > top:
				past = append(past, plotter.XY{X: seconds(r), Y: top})
			case r.Phase == session.PhaseWarmup:
				warm = append(warm, plotter.XY{X: seconds(r), Y: r.E2EMs})
			default:
				timed = append(timed, plotter.XY{X: seconds(r), Y: r.E2EMs})
			}
		}
		col := hexColor(c.mark.Hex)
		if len(past) > 0 {
			sc := e.scatter(past)
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.TriangleGlyph{}}
			p.Add(sc)
		}
		rows++
		if len(timed) > maxPoints {
			median, peak := sliceSummary(timed, maxPoints/4)
			line := e.line(median)
			line.LineStyle = lineStyle(c.mark)
			p.Add(line)
			p.Legend.Add(c.label+" (median per time slice)", line)
			sc := e.scatter(peak)
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		} else if len(timed) > 0 {
			sc := e.scatter(timed)
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
			p.Add(sc)
			p.Legend.Add(c.label, sc)
		}
		if len(warm) > 0 {
			sc := e.scatter(warm)
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: draw.RingGlyph{}}
			p.Add(sc)
			warmupShown = true
		}
		if len(failed) > 0 {
			sc := e.scatter(failed)
			sc.GlyphStyle = draw.GlyphStyle{Color: failedRed, Radius: vg.Points(3), Shape: draw.CrossGlyph{}}
			p.Add(sc)
			failedShown = true
		}
	}
	if warmupShown {
		p.Legend.Add("warmup (set aside)", e.legendGlyph(draw.RingGlyph{}, legendGray, vg.Points(3)))
		rows++
	}
	if failedShown {
		p.Legend.Add("failed or degraded", e.legendGlyph(draw.CrossGlyph{}, failedRed, vg.Points(3)))
		rows++
	}
	if clipped.N > 0 {
		p.Legend.Add(strings.TrimPrefix(clippedNote(clipped, top), " · "), e.legendGlyph(draw.TriangleGlyph{}, legendGray, vg.Points(3.5)))
		rows++
	}
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, top, rows)
	return p, e.err
}

// gapsChart draws the gaps between tokens inside one trial per arm, the
// typical one (pick typical) or the slowest, against the tokens seen.
func gapsChart(cols []column, typical bool) (*plot.Plot, error) {
	var e elements
	title := "gaps between tokens in each arm's slowest trial (largest ITL max)"
	if typical {
		title = "gaps between tokens in each arm's typical trial (median ITL max)"
	}
	p := newPlot(title, "tokens generated", "gap (ms)")
	rows, top := 0, 0.0
	for _, c := range cols {
		a := c.slowest
		if typical {
			a = c.typical
		}
		if a == nil {
			continue
		}
		tokens, gaps := a.Gaps()
		if len(gaps) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(gaps))
		for i := range gaps {
			xys[i] = plotter.XY{X: float64(tokens[i]), Y: gaps[i]}
		}
		line := e.line(xys)
		line.LineStyle = lineStyle(c.mark)
		p.Add(line)
		p.Legend.Add(c.label, line)
		rows++
		top = math.Max(top, slices.Max(gaps))
	}
	p.Y.Min = 0
	if rows > 0 {
		p.Y.Max = roomForLegend(0, top, rows)
	}
	return p, e.err
}

// maxWindows is the most trials the power chart marks one by one.
const maxWindows = 2000

// powerChart draws each device's power over the run with its idle
// baseline dashed, and under the curves a strip of the trials' windows
// (timed dark, warmup light), on the sampler's clock.
func powerChart(title string, traces []deviceTrace, trials []*session.Record, origin time.Time) (*plot.Plot, error) {
	var e elements
	p := newPlot(title, "seconds since the sampler started", "power (W)")
	top, rows := 0.0, 0
	for i, t := range traces {
		if len(t.Watts) == 0 {
			continue
		}
		xys := make(plotter.XYs, 0, min(len(t.Watts), maxPoints))
		step := max(1, len(t.Watts)/maxPoints)
		for j := 0; j < len(t.Watts); j += step {
			xys = append(xys, plotter.XY{X: t.At[j].Seconds(), Y: t.Watts[j]})
			top = math.Max(top, t.Watts[j])
		}
		mark := figure.Arm(i)
		line := e.line(xys)
		line.LineStyle = lineStyle(mark)
		p.Add(line)
		p.Legend.Add(t.name, line)
		rows++
		if !math.IsNaN(t.baseline) {
			base := e.line(plotter.XYs{{X: xys[0].X, Y: t.baseline}, {X: xys[len(xys)-1].X, Y: t.baseline}})
			base.LineStyle = draw.LineStyle{Color: hexColor(mark.Hex), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(4)}}
			p.Add(base)
			p.Legend.Add(fmt.Sprintf("%s idle %.0f W", t.name, t.baseline), base)
			rows++
		}
	}
	trialWindows(p, &e, trials, origin, top)
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, top, rows)
	return p, e.err
}

// trialWindows marks under a chart's curves (a strip 4% of top high)
// every trial's window on a clock whose zero is origin: timed dark,
// warmup light; none past maxWindows trials.
func trialWindows(p *plot.Plot, e *elements, trials []*session.Record, origin time.Time, top float64) {
	if len(trials) > maxWindows {
		return
	}
	strip := top * 0.04
	for _, r := range trials {
		from := r.StartedAt.Sub(origin).Seconds()
		to := from + r.E2EMs/1000
		if math.IsNaN(to) {
			continue
		}
		box := e.polygon(plotter.XYs{{X: from, Y: 0}, {X: to, Y: 0}, {X: to, Y: strip}, {X: from, Y: strip}})
		box.Color = color.Gray{Y: 90}
		if r.Phase == session.PhaseWarmup {
			box.Color = color.Gray{Y: 190}
		}
		box.LineStyle.Width = 0
		p.Add(box)
	}
}

// serverSeries is one common series of one server over a session, named
// for the legend.
type serverSeries struct {
	name string
	xys  plotter.XYs
}

// serverChart draws servers' common series against the scraper's clock
// (scaled by scale: 100 for a share as a percentage), with the trials'
// windows under them.
func serverChart(title, yLabel string, series []serverSeries, scale float64, trials []*session.Record, origin time.Time) (*plot.Plot, error) {
	var e elements
	p := newPlot(title, "seconds since the scraper started", yLabel)
	top := 0.0
	for i, s := range series {
		xys := make(plotter.XYs, 0, min(len(s.xys), maxPoints))
		step := max(1, len(s.xys)/maxPoints)
		for j := 0; j < len(s.xys); j += step {
			xys = append(xys, plotter.XY{X: s.xys[j].X, Y: s.xys[j].Y * scale})
			top = math.Max(top, s.xys[j].Y*scale)
		}
		line := e.line(xys)
		line.LineStyle = lineStyle(figure.Arm(i))
		p.Add(line)
		p.Legend.Add(s.name, line)
	}
	top = math.Max(top, 1)
	trialWindows(p, &e, trials, origin, top)
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, top, len(series))
	return p, e.err
}

// deviceTrace is one device's power over a session, with its idle
// baseline (NaN when none was measured).
type deviceTrace struct {
	*figure.PowerTrace
	name     string
	baseline float64
}

// sliceSummary cuts points (in time order) into count slices of equal
// time and gives each slice's median and its slowest point.
func sliceSummary(points plotter.XYs, count int) (median, peak plotter.XYs) {
	lo, hi := points[0].X, points[len(points)-1].X
	width := (hi - lo) / float64(count)
	var bucket []float64
	var slowest plotter.XY
	slice := -1
	flush := func() {
		if len(bucket) == 0 {
			return
		}
		slices.Sort(bucket)
		median = append(median, plotter.XY{X: lo + (float64(slice)+0.5)*width, Y: metrics.PercentileSorted(bucket, 0.5)})
		peak = append(peak, slowest)
		bucket, slowest = bucket[:0], plotter.XY{}
	}
	for _, pt := range points {
		// The slice by division, not by stepping an edge along: a step
		// too small for the edge's float to move would never end.
		at := 0
		if width > 0 {
			at = min(count-1, int((pt.X-lo)/width))
		}
		if at != slice {
			flush()
			slice = at
		}
		bucket = append(bucket, pt.Y)
		if pt.Y > slowest.Y {
			slowest = pt
		}
	}
	flush()
	return median, peak
}

func unitLabel(m session.Metric) string {
	if strings.HasSuffix(m.Name, "_ms") {
		return m.Label + " (ms)"
	}
	return m.Label
}

// chartMargin keeps a chart's title, its outermost glyphs and its legend
// off the image's edge, which cut them.
const chartMargin = 6 * vg.Millimeter

// drawChart draws p on a white canvas inside chartMargin.
func drawChart(p *plot.Plot, c vg.CanvasSizer) {
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, chartMargin, -chartMargin, chartMargin, -chartMargin))
}

// writeChart renders p as a standalone svg or png file's bytes.
func writeChart(p *plot.Plot, ext string, w io.Writer) error {
	var c vg.CanvasWriterTo
	switch ext {
	case "svg":
		c = vgsvg.New(chartW, chartH)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(chartW, chartH)}
	default:
		return fmt.Errorf("unknown chart format %q; use svg or png", ext)
	}
	drawChart(p, c)
	_, err := c.WriteTo(w)
	return err
}

// svgOf renders a chart as an SVG element for inlining in the page: the
// XML prologue a standalone file needs is dropped.
func svgOf(p *plot.Plot) (string, error) {
	var b bytes.Buffer
	if err := writeChart(p, "svg", &b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return s, nil
}
