package htmlreport

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// namedSweep is one sweep as the load charts draw it: the session it came
// from where the report holds several.
type namedSweep struct {
	label string
	session.Sweep
}

// addLoad adds a session's load results: a together study's verdict, or
// each sweep's knee and goodput in words and, over every sweep of the
// report, its charts against the number of streams.
func (r *Report) addLoad(sessions []*session.Session) {
	lead := &Lead{Heading: "Load", ID: "load"}
	defer func() {
		if len(lead.Lines) > 0 || len(lead.Tables) > 0 {
			r.Lead = lead
		}
	}()
	var sweeps []namedSweep
	var rates []namedRates
	var slo *session.SLOInfo
	for _, s := range sessions {
		res, err := s.LoadResults()
		stem := session.FileStem(s.Path)
		if err != nil {
			r.Caveats = append(r.Caveats, fmt.Sprintf("%s: no load results: %v", stem, err))
		}
		if res == nil {
			continue
		}
		prefix := ""
		if len(sessions) > 1 {
			prefix = stem + ": "
		}
		for _, line := range res.Words() {
			lead.Lines = append(lead.Lines, prefix+line)
		}
		for _, sw := range res.Rates {
			label := sw.Base
			if len(sessions) > 1 {
				label = stem + " " + sw.Base
			}
			lead.Tables = append(lead.Tables, Table{Table: sw.Table(), Caption: fmt.Sprintf("rates of %s: %s", label, session.RateTableCaption)})
			rates = append(rates, namedRates{label, sw})
		}
		for _, sw := range res.Sweeps {
			label := sw.Base
			if len(sessions) > 1 {
				label = stem + " " + sw.Base
			}
			if len(sw.Levels) >= 2 { // one level is a row of the table, no curve
				sweeps = append(sweeps, namedSweep{label, sw})
			}
			lead.Tables = append(lead.Tables, Table{Table: sw.Table(),
				Caption: fmt.Sprintf("sweep of %s: tok/s and req/s over the steady windows, p95 over the steady requests", label)})
		}
		if slo == nil {
			slo = res.SLO
		}
	}
	r.addRateCharts(rates, slo)
	if len(sweeps) == 0 {
		return
	}
	level1 := fmt.Sprintf("knee bound: %g× level 1", session.KneeLatency)
	p, err := levelChart("Aggregate output tok/s by streams in flight", "tok/s", sweeps, func(l session.Level) float64 { return l.TokensPerS }, nil)
	r.addChart(Chart{Name: "throughput-vs-concurrency",
		Caption: fmt.Sprintf("Output tokens per second over each level's steady windows (every stream busy; ramp-up and drain left out). A ring marks the knee: where throughput stopped rising by %.0f%% or p95 latency passed %g× the first level's.", 100*session.KneeGain, session.KneeLatency)}, p, err)
	p, err = levelChart("p95 time to first token by streams in flight", "p95 TTFT (ms)", sweeps, func(l session.Level) float64 { return l.TTFTP95 },
		append(kneeLines(sweeps, level1, func(l session.Level) float64 { return l.TTFTP95 }), ttftSLOLine(slo)...))
	r.addChart(Chart{Name: "ttft-p95-vs-concurrency",
		Caption: "p95 TTFT over each level's steady requests; the thin line in each sweep's style is its knee bound, and with an SLO the grey dashed line is its TTFT bound."}, p, err)
	p, err = levelChart("p95 gap between tokens by streams in flight", "p95 ITL (ms)", sweeps, func(l session.Level) float64 { return l.ITLP95 },
		kneeLines(sweeps, level1, func(l session.Level) float64 { return l.ITLP95 }))
	r.addChart(Chart{Name: "itl-p95-vs-concurrency",
		Caption: "p95 of every inter-token gap of each level's steady requests; the thin line in each sweep's style is its knee bound. (An SLO's ITL bound is on each request's p99 gap, so it is judged in goodput, not drawn here.)"}, p, err)
	if slo != nil {
		p, err = levelChart("Goodput by streams in flight", "requests within the SLO (%)", sweeps,
			func(l session.Level) float64 { return 100 * l.Goodput }, []refLine{{label: fmt.Sprintf("target %.0f%%", 100*slo.Goodput), y: 100 * slo.Goodput, dashed: true, sweep: -1}})
		if err == nil {
			// A share tops out at 100%, and falls as streams rise: the
			// top right is free for the legend.
			p.Y.Max, p.Legend.Left = 105, false
		}
		r.addChart(Chart{Name: "goodput-vs-concurrency",
			Caption: "The share of each level's steady requests (failed ones included) that met every SLO bound; the dashed line is the target the highest good level is judged by."}, p, err)
	}
}

