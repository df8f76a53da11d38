// Package htmlreport turns sessions into pictures to share: one
// self-contained HTML page (verdicts and caveats first, then the charts,
// then the set-up), or each chart as an SVG or PNG file sized for a slide.
// It draws ui/figure's models with gonum/plot, the only package that
// imports it.
package htmlreport

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// Report is what the page shows, in reading order.
type Report struct {
	Title    string
	Subtitle string
	// Compared counts the columns set against a baseline (0: no verdicts
	// section, as for a grid). Verdicts are the comparison's lines in
	// plain words, and TestsNote how they were reached; empty with a
	// single column.
	Compared  int
	Verdicts  []string
	TestsNote string
	// Lead is what the run was for when it is more than arms against
	// a baseline, read first: a load run's levels, knee and goodput (or
	// a together study), or a grid's cells ranked.
	Lead *Lead
	// Numbers open the report: each column's figures, before any words
	// (session.Comparison.NumbersTable).
	Numbers *Table
	// Models is, where the columns run different models, each one's
	// per-token latency, decode rate and memory
	// (session.Comparison.ModelRows).
	Models *Table
	// Reasoning is, where a model reasoned, each column's thinking
	// against its output and its TTFT against its TTFO.
	Reasoning *Table
	// Replicas are, where an arm ran on a fleet, its rows per replica
	// and which replicas differ.
	Replicas *Lead
	// Caveats lead: unfinished sessions, degraded, truncated or cached
	// trials, mismatched set-ups, rows of a file that could not be read.
	Caveats []string
	Legend  []string // what short labels stand for ("A = …")
	Charts  []Chart
	Setups  []Setup
}

// Chart is one picture with its file name and what it shows.
type Chart struct {
	Name    string // file stem for --svg/--png, and the page's anchor
	Caption string
	plot    *plot.Plot
}

// Lead is a section of tables and lines in words under a heading.
type Lead struct {
	Heading, ID string
	Tables      []Table
	Lines       []string
}

// Table is one table of the lead with its caption; Class "cells" is a
// grid's, whose third column is the cells' labels.
type Table struct {
	Caption, Class string
	session.Table
}

// Setup is one session's configuration and machine, as label/value rows.
type Setup struct {
	Session string
	Rows    [][2]string
}

// chartMetrics are drawn as distributions: latency, time to first token,
// time per output token and the mean gap between tokens; where a model
// reasoned, the time to its answer's first token (TTFO) after TTFT.
var chartMetrics = []string{"e2e_ms", "ttft_ms", "tpot_ms", "itl_mean_ms"}

