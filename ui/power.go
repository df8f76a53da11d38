package ui

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/guptarohit/asciigraph"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// powerPanel shows each device's power over the run, the idle baseline as
// a line, and the trial timeline under it on the same time axis; without
// a power source it says why and draws the timeline alone.
type powerPanel struct{}

func (powerPanel) update(tea.KeyPressMsg) {}

func (powerPanel) title(data *runData) string {
	if len(data.servers) > 0 {
		return "server & power · ░ warmup █ timed ╳ degraded │ trial"
	}
	return "power · ░ warmup █ timed ╳ degraded │ trial"
}

func (powerPanel) view(data *runData, w, h int) string { return renderPower(data, w, h) }

func renderPower(data *runData, w, h int) string {
	switch {
	case data.measuring != "":
		return styleWarn.Render(data.measuring + "…")
	case data.started == nil:
		return styleDim.Render("probing…")
	}
	// The servers' own lines go first, on one line where the panel is
	// short; the power lines and the chart get what is left, the
	// timeline last of all.
	servers := serverLines(data.servers)
	if len(servers) > 1 && h-len(servers) < 3 {
		servers = []string{strings.Join(servers, " │ ")}
	}
	for i := range servers {
		servers[i] = fit(servers[i], w)
	}
	servers = servers[:min(len(servers), max(0, h-2))]
	h -= len(servers)
	power := data.started.Power
	origin := data.spansOrigin()
	if len(data.traces) == 0 || power.SamplerStart == nil {
		lines := []string{styleWarn.Render(power.GPU), styleDim.Render(power.CPU)}
		if len(data.spans) > 0 && h >= 2 {
			lines = append(lines[:min(len(lines), h-1)], timeline(data.spans, origin, data.spansEnd(origin), w))
		}
		return strings.Join(append(servers, lines...), "\n")
	}
	return strings.Join(append(servers, renderWatts(data, w, h, origin)), "\n")
}

// serverRows is how many rows the servers' lines add to the power panel
// of a body h rows high: one each, or one for all where the body is short
// and the stats table needs the rows.
func serverRows(servers []runner.ServerMetrics, h int) int {
	n := len(serverLines(servers))
	if h < 30 {
		return min(n, 1)
	}
	return n
}

// serverLines are one line per scraped server (the panel's title says
// these are servers): while the run goes on, the requests it runs and
// queues, its KV cache in use, its prefix cache's hits and the tokens it
// generates a second, over the last scrape; once it is done, the tokens a
// second and the hits over the run first, then the most it ran, queued
// and held; or why it has no metrics.
func serverLines(servers []runner.ServerMetrics) []string {
	var out []string
	for _, s := range servers {
		if s.Targets == nil {
			continue
		}
		name := strings.Join(s.Targets, ", ") + ": "
		if s.Unavailable != "" {
			out = append(out, styleDim.Render(name+"no metrics ("+s.Unavailable+")"))
			continue
		}
		var parts []string
		add := func(format string, v float64) {
			if !math.IsNaN(v) {
				parts = append(parts, fmt.Sprintf(format, v))
			}
		}
		if s.OverRun {
			// The run's figures lead, the gauges' peaks after: the last
			// scrape's queue is not what the run saw.
			rate := "%.0f tok/s over the run"
			if s.LowerBound {
				rate = "≥ " + rate
			}
			add(rate, s.TokensPerSecond)
			add("prefix hits %.0f%%", 100*s.PrefixHitRate)
			add("at most %.0f running", s.View.Running)
			add("%.0f waiting", s.View.Waiting)
			add("KV cache ≤ %.0f%%", 100*s.View.KVCache)
		} else {
			add("%.0f running", s.View.Running)
			add("%.0f waiting", s.View.Waiting)
			add("KV cache %.0f%%", 100*s.View.KVCache)
			add("prefix hits %.0f%%", 100*s.PrefixHitRate)
			add("%.0f tok/s", s.TokensPerSecond)
		}
		if len(parts) == 0 { // metrics, but none of the series tokentop knows (a GPU exporter's, say)
			out = append(out, styleDim.Render(name+"metrics read, none of the serving series tokentop knows"))
			continue
		}
		out = append(out, name+strings.Join(parts, " · "))
	}
	return out
}

// spansOrigin is time zero of the panel's axis: the sampler's start when
// there is one (so trials line up with the watts), else the first trial's.
func (d *runData) spansOrigin() time.Time {
	if d.started != nil && d.started.Power.SamplerStart != nil {
		return *d.started.Power.SamplerStart
	}
	if len(d.spans) > 0 {
		return d.spans[0].started
	}
	return time.Time{}
}

func (d *runData) spansEnd(origin time.Time) time.Duration {
	var end time.Duration
	if n := len(d.spans); n > 0 {
		end = d.spans[n-1].started.Sub(origin) + d.spans[n-1].length
	}
	for _, t := range d.traces {
		if n := len(t.At); n > 0 {
			end = max(end, t.At[n-1])
		}
	}
	return end
}