// refLine is a horizontal reference on a level chart.
type refLine struct {
	label  string
	y      float64
	dashed bool // an SLO's bound; dotted otherwise
	// sweep, for a bound of one sweep's own (its knee's), is its index:
	// the line is drawn thin in that sweep's colour and dash pattern, so
	// the pattern, not the colour alone, ties it to its sweep.
	sweep int
}

// kneeLines are KneeLatency times each sweep's first level of value.
func kneeLines(sweeps []namedSweep, label string, value func(session.Level) float64) []refLine {
	var lines []refLine
	for i, sw := range sweeps {
		if y := session.KneeLatency * value(sw.Levels[0]); y > 0 && !math.IsNaN(y) {
			lines = append(lines, refLine{label: label, y: y, sweep: i})
		}
	}
	return lines
}

// ttftSLOLine is the SLO's TTFT bound, where it has one. (Its ITL bound
// is on each request's p99 gap, not the p95 of all gaps a chart shows.)
func ttftSLOLine(slo *session.SLOInfo) []refLine {
	if slo == nil || slo.TTFTMs == 0 {
		return nil
	}
	return []refLine{{label: fmt.Sprintf("SLO TTFT ≤ %g ms", slo.TTFTMs), y: slo.TTFTMs, dashed: true, sweep: -1}}
}

// levelChart draws value against the number of streams for every sweep,
// on a log2 axis with a tick at each level run, the knee ringed.
func levelChart(title, yLabel string, sweeps []namedSweep, value func(session.Level) float64, refs []refLine) (*plot.Plot, error) {
	var e elements
	p := newPlot(title, "streams in flight (concurrency)", yLabel)
	p.Legend.Left = true // values rise to the right: the top left is free
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	lo, hi, yHi := math.Inf(1), math.Inf(-1), 0.0
	knee, rows := false, 0
	for i, sw := range sweeps {
		mark := figure.Arm(i)
		var pts plotter.XYs
		for _, l := range sw.Levels {
			x, y := float64(l.Concurrency), value(l)
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == x }) {
				ticks = append(ticks, plot.Tick{Value: x, Label: strconv.Itoa(l.Concurrency)})
			}
			lo, hi = math.Min(lo, x), math.Max(hi, x)
			if math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: x, Y: y})
			yHi = math.Max(yHi, y)
			if l.Concurrency == sw.Knee {
				ring := e.scatter(plotter.XYs{{X: x, Y: y}})
				ring.GlyphStyle = draw.GlyphStyle{Color: hexColor(mark.Hex), Radius: vg.Points(7), Shape: draw.RingGlyph{}}
				p.Add(ring)
				knee = true
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points := e.line(pts), e.scatter(pts)
		line.LineStyle = lineStyle(mark)
		points.GlyphStyle = draw.GlyphStyle{Color: hexColor(mark.Hex), Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		p.Add(line, points)
		p.Legend.Add(sw.label, line, points)
		rows++
	}
	inLegend := map[string]bool{}
	for _, ref := range refs {
		l := e.line(plotter.XYs{{X: lo, Y: ref.y}, {X: hi, Y: ref.y}})
		l.LineStyle = draw.LineStyle{Color: legendGray, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(3)}}
		if ref.dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		}
		legend := l
		if ref.sweep >= 0 { // one entry for every sweep's bound: a thin line in the sweep's own style
			own := e.line(l.XYs)
			own.LineStyle = lineStyle(figure.Arm(ref.sweep))
			own.LineStyle.Width = vg.Points(0.6)
			l = own
			legend.LineStyle.Width = vg.Points(0.6)
			legend.LineStyle.Dashes = nil
		}
		p.Add(l)
		if !inLegend[ref.label] {
			label := ref.label
			if ref.sweep >= 0 && len(sweeps) > 1 {
				label += " (thin, in each sweep's line style)"
			}
			p.Legend.Add(label, legend)
			inLegend[ref.label] = true
			rows++
		}
		yHi = math.Max(yHi, ref.y)
	}
	if knee {
		p.Legend.Add("knee", e.legendGlyph(draw.RingGlyph{}, legendGray, vg.Points(5)))
		rows++
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if lo < hi {
		p.X.Min, p.X.Max = lo/1.15, hi*1.15 // the end levels' glyphs clear of the frame
	} else if lo > 0 {
		p.X.Min, p.X.Max = lo/2, lo*2
	}
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, yHi, rows) // from zero
	return p, e.err
}

// namedRates is one open loop's rates as the rate charts draw them.
type namedRates struct {
	label string
	session.RateSweep
}