// Build compares the columns refs name (a session's every arm, or
// session#arm), runs the tests, and lays out the report. metricNames are
// the verdicts' metrics (nil: session.VerdictMetrics).
func Build(refs []session.Ref, sessions []*session.Session, metricNames []string, opts session.TestOptions) (*Report, error) {
	if len(metricNames) == 0 {
		metricNames = session.VerdictMetrics(refs, sessions)
	}
	cmp, err := session.Compare(refs, sessions, metricNames)
	if err != nil {
		return nil, err
	}
	cmp.RunTests(opts)
	labels, legend := session.ShortLabels(cmp.Columns)
	r := &Report{Legend: legend, Compared: len(cmp.Columns)}
	var stems []string
	var unique []*session.Session // each session once, though several columns name it
	for _, s := range sessions {
		if stem := session.FileStem(s.Path); !slices.Contains(stems, stem) {
			stems = append(stems, stem)
			unique = append(unique, s)
			r.Setups = append(r.Setups, setupOf(s))
		}
	}
	r.Title = "tokentop: " + strings.Join(stems, " vs ")
	// Each session's plan, backend and model: a comparison across servers
	// must not read as one.
	var setups []string
	for _, s := range unique {
		m := s.Manifest
		var models []string
		for _, t := range m.Targets {
			if !slices.Contains(models, t.Model()) {
				models = append(models, orDash(t.Model()))
			}
		}
		if setup := fmt.Sprintf("%s · %s · %s", m.Profile.Name, strings.Join(m.Kinds(), " + "), strings.Join(models, " + ")); !slices.Contains(setups, setup) {
			setups = append(setups, setup)
		}
	}
	r.Subtitle = strings.Join(setups, " vs ")
	r.Caveats = append(slices.Clone(cmp.Caveats), cmp.Warnings...)
	if len(cmp.Columns) > 1 {
		r.Verdicts, r.TestsNote = cmp.Verdicts(), cmp.TestsNote()
	}
	charted := chartMetrics
	if t, ok := cmp.ReasoningTable(); ok {
		r.Reasoning = &Table{Caption: "per trial: mean reasoning and output tokens; median TTFT (the first token, thinking included) and TTFO (the answer's first)", Table: t}
		charted = slices.Insert(slices.Clone(chartMetrics), slices.Index(chartMetrics, "ttft_ms")+1, "ttfo_ms")
	}
	for i, c := range cmp.Columns {
		s := sessionOf(c.Session, sessions)
		recs := session.ByArm(s.Records)[c.Arm]
		rows := session.ReplicasOf(recs, s.Manifest.TargetOf(c.Arm).Replicas)
		if len(rows) == 0 {
			continue
		}
		if r.Replicas == nil {
			r.Replicas = &Lead{Heading: "Replicas", ID: "replicas"}
		}
		r.Replicas.Tables = append(r.Replicas.Tables, Table{Caption: labels[i] + ": its counted trials on each replica of its fleet", Table: session.ReplicasTable(rows)})
		for _, w := range session.ReplicaWords(recs, rows) {
			r.Replicas.Lines = append(r.Replicas.Lines, labels[i]+": "+w)
		}
	}
	arrivals := map[string]map[session.TrialKey]session.Arrivals{} // per session stem
	for _, s := range unique {
		stem := session.FileStem(s.Path)
		tokens, warnings, err := session.LoadTokens(s)
		if err != nil {
			r.Caveats = append(r.Caveats, fmt.Sprintf("%s: no token timings, so no gaps between tokens: %v", stem, err))
		}
		r.Caveats = append(r.Caveats, warnings...)
		arrivals[stem] = tokens
	}
	numbers := cmp.NumbersTable(func(stem string) map[session.TrialKey]session.Arrivals { return arrivals[stem] })
	caption := "each arm's timed ok trials, in ms unless named: e2e with the median's bootstrap 95% interval; ITL over every gap between chunks; tok/s = Σ tokens / Σ time"
	if slices.Contains(numbers.Header, "agg req/s") {
		caption += "; tok/s/req is a request's own rate, agg tok/s and agg req/s a load run's over its steady windows"
	}
	r.Numbers = &Table{Caption: caption, Class: "numbers", Table: numbers}
	if rows := cmp.ModelRows(func(stem string) map[session.TrialKey]session.Arrivals { return arrivals[stem] }); rows != nil {
		t, notes := session.ModelsTable(rows)
		r.Models = &Table{Caption: strings.Join(notes, "; "), Table: t}
	}
	cols := make([]column, len(cmp.Columns))
	for i, c := range cmp.Columns {
		s := sessionOf(c.Session, sessions)
		cols[i] = column{label: labels[i], mark: figure.Arm(i), values: map[string][]float64{}, tol: 0.01,
			trials: session.ByArm(s.Records)[c.Arm]}
		if sum, ok := s.Manifest.Summary[c.Arm]; ok && sum.ConvergeTolerance > 0 {
			cols[i].tol = sum.ConvergeTolerance
		}
		for _, name := range charted {
			m, _ := session.LookupMetric(name)
			cols[i].values[name] = c.Values(m)
		}
		cols[i].typical, cols[i].slowest = typicalAndSlowest(cols[i].trials, arrivals[c.Session])
	}
	r.addLoad(unique)
	for _, name := range charted {
		m, _ := session.LookupMetric(name)
		stem := strings.TrimSuffix(name, "_ms")
		p, err := histogramChart(m, cols)
		r.addChart(Chart{Name: stem + "-histogram",
			Caption: fmt.Sprintf("%s of the timed trials that ran to the end, on bins shared by every arm (the dashboard's rule: Freedman–Diaconis, up to %d bins); ● p50, ▲ p95, ✕ p99 of each arm above the bars.", m.Label, maxBins)}, p, err)
		p, err = ecdfChart(m, cols)
		r.addChart(Chart{Name: stem + "-ecdf",
			Caption: fmt.Sprintf("The same %s values as a cumulative curve: read off any percentile, and see where arms cross.", m.Label)}, p, err)
	}
	p, err := convergenceChart(cols)
	r.addChart(Chart{Name: "convergence",
		Caption: "How the mean e2e settled as trials came in, with its 95% confidence band (Student t), and the median (dots); the pyramid marks where it stayed within the run's tolerance of its final value, and a short dashed line where the trials-needed estimate lands (the n at which the arm's CV gives a 95% interval of ± that tolerance; the legend gives it)."}, p, err)
	p, err = timelineChart(cols)
	r.addChart(Chart{Name: "timeline",
		Caption: "Every trial's e2e at the time it started, arms interleaved as they ran: warmup trials (rings) are set aside; drift, warm-up effects and outliers show here first."}, p, err)
	p, err = gapsChart(cols, true)
	r.addChart(Chart{Name: "gaps-typical",
		Caption: "Inside one generation: the time between consecutive tokens (or chunks) of each arm's typical timed trial, the one with the median ITL max."}, p, err)
	p, err = gapsChart(cols, false)
	r.addChart(Chart{Name: "gaps-slowest",
		Caption: "The same for each arm's trial with the largest ITL max: where the worst stall fell, and whether it was one spike or a slow stretch. ITL max and CV rise with such spikes far more than the mean does."}, p, err)
	for _, s := range unique {
		r.addPower(s, len(unique) > 1)
		r.addServer(s, len(unique) > 1)
	}
	return r, nil
}