// renderWatts draws each device's latest watts and idle baseline (as
// many to a line as fit, so a chip's parts or several GPUs leave room for
// the chart), the latest trial's energy, the chart and the timeline.
func renderWatts(data *runData, w, h int, origin time.Time) string {
	var devices []string
	for _, t := range data.traces {
		line := t.device.Name
		if t.device.Source != "" {
			line += " (DCGM)" // a remote server's GPU, read through its exporter
		}
		if n := len(t.Watts); n > 0 {
			line += fmt.Sprintf("  %.0f W", t.Watts[n-1])
			if t.device.HasInstant {
				line += " instantaneous" // what the chart draws: NVML's averaged reading hides the peaks
			}
		}
		if !math.IsNaN(t.baseline) {
			line += fmt.Sprintf("  idle %.0f W", t.baseline)
		}
		devices = append(devices, line)
	}
	lines := pack(devices, "  ·  ", w)
	if r := data.lastEnergy; r != nil {
		lines = append(lines, fmt.Sprintf("last trial %s#%d: %s (%s)", r.Arm, r.Trial, session.TrialJPerToken(r, "J/token"), r.EnergyQuality))
	} else if len(data.spans) > 0 {
		lines = append(lines, styleDim.Render("no trial energy yet: trials too short for the counter, or no samples inside them"))
	}
	end := data.spansEnd(origin)
	const labelW = 9
	cols := w - labelW - 1
	graphRows := h - len(lines) - 1
	if cols < 4 || graphRows < 2 || end <= 0 {
		// No room for the chart: the timeline still has its row, as it
		// has without a power source.
		if end > 0 && len(data.spans) > 0 && h >= 2 {
			lines = append(lines[:min(len(lines), h-1)], timeline(data.spans, origin, end, w))
		}
		return strings.Join(lines, "\n")
	}
	var series [][]float64
	var colors []asciigraph.AnsiColor
	for i, t := range data.traces {
		if len(t.Watts) == 0 {
			continue
		}
		series = append(series, resample(t, end, cols))
		colors = append(colors, armGraphColor(i))
		if !math.IsNaN(t.baseline) {
			idle := make([]float64, cols)
			for c := range idle {
				idle[c] = t.baseline
			}
			series, colors = append(series, idle), append(colors, asciigraph.Default)
		}
	}
	if len(series) == 0 || !hasFinite(series[0]) {
		return strings.Join(lines, "\n")
	}
	plot := asciigraph.PlotMany(series, asciigraph.Height(graphRows-1), asciigraph.SeriesColors(colors...),
		asciigraph.YAxisValueFormatter(func(v float64) string { return fmt.Sprintf("%5.0f W", v) }))
	firstLine := ansi.Strip(strings.SplitN(plot, "\n", 2)[0])
	axisCol := labelW
	if i := strings.IndexAny(firstLine, "┤┼"); i >= 0 {
		axisCol = utf8.RuneCountInString(firstLine[:i])
	}
	lines = append(lines, plot, strings.Repeat(" ", axisCol)+timeline(data.spans, origin, end, cols))
	return strings.Join(lines, "\n")
}

// resample gives the device's watts at cols evenly spaced times over
// [0, end] (the latest sample at or before each), NaN before the first.
// Each column is a binary search, so a long run draws as fast as a short
// one.
func resample(t *powerTrace, end time.Duration, cols int) []float64 {
	out := make([]float64, cols)
	for c := range out {
		at := time.Duration(float64(end) * float64(c) / float64(max(1, cols-1)))
		j := sort.Search(len(t.At), func(i int) bool { return t.At[i] > at }) - 1
		out[c] = math.NaN()
		if j >= 0 {
			out[c] = t.Watts[j]
		}
	}
	return out
}

// timeline draws the trials over [0, end] from origin in w cells: ░
// warmup, █ timed, ╳ a degraded trial, │ a boundary where trials are
// wide enough to show it.
func timeline(spans []trialSpan, origin time.Time, end time.Duration, w int) string {
	if end <= 0 || w <= 0 {
		return ""
	}
	cells := make([]string, w)
	starts := make([]int, w)
	for i := range cells {
		cells[i] = " "
	}
	cellOf := func(d time.Duration) int { return min(w-1, max(0, int(int64(d)*int64(w)/int64(end)))) }
	for _, s := range spans {
		begin := s.started.Sub(origin)
		from, to := cellOf(begin), cellOf(begin+s.length)
		glyph := "█"
		switch {
		case !s.ok:
			glyph = "╳"
		case s.warmup:
			glyph = "░"
		}
		for c := from; c <= to; c++ {
			cells[c] = glyph
		}
		starts[from]++
	}
	// A tick only where one trial starts in a cell and it spans several
	// cells; dense runs would otherwise be all ticks.
	var b strings.Builder
	for c, g := range cells {
		if starts[c] == 1 && c > 0 && c+1 < w && cells[c+1] == g && g != " " && starts[c-1] == 0 {
			g = "│"
		}
		if g == "░" || g == "│" {
			b.WriteString(paintDim.apply(g))
		} else {
			b.WriteString(g)
		}
	}
	return b.String()
}

// pack puts items on as few lines of at most w cells as they fit on,
// each item whole (an item wider than w gets a line of its own).
func pack(items []string, sep string, w int) []string {
	var lines []string
	for _, item := range items {
		if n := len(lines); n > 0 && ansi.StringWidth(lines[n-1]+sep+item) <= w {
			lines[n-1] += sep + item
			continue
		}
		lines = append(lines, item)
	}
	return lines
}