// addRateCharts draws, over every open loop of the report, the rate
// achieved against the rate offered (the diagonal is keeping up), and p95
// TTFT and e2e against it, from the send and from the due time.
func (r *Report) addRateCharts(rates []namedRates, slo *session.SLOInfo) {
	if len(rates) == 0 {
		return
	}
	var ttftBound, e2eBound float64
	if slo != nil {
		ttftBound, e2eBound = slo.TTFTMs, slo.E2EMs
	}
	p, err := rateChart("Requests per second achieved against offered", "achieved req/s", rates, true, 0,
		rateSeries{"", func(l session.RateLevel) float64 { return l.Achieved }, false})
	r.addChart(Chart{Name: "achieved-vs-offered",
		Caption: "Each rate's ok requests per second from each block's first end to its last, against the rate offered; on the dotted diagonal the server kept up, below it it fell behind."}, p, err)
	p, err = rateChart("p95 time to first token by offered rate", "p95 TTFT (ms)", rates, false, ttftBound,
		rateSeries{"once sent", func(l session.RateLevel) float64 { return l.TTFTP95 }, false},
		rateSeries{"from the due time", func(l session.RateLevel) float64 { return l.TTFTDueP95 }, true})
	r.addChart(Chart{Name: "ttft-p95-vs-rate",
		Caption: "p95 TTFT at each rate once a request was sent (what a server reports) and from its due time (what a user arriving on schedule waited: the queue, then the service); with an SLO the grey dashed line is its TTFT bound."}, p, err)
	p, err = rateChart("p95 end-to-end latency by offered rate", "p95 e2e (ms)", rates, false, e2eBound,
		rateSeries{"once sent", func(l session.RateLevel) float64 { return l.E2EP95 }, false},
		rateSeries{"from the due time", func(l session.RateLevel) float64 { return l.E2EDueP95 }, true})
	r.addChart(Chart{Name: "e2e-p95-vs-rate",
		Caption: "p95 e2e at each rate once sent and from the due time; with an SLO the grey dashed line is its e2e bound."}, p, err)
}

// rateSeries is one line of a rate chart: its name after the sweep's, its
// value per level, and whether it is drawn dashed (the due-time view).
type rateSeries struct {
	name   string
	value  func(session.RateLevel) float64
	dashed bool
}

// rateChart draws each series of every open loop against the offered
// rate, on a log2 axis with a tick at each rate run; with diagonal, the
// line where achieved equals offered, and with a bound over 0 an SLO's.
func rateChart(title, yLabel string, rates []namedRates, diagonal bool, bound float64, series ...rateSeries) (*plot.Plot, error) {
	var e elements
	p := newPlot(title, "offered requests per second (log scale)", yLabel)
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	lo, hi, yHi := math.Inf(1), math.Inf(-1), 0.0
	rows := 0
	for i, rs := range rates {
		mark := figure.Arm(i)
		for _, sr := range series {
			var pts plotter.XYs
			for _, lv := range rs.Levels {
				x, y := lv.Offered, sr.value(lv)
				if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == x }) {
					ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
				}
				lo, hi = math.Min(lo, x), math.Max(hi, x)
				if math.IsNaN(y) || math.IsInf(y, 0) {
					continue
				}
				pts = append(pts, plotter.XY{X: x, Y: y})
				yHi = math.Max(yHi, y)
			}
			if len(pts) == 0 {
				continue
			}
			line, points := e.line(pts), e.scatter(pts)
			line.LineStyle = lineStyle(mark)
			shape := draw.GlyphDrawer(draw.CircleGlyph{})
			if sr.dashed {
				line.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				shape = draw.TriangleGlyph{}
			}
			points.GlyphStyle = draw.GlyphStyle{Color: hexColor(mark.Hex), Radius: vg.Points(2.5), Shape: shape}
			p.Add(line, points)
			label := rs.label
			if sr.name != "" {
				label += ", " + sr.name
			}
			p.Legend.Add(label, line, points)
			rows++
		}
	}
	if diagonal && hi >= lo {
		d := e.line(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
		d.LineStyle = draw.LineStyle{Color: legendGray, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(3)}}
		p.Add(d)
		p.Legend.Add("achieved = offered", d)
		rows++
		yHi = math.Max(yHi, hi)
	}
	if bound > 0 && hi >= lo {
		b := e.line(plotter.XYs{{X: lo, Y: bound}, {X: hi, Y: bound}})
		b.LineStyle = draw.LineStyle{Color: legendGray, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(6), vg.Points(4)}}
		p.Add(b)
		p.Legend.Add(fmt.Sprintf("SLO bound %g ms", bound), b)
		rows++
		yHi = math.Max(yHi, bound)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if lo < hi {
		p.X.Min, p.X.Max = lo/1.15, hi*1.15 // the end levels' glyphs clear of the frame
	} else if lo > 0 {
		p.X.Min, p.X.Max = lo/2, lo*2
	}
	p.Y.Min, p.Y.Max = 0, roomForLegend(0, yHi, rows)
	return p, e.err
}