// addServer adds the charts of a session's servers' own metrics, where
// any were read: the requests they ran and queued, and the shares of
// their KV cache in use and of prompt tokens their prefix cache served.
func (r *Report) addServer(s *session.Session, named bool) {
	stem, info := session.FileStem(s.Path), s.Manifest.ServerMetrics
	points, warnings, err := session.LoadServerCSV(s)
	r.Caveats = append(r.Caveats, warnings...)
	switch {
	case err != nil:
		r.Caveats = append(r.Caveats, fmt.Sprintf("%s: its server metrics file could not be read: %v", stem, err))
		return
	case len(points) == 0 || info.StartedAt == nil:
		return
	}
	series := func(metrics ...string) []serverSeries {
		var out []serverSeries
		for _, metric := range metrics {
			for server, src := range info.Servers {
				var xys plotter.XYs
				for _, pt := range points {
					if pt.Server == server && pt.Metric == metric {
						xys = append(xys, plotter.XY{X: pt.AtMs / 1000, Y: pt.Value})
					}
				}
				if len(xys) > 0 {
					name := commonSeriesNames[metric]
					if len(info.Servers) > 1 {
						name = strings.Join(src.Targets, ", ") + ": " + name
					}
					out = append(out, serverSeries{name: name, xys: xys})
				}
			}
		}
		return out
	}
	trials := make([]*session.Record, len(s.Records))
	for i := range s.Records {
		trials[i] = &s.Records[i]
	}
	suffix := ""
	if named {
		suffix = ": " + stem
	}
	windows := " Under the curves, every trial's window: timed dark, warmup light."
	if len(s.Records) > maxWindows {
		windows = fmt.Sprintf(" The %d trials are too many to mark one by one.", len(s.Records))
	}
	if q := series(telemetry.CommonRunning, telemetry.CommonWaiting); len(q) > 0 {
		p, err := serverChart("the server's requests, by its own metrics"+suffix, "requests", q, 1, trials, *info.StartedAt)
		r.addChart(Chart{Name: "server-requests-" + stem, Caption: "The requests the server ran and queued, as its Prometheus metrics said once a second." + windows}, p, err)
	}
	if c := series(telemetry.CommonKVCache, telemetry.CommonPrefixHit); len(c) > 0 {
		p, err := serverChart("the server's caches, by its own metrics"+suffix, "percent", c, 100, trials, *info.StartedAt)
		r.addChart(Chart{Name: "server-caches-" + stem, Caption: "The share of the server's KV cache in use, and of prompt tokens its prefix cache served since it started, as its Prometheus metrics said." + windows}, p, err)
	}
}

// commonSeriesNames are the common series' legend names.
var commonSeriesNames = map[string]string{
	telemetry.CommonRunning:   "running",
	telemetry.CommonWaiting:   "waiting",
	telemetry.CommonKVCache:   "KV cache in use",
	telemetry.CommonPrefixHit: "prefix cache hits",
}

// addPower adds a session's power chart, or says why it has none.
func (r *Report) addPower(s *session.Session, named bool) {
	stem, power := session.FileStem(s.Path), s.Manifest.Power
	samples, warnings, err := session.LoadPower(s)
	r.Caveats = append(r.Caveats, warnings...)
	switch {
	case err != nil:
		r.Caveats = append(r.Caveats, fmt.Sprintf("%s: its power file could not be read: %v", stem, err))
		return
	case len(samples) == 0 || power.SamplerStart == nil:
		why := "no power source"
		if power != nil {
			why = power.GPU + "; " + power.CPU
		}
		r.Caveats = append(r.Caveats, fmt.Sprintf("%s: no power or energy was measured (%s)", stem, why))
		return
	}
	if c := energyQualityCaveat(s.Records); c != "" {
		r.Caveats = append(r.Caveats, stem+": "+c)
	}
	var traces []deviceTrace
	index := map[string]int{}
	instant := false
	for _, smp := range samples {
		instant = instant || !math.IsNaN(smp.PowerInstantW)
		i, ok := index[smp.Device]
		if !ok {
			i, index[smp.Device] = len(traces), len(traces)
			traces = append(traces, deviceTrace{PowerTrace: figure.NewPowerTrace(), name: smp.Device, baseline: math.NaN()})
			for j, d := range power.Devices {
				if d.ID == smp.Device {
					traces[i].name = d.Name
					if j < len(power.Baseline) {
						traces[i].baseline = power.Baseline[j].MeanW
					}
				}
			}
		}
		traces[i].Add(time.Duration(smp.AtMs*float64(time.Millisecond)), smp.ChartW(), smp.EnergyMJ)
	}
	trials := make([]*session.Record, len(s.Records))
	for i := range s.Records {
		trials[i] = &s.Records[i]
	}
	title := "power over the run"
	if named {
		title += ": " + stem
	}
	reading := "its readings, or its energy counter's rise"
	if instant {
		reading = "its instantaneous readings (NVML_FI_DEV_POWER_INSTANT; NVML's power usage, a 1-second average, hides a prefill's peaks), or its energy counter's rise"
	}
	caption := fmt.Sprintf("Each device's power (from %s), its idle power before the first trial dashed, and under the curves every trial's window: timed dark, warmup light. Energy is the counter's.", reading)
	if len(s.Records) > maxWindows {
		caption = fmt.Sprintf("Each device's power (from %s) and its idle power before the first trial dashed; the %d trials are too many to mark one by one.", reading, len(s.Records))
	}
	p, err := powerChart(title, traces, trials, *power.SamplerStart)
	r.addChart(Chart{Name: "power-" + stem, Caption: caption}, p, err)
}

// addChart adds chart c, drawn by p; when its drawing failed, it says so
// among the caveats instead: the rest of the report still stands.
func (r *Report) addChart(c Chart, p *plot.Plot, err error) {
	if err != nil {
		r.Caveats = append(r.Caveats, fmt.Sprintf("the %s chart could not be drawn: %v", c.Name, err))
		return
	}
	c.plot = p
	r.Charts = append(r.Charts, c)
}

// energyQualityCaveat says how the timed trials' energy was measured when
// not all of it came from an energy counter, the exact source.
func energyQualityCaveat(records []session.Record) string {
	counts := map[telemetry.Quality]int{}
	for i := range records {
		if records[i].Counted() {
			counts[telemetry.Quality(records[i].EnergyQuality)]++
		}
	}
	if len(counts) == 0 || len(counts) == 1 && counts[telemetry.QualityCounter] > 0 {
		return ""
	}
	words := []struct {
		q    telemetry.Quality
		what string
	}{
		{telemetry.QualityCounter, "from an energy counter"},
		{telemetry.QualitySampled, "integrated from power samples (less exact)"},
		{telemetry.QualityNoData, "with too few samples for any energy figure"},
	}
	var parts []string
	for _, w := range words {
		if n := counts[w.q]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, w.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "energy of the timed trials: " + strings.Join(parts, ", ")
}

// typicalAndSlowest finds among the counted trials the ones with the
// median and the largest ITL max, and returns their arrivals.
func typicalAndSlowest(trials []*session.Record, arrivals map[session.TrialKey]session.Arrivals) (typical, slowest *session.Arrivals) {
	var counted []*session.Record
	for _, r := range trials {
		if _, ok := arrivals[session.TrialKey{Arm: r.Arm, Trial: r.Trial}]; ok && r.Counted() && !math.IsNaN(r.ITLMaxMs) {
			counted = append(counted, r)
		}
	}
	if len(counted) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(counted, func(a, b *session.Record) int { return cmp.Compare(a.ITLMaxMs, b.ITLMaxMs) })
	pick := func(r *session.Record) *session.Arrivals {
		a := arrivals[session.TrialKey{Arm: r.Arm, Trial: r.Trial}]
		return &a
	}
	return pick(counted[len(counted)/2]), pick(counted[len(counted)-1])
}

// SaveCharts writes each chart as DIR/<name>.<ext> (svg or png, a 16:9
// slide's size) and returns the paths.
func (r *Report) SaveCharts(dir, ext string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range r.Charts {
		path := filepath.Join(dir, c.Name+"."+ext)
		var b bytes.Buffer
		if err := writeChart(c.plot, ext, &b); err != nil {
			return paths, fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return paths, fmt.Errorf("writing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func sessionOf(stem string, sessions []*session.Session) *session.Session {
	for _, s := range sessions {
		if session.FileStem(s.Path) == stem {
			return s
		}
	}
	return sessions[0]
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// setupOf lists what a reader needs to judge the numbers: what ran, on
// what, and how.
// targetRows describe each target (backend, model, quantization, server,
// options) and what became of the prompt cache, naming the arms where
// there are several targets or cache settings.
func targetRows(m *session.Manifest) [][2]string {
	var rows [][2]string
	for _, t := range m.Targets {
		key := "backend"
		if len(m.Targets) > 1 {
			key = fmt.Sprintf("target %s (%s)", t.Name, strings.Join(armsOn(m, func(a session.ArmInfo) bool { return a.Target == t.Name }), ", "))
		}
		text := fmt.Sprintf("%s · model %s (asked for %s) · quantization %s · digest %s · server %s",
			strings.TrimSpace(t.Kind+" "+t.URL), orDash(t.ModelActual), orDash(t.ModelRequested), orDash(t.Quantization), orDash(t.Digest), orDash(t.ServerVersion))
		if options := backends.OptionsText(t.Options); options != "" {
			text += " · options " + options
		}
		rows = append(rows, [2]string{key, text})
	}
	var words []string
	for _, a := range m.Arms {
		if !slices.Contains(words, a.PromptCache) {
			words = append(words, a.PromptCache)
		}
	}
	for _, w := range words {
		key := "prompt cache"
		if len(words) > 1 {
			key = fmt.Sprintf("prompt cache (%s)", strings.Join(armsOn(m, func(a session.ArmInfo) bool { return a.PromptCache == w }), ", "))
		}
		rows = append(rows, [2]string{key, orDash(w)})
	}
	return rows
}

func armsOn(m *session.Manifest, match func(session.ArmInfo) bool) []string {
	var names []string
	for _, a := range m.Arms {
		if match(a) {
			names = append(names, a.Name)
		}
	}
	return names
}

func setupOf(s *session.Session) Setup {
	m := s.Manifest
	finished := "—"
	if m.FinishedAt != nil {
		finished = m.FinishedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	rows := [][2]string{
		{"status", m.Status},
		{"stopped by", orDash(m.StoppedBy)},
		{"started · finished", m.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC") + " · " + finished},
		{"profile", fmt.Sprintf("%s (%s): %d warmup + %d trials per arm, max %d tokens, order %s, seed %d", m.Profile.Name, m.Profile.Source, m.Profile.Warmup, m.Profile.Trials, m.Profile.MaxTokens, m.Profile.Order, m.Profile.Seed)},
	}
	rows = append(rows, targetRows(m)...)
	rows = append(rows, [][2]string{
		{"machine", fmt.Sprintf("%s/%s, %s, %d cores, %d MB", m.Environment.OS, m.Environment.Arch, orDash(m.Environment.CPUModel), m.Environment.Cores, m.Environment.MemoryMB)},
		{"tokentop", fmt.Sprintf("%s (%s), %s", m.ToolVersion, orDash(m.Environment.VCSRevision), m.Environment.GoVersion)},
		{"config hash", m.ConfigHash},
	}...)
	for _, g := range m.Environment.GPUs {
		rows = append(rows, [2]string{"GPU", fmt.Sprintf("%s, driver %s", g.Name, orDash(m.Environment.Driver))})
	}
	var arms []string
	for _, a := range m.Arms {
		arms = append(arms, fmt.Sprintf("%s (%s)", a.Name, a.Strategy))
	}
	rows = append(rows, [2]string{"arms", strings.Join(arms, ", ")})
	return Setup{Session: session.FileStem(s.Path), Rows: rows}
}
