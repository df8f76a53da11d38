package grid

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
)

// Row is one arm of one cell over all its sessions (repetitions, and the
// rest of any that were cut short), its counted trials pooled.
type Row struct {
	Cell   string   // the cell's ID
	Label  string   // its values in words
	Values []string // in the axes' order
	Arm    string
	N      int
	// E2E is the median e2e with its bootstrap 95% interval; Mean the
	// mean's; TTFT and TPOT the medians' (ms).
	E2E, Mean, TTFT, TPOT metrics.Estimate
	// TokensPerS is Σ tokens / Σ time.
	TokensPerS float64
	// USDPer1M is the cost of a million output tokens at the profile's
	// usd_per_hour (NaN without one).
	USDPer1M float64
	// Energy is its energy per token as a figure only where it is one
	// (session.EnergyOf); its N is 0 where energy was not measured.
	Energy session.EnergyFigure
	// Rank is 1 plus the number of rows significantly better in the
	// ranking metric (Comparison.RankBy: e2e unless asked otherwise;
	// Holm-adjusted pairwise tests); 0 (unranked) for a row too small
	// for any test to tell apart. Pairwise tests are not transitive, so
	// equal ranks do not say that no test tells two rows apart: Group does.
	Rank int
	// Group is the row's letters in a compact letter display: two rows
	// that share a letter are told apart by no test; two with none in
	// common differ significantly. "" for an unranked row.
	Group    string
	Sessions int
	// ICC is the share of the e2e variance that lies between the row's
	// sessions (its repetitions drifting), NaN with fewer than two.
	ICC float64
	// ranked are its counted trials' values of the ranking metric.
	ranked []float64
	// perSession are the counted trials of each of its sessions: the
	// phase fits take a session as one point, so that drift between
	// sessions shows in their intervals.
	perSession [][]*session.Record
	decodeMB   float64 // 10⁶ bytes of weights read per decoded token (the built-in engine says), NaN when unknown
}

// AxisMean is one value of one axis across the other axes: the geometric
// mean of its rows' median e2e and tok/s, and its e2e against the
// axis's fastest value.
type AxisMean struct {
	Axis, Value      string
	Rows             int
	E2E, TokensPerS  float64
	E2ERatioVsFaster float64 // its geometric mean e2e / the lowest of the axis (1 for the fastest)
}

// MarshalJSON writes an axis mean with snake_case keys, its unknowns as
// null (session.JSONNumber).
func (m AxisMean) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"axis": m.Axis, "value": m.Value, "matched_rows": m.Rows,
		"e2e_geomean_ms": session.JSONNumber(m.E2E), "tokens_per_s_geomean": session.JSONNumber(m.TokensPerS),
		"e2e_vs_fastest": session.JSONNumber(m.E2ERatioVsFaster)})
}

// Comparison is the grid's cells side by side.
type Comparison struct {
	// Width is the text tables' width, a terminal's: their columns go
	// into blocks that fit. 0 prints each in one block however wide.
	Width int
	Name  string
	Axes  []string
	// RankBy is the metric the rows are ranked on (e2e unless asked).
	RankBy session.Metric
	// logScale says the tests on repetitions' medians took their logs
	// (every median positive); net energy can be below zero, and then
	// they test the medians themselves.
	logScale bool
	Rows     []Row
	Means    []AxisMean
	Caveats  []string
	// Pairs is how many pairwise tests the ranks rest on; Repeated how
	// many of them compared repetitions' medians, not pooled trials.
	Pairs, Repeated int
	// Fits split the time into its phases (TR121) where the grid varies
	// what they scale with.
	Fits []PhaseFit
	// Setup is how the grid was run, as label/value rows: its file, plan,
	// cells and repetitions, and the machine its first session ran on.
	Setup [][2]string
}

// PhaseFit is a line through one group of cells' trials: cells alike in
// every axis but those the line is against.
type PhaseFit struct {
	Group string // the other axes' values and the arm
	What  string // "TTFT against prompt tokens" and the like
	metrics.LinearFit
	Words string
}

// Compare reads a grid folder's manifest and sessions and ranks its
// cells on a metric (rankBy: a session metric's name, "" for e2e). opts
// seeds and sizes the bootstrap intervals.
func Compare(dir, rankBy string, opts session.TestOptions) (*Comparison, error) {
	rankMetric, ok := session.LookupMetric(cmp.Or(rankBy, "e2e_ms"))
	if !ok {
		return nil, fmt.Errorf("unknown metric %q; use one of %s", rankBy, strings.Join(session.MetricNames(), ", "))
	}
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not a grid folder: %w", dir, err)
	}
	m, err := decodeManifest(path, data)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Name: m.Name, Axes: m.Axes, RankBy: rankMetric}
	var machine *session.Manifest // the first session read: its environment
	e2eMetric, _ := session.LookupMetric("e2e_ms")
	metric := func(name string) session.Metric { mt, _ := session.LookupMetric(name); return mt }
	resumed := 0
	for _, cell := range m.Cells {
		byArm := map[string][]*session.Record{}
		bySession := map[string][][]*session.Record{}
		weight := map[string]float64{}
		var power *session.PowerInfo // the cell's sessions' power, the widest drift
		usdPerHour := 0.0
		var arms []string
		sessions := 0
		for k, run := range cell.Runs {
			if run.Session == "" {
				c.Caveats = append(c.Caveats, fmt.Sprintf("%s (%s) repetition %d did not run: %s", cell.ID, cell.Label, run.Repetition, run.Error))
				continue
			}
			s, err := session.Load(filepath.Join(dir, run.Session))
			if err != nil {
				c.Caveats = append(c.Caveats, fmt.Sprintf("%s (%s): %v", cell.ID, cell.Label, err))
				continue
			}
			sessions++
			if machine == nil {
				machine = s.Manifest
			}
			usdPerHour = s.Manifest.Profile.USDPerHour
			power = widerDrift(power, s.Manifest.Power)
			caveats := session.SessionCaveats(s)
			if resumedLater(cell.Runs, k) {
				// A piece of a repetition that was killed and resumed: the
				// repetition finished in the sessions after it, read as one
				// with it, so "did not finish its plan" would be false.
				caveats = slices.DeleteFunc(caveats, func(c string) bool { return strings.HasPrefix(c, "status ") })
				resumed++
			}
			c.Caveats = append(c.Caveats, prefixed(cell.ID+" ", caveats)...)
			for arm, recs := range session.ByArm(s.Records) {
				if !slices.Contains(arms, arm) {
					arms = append(arms, arm)
				}
				mb, err := strconv.ParseFloat(s.Manifest.TargetOf(arm).Details["decode_read_mb"], 64)
				if err != nil {
					mb = math.NaN() // a backend that does not say (sessions before it did said weight_mb, with the embedding table decode does not read)
				}
				weight[arm] = mb
				counted := session.Counted(recs)
				byArm[arm] = append(byArm[arm], counted...)
				bySession[arm] = append(bySession[arm], counted)
			}
		}
		slices.Sort(arms)
		for _, arm := range arms {
			recs := byArm[arm]
			e2e := session.Values(recs, e2eMetric)
			r := Row{Cell: cell.ID, Label: cell.Label, Values: cell.Values, Arm: arm, N: len(recs), Sessions: sessions, perSession: bySession[arm], decodeMB: weight[arm],
				ranked:     session.Values(recs, rankMetric),
				ICC:        metrics.ICC(sessionValues(bySession[arm], e2eMetric)),
				E2E:        median(e2e, opts),
				Mean:       metrics.Estimate{Value: metrics.Mean(e2e), CI: metrics.Bootstrap(e2e, metrics.Mean, opts.Resamples, opts.Seed)},
				TTFT:       median(session.Values(recs, metric("ttft_ms")), opts),
				TPOT:       median(session.Values(recs, metric("tpot_ms")), opts),
				TokensPerS: metric("output_tps").Pooled(recs),
				USDPer1M:   math.NaN(),
				Energy:     session.EnergyOf(recs, power),
			}
			if usdPerHour > 0 && r.TokensPerS > 0 {
				r.USDPer1M = session.USDPer1MTokens(r.TokensPerS, usdPerHour)
			}
			c.Rows = append(c.Rows, r)
		}
	}
	if resumed > 0 {
		c.Caveats = append(c.Caveats, fmt.Sprintf("%d session(s) were cut short by a kill and their repetition resumed in a session of its own: each is read together with the rest of its repetition", resumed))
	}
	c.Setup = setupRows(m, machine)
	c.axisMeans() // before rank sorts the rows: each axis's values in the grid's order
	c.rank()
	c.phaseFits()
	if line := c.driftCaveat(); line != "" {
		c.Caveats = append(c.Caveats, line)
	}
	return c, nil
}

// resumedLater reports whether runs[k] was cut short and a later run of
// the same repetition went on where it stopped.
func resumedLater(runs []Run, k int) bool {
	if runs[k].Status == session.StatusComplete {
		return false
	}
	for _, later := range runs[k+1:] {
		if later.Repetition == runs[k].Repetition && later.Session != "" {
			return true
		}
	}
	return false
}

// setupRows say how the grid ran: its file and plan, its cells and the
// sessions they ran, and the machine of its first session (nil: none
// read).
func setupRows(m Manifest, machine *session.Manifest) [][2]string {
	runs, failed := 0, 0
	for _, cell := range m.Cells {
		for _, run := range cell.Runs {
			runs++
			if run.Session == "" {
				failed++
			}
		}
	}
	rows := [][2]string{
		{"grid", fmt.Sprintf("%s (%s)", m.Name, m.Source)},
		{"axes", strings.Join(m.Axes, " × ")},
		{"cells · repetitions", fmt.Sprintf("%d cells × %d repetitions; %d sessions run (a repetition cut short goes on as a session of its own), %d did not run", len(m.Cells), m.Repetitions, runs-failed, failed)},
		{"order · seed", fmt.Sprintf("%s, seed %d", m.Order, m.Seed)},
		{"started", m.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"tokentop", m.ToolVersion},
	}
	if machine != nil {
		e := machine.Environment
		rows = append(rows, [2]string{"machine", fmt.Sprintf("%s/%s, %s, %d cores, %d MB (the first session's)", e.OS, e.Arch, cmp.Or(e.CPUModel, "—"), e.Cores, e.MemoryMB)})
		for _, g := range e.GPUs {
			rows = append(rows, [2]string{"GPU", fmt.Sprintf("%s, driver %s", g.Name, cmp.Or(e.Driver, "—"))})
		}
	}
	return rows
}

func sessionValues(sessions [][]*session.Record, m session.Metric) [][]float64 {
	out := make([][]float64, len(sessions))
	for i, recs := range sessions {
		out[i] = session.Values(recs, m)
	}
	return out
}

// widerDrift is whichever of two sessions' power info has the wider idle
// drift (a session without its after-run baseline counts as the widest:
// its drift is unknown), so that a row pooled over repetitions carries
// the worst of them.
func widerDrift(a, b *session.PowerInfo) *session.PowerInfo {
	known := func(p *session.PowerInfo) bool { return len(p.BaselineAfter) > 0 && !math.IsNaN(p.DriftW) }
	switch {
	case a == nil:
		return b
	case b == nil || !known(a):
		return a
	case !known(b) || math.Abs(b.DriftW) > math.Abs(a.DriftW):
		return b
	}
	return a
}

// repetitionMedians are a row's sessions' medians of m, one per session
// with trials.
func (r *Row) repetitionMedians(m session.Metric) []float64 {
	var out []float64
	for _, values := range sessionValues(r.perSession, m) {
		if len(values) > 0 {
			out = append(out, metrics.Median(values))
		}
	}
	return out
}

// driftCaveat says what the grid can see of drift between runs: nothing
// without repetitions; with them, how much of the variance lay between
// them.
func (c *Comparison) driftCaveat() string {
	var iccs []float64
	single := 0
	for _, r := range c.Rows {
		if r.Sessions < 2 {
			single++
		}
		if !math.IsNaN(r.ICC) {
			iccs = append(iccs, r.ICC)
		}
	}
	switch {
	case len(c.Rows) < 2:
		return ""
	case single == len(c.Rows):
		return "each cell ran once, so drift between runs of one cell cannot be seen, and the ranks test pooled trials as if each were independent " +
			"(in a real grid 5 of 12 cells differed between repetitions); run it with repetitions = 2 or more"
	case len(iccs) == 0:
		return ""
	}
	slices.Sort(iccs)
	return fmt.Sprintf("between-repetition ICC of e2e: median %.2f (%.2f–%.2f over %d rows): that share of the variance lay between runs of the same cell, "+
		"so cells with repetitions are compared over their repetitions' medians", metrics.Median(iccs), iccs[0], iccs[len(iccs)-1], len(iccs))
}

// slopeWords says a slope in ms per scale units of x (unit), with its
// interval and whether that interval holds no change.
func slopeWords(f metrics.LinearFit, scale float64, unit string) string {
	verb := "rises"
	if f.Slope < 0 {
		verb = "falls"
	}
	line := fmt.Sprintf("%s %s ms %s", verb, session.FormatValue(math.Abs(scale*f.Slope)), unit)
	if f.SlopeCI.Lo <= 0 && f.SlopeCI.Hi >= 0 {
		line += ", not significantly"
	}
	return line + fmt.Sprintf(" [%s, %s]", session.FormatValue(scale*f.SlopeCI.Lo), session.FormatValue(scale*f.SlopeCI.Hi))
}

// inverseRate is the slope read as a rate, scale/slope in unit, with its
// interval, for a slope known to be positive: where the slope's interval
// reaches zero its reciprocal could be any rate, or none, so it says
// nothing. A slope with no interval is not put into words at all
// (phaseFits).
func inverseRate(f metrics.LinearFit, scale float64, unit, gloss string) string {
	if !(f.Slope > 0 && f.SlopeCI.Lo > 0) {
		return ""
	}
	return fmt.Sprintf(" (1/slope: %s %s [%s, %s]%s)", session.FormatValue(scale/f.Slope), unit,
		session.FormatValue(scale/f.SlopeCI.Hi), session.FormatValue(scale/f.SlopeCI.Lo), gloss)
}

// phaseFits fits, over each group of cells alike in every other axis
// (one point per session: its trials' mean x and median y, since trials
// of one session share its drift and are not independent of it),
// TTFT against the prompt's tokens (prefill) where the grid varies
// prompt_words, input_tokens or prompts_file, the time per output token
// against the weights' size (decode reads every weight per token) where
// it varies model or dtype, and against the context where it varies
// max_tokens, prompt_words, input_tokens or output_tokens.
func (c *Comparison) phaseFits() {
	has := func(axes ...string) bool {
		return slices.ContainsFunc(axes, func(a string) bool { return slices.Contains(c.Axes, a) })
	}
	type fit struct {
		what   string
		across []string
		x      func(r *Row, t *session.Record) float64
		y      func(t *session.Record) float64
		words  func(f metrics.LinearFit) string
	}
	promptTokens := func(_ *Row, t *session.Record) float64 {
		if t.PromptTokens <= 0 {
			return math.NaN()
		}
		return float64(t.PromptTokens)
	}
	fits := []fit{
		{"TTFT against prompt tokens", []string{"prompt_words", "input_tokens", "prompts_file"}, promptTokens, func(t *session.Record) float64 { return t.TTFTMs },
			func(f metrics.LinearFit) string {
				return "TTFT " + slopeWords(f, 1000, "per 1,000 prompt tokens") + inverseRate(f, 1000, "prompt tokens/s", "")
			}},
		{"TPOT against weights read per token", []string{"model", "dtype"}, func(r *Row, _ *session.Record) float64 { return r.decodeMB },
			func(t *session.Record) float64 { return t.TPOTMs },
			func(f metrics.LinearFit) string {
				return "TPOT " + slopeWords(f, 1000, "per GB (10⁹ bytes) of weights read per token") + inverseRate(f, 1, "GB/s", ", the rate if decode only read the weights")
			}},
		{"TPOT against context", []string{"max_tokens", "prompt_words", "input_tokens", "output_tokens"}, func(_ *Row, t *session.Record) float64 {
			if t.PromptTokens < 0 {
				return math.NaN()
			}
			return float64(t.PromptTokens) + float64(t.OutputTokens)/2 // the mean context while decoding
		}, func(t *session.Record) float64 { return t.TPOTMs },
			func(f metrics.LinearFit) string {
				return "TPOT " + slopeWords(f, 1000, "per 1,000 tokens of context")
			}},
	}
	for _, spec := range fits {
		if !has(spec.across...) {
			continue
		}
		groups := map[string][]*Row{}
		var order []string
		for i := range c.Rows {
			r := &c.Rows[i]
			var label []string
			for k, axis := range c.Axes {
				if k < len(r.Values) && !slices.Contains(spec.across, axis) {
					label = append(label, axis+" "+r.Values[k])
				}
			}
			key := strings.Join(append(label, "arm "+r.Arm), " · ")
			if groups[key] == nil {
				order = append(order, key)
			}
			groups[key] = append(groups[key], r)
		}
		slices.Sort(order)
		for _, key := range order {
			var x, y []float64
			distinct := map[float64]bool{}
			for _, r := range groups[key] {
				for _, trials := range r.perSession { // a session is one point: its mean x, its median y
					var xs, ys []float64
					for _, t := range trials {
						if xv, yv := spec.x(r, t), spec.y(t); !math.IsNaN(xv) && !math.IsNaN(yv) {
							xs, ys = append(xs, xv), append(ys, yv)
						}
					}
					if len(xs) == 0 {
						continue
					}
					xv := metrics.Mean(xs)
					x, y = append(x, xv), append(y, metrics.Median(ys))
					distinct[xv] = true
				}
			}
			if len(distinct) < 2 {
				continue // one x: nothing to fit
			}
			f := metrics.FitLine(x, y)
			words := spec.words(f)
			if math.IsNaN(f.SlopeCI.Lo) {
				// A line through two sessions' points has no interval, and
				// its slope is the two points' noise as much as their
				// trend (255 ms per 1,000 tokens for 8 ms cells): none.
				words = fmt.Sprintf("no slope: %d sessions give a line no interval; run the grid with repetitions = 2 or more", f.N)
			}
			c.Fits = append(c.Fits, PhaseFit{Group: key, What: spec.what, LinearFit: f, Words: words})
		}
	}
}

// median is the values' median with its bootstrap 95% interval (values
// from session.Values: NaN already left out).
func median(values []float64, opts session.TestOptions) metrics.Estimate {
	return metrics.Estimate{Value: metrics.Median(values), CI: metrics.Bootstrap(values, metrics.Median, opts.Resamples, opts.Seed)}
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}

// testable reports whether some pair of row i could reach significance.
// Over repetitions (repeated: rows with two or more), any pair can; over pooled trials,
// the smallest p-value a Mann-Whitney test against another row can reach
// must be below α over all the pairs (Holm's most lenient step). A row
// of a few trials (a cell cut short) cannot, and a rank of 1 by default
// would read as "as fast as the fastest".
func (c *Comparison) testable(i int, repeated []bool) bool {
	if len(c.Rows[i].ranked) < 2 || c.Pairs == 0 {
		return false
	}
	for j := range c.Rows {
		if j == i || len(c.Rows[j].ranked) < 2 {
			continue
		}
		if repeated[i] && repeated[j] || metrics.MannWhitneyCanReject(len(c.Rows[i].ranked), len(c.Rows[j].ranked), session.Alpha/float64(c.Pairs)) {
			return true
		}
	}
	return false
}

// pairTest tests rows i and j on the ranking metric: over their
// repetitions' medians where both have repetitions (reps: Welch's t on
// their logs, or on the medians where some are not positive, each cell
// on its own variance between repetitions, since that drift can differ
// 80-fold between cells), since pooled trials of drifting repetitions
// pass drift for evidence (12–34% false positives at an ICC of 0.1–0.4);
// else over their pooled trials (Mann-Whitney). iBetter comes from the
// test's own effect, never from the medians, which can point the other
// way: P(i < j) > ½ for Mann-Whitney, the difference of the logs for the
// t test (the other way round where higher is better).
func (c *Comparison) pairTest(i, j int, reps [][]float64) (p float64, iBetter bool) {
	if reps != nil {
		t := metrics.WelchT(reps[i], reps[j])
		return t.P, (t.Diff > 0) != c.RankBy.HigherIsBetter
	}
	a, b := c.Rows[i].ranked, c.Rows[j].ranked
	mw := metrics.MannWhitney(a, b)
	return mw.P, (mw.U/float64(len(a)*len(b)) > 0.5) != c.RankBy.HigherIsBetter // U counts b above a
}

func logs(values []float64) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = math.Log(v)
	}
	return out
}

// repetitions gives each row its repetitions' medians of the ranking
// metric, on their logs where every row's are positive (c.logScale), and
// whether it has two or more: a row is compared over its repetitions
// where it does.
func (c *Comparison) repetitions() (medians [][]float64, repeated []bool) {
	medians = make([][]float64, len(c.Rows))
	repeated = make([]bool, len(c.Rows))
	c.logScale = true
	for i := range c.Rows {
		if m := c.Rows[i].repetitionMedians(c.RankBy); len(m) >= 2 {
			medians[i], repeated[i] = m, true
			c.logScale = c.logScale && slices.Min(m) > 0
		}
	}
	if c.logScale {
		for i := range medians {
			medians[i] = logs(medians[i])
		}
	}
	return medians, repeated
}

// rank tests every pair of rows on the ranking metric (pairTest,
// Holm-adjusted over all pairs), ranks each row by how many rows are
// significantly better, sorts the rows by rank and median, and letters
// them (metrics.CompactLetters).
func (c *Comparison) rank() {
	type pair struct {
		i, j    int
		iBetter bool
	}
	var pairs []pair
	var p []float64
	repetitions, repeated := c.repetitions()
	for i := range c.Rows {
		for j := i + 1; j < len(c.Rows); j++ {
			if len(c.Rows[i].ranked) < 2 || len(c.Rows[j].ranked) < 2 {
				continue
			}
			var reps [][]float64
			if repeated[i] && repeated[j] {
				c.Repeated++
				reps = repetitions
			}
			pv, iBetter := c.pairTest(i, j, reps)
			pairs = append(pairs, pair{i, j, iBetter})
			p = append(p, pv)
		}
	}
	c.Pairs = len(pairs)
	adjusted := metrics.Holm(p)
	better := make([]int, len(c.Rows))
	differ := map[[2]int]bool{}
	for k, pr := range pairs {
		if !(adjusted[k] < session.Alpha) {
			continue
		}
		differ[[2]int{pr.i, pr.j}], differ[[2]int{pr.j, pr.i}] = true, true
		if pr.iBetter {
			better[pr.j]++
		} else {
			better[pr.i]++
		}
	}
	for i := range c.Rows {
		c.Rows[i].Rank = 1 + better[i]
		if !c.testable(i, repeated) {
			c.Rows[i].Rank = 0 // no test could tell it apart from any other: a rank would claim a tie nothing showed
		}
	}
	order := make([]int, len(c.Rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := c.Rows[a].Rank, c.Rows[b].Rank
		if ra == 0 {
			ra = math.MaxInt
		}
		if rb == 0 {
			rb = math.MaxInt
		}
		if ra != rb {
			return ra - rb
		}
		order := cmp.Compare(metrics.Median(c.Rows[a].ranked), metrics.Median(c.Rows[b].ranked))
		if c.RankBy.HigherIsBetter {
			order = -order
		}
		return order
	})
	sorted := make([]Row, len(c.Rows))
	for k, i := range order {
		sorted[k] = c.Rows[i]
	}
	// Letters for the ranked rows, in the order shown.
	var ranked []int
	for k, i := range order {
		if sorted[k].Rank > 0 {
			ranked = append(ranked, i)
		}
	}
	if letters, ok := metrics.CompactLetters(len(ranked), func(x, y int) bool { return differ[[2]int{ranked[x], ranked[y]}] }); ok {
		for k := range ranked {
			sorted[k].Group = letters[k]
		}
	}
	c.Rows = sorted
}

// axisMeans summarises each axis value across the other axes by
// geometric means of its rows' medians. Only matched rows count: those
// whose other values (and arm) were run with every value of the axis, so
// that no value's mean leans on combinations the others lack (a dtype
// that only one model can take would otherwise inherit that model's
// speed).
func (c *Comparison) axisMeans() {
	for k, axis := range c.Axes {
		var values []string
		groups := map[string]map[string]*Row{} // the other values → this axis's value → row
		for i := range c.Rows {
			r := &c.Rows[i]
			if k >= len(r.Values) || r.N == 0 {
				continue
			}
			if !slices.Contains(values, r.Values[k]) {
				values = append(values, r.Values[k])
			}
			others := slices.Clone(r.Values)
			others[k] = ""
			key := strings.Join(others, "\x00") + "\x00" + r.Arm
			if groups[key] == nil {
				groups[key] = map[string]*Row{}
			}
			groups[key][r.Values[k]] = r
		}
		means := make([]AxisMean, len(values))
		for i, v := range values {
			means[i] = AxisMean{Axis: axis, Value: v}
		}
		for _, g := range groups {
			if len(g) != len(values) {
				continue // unmatched: some value of the axis never ran with these others
			}
			for i, v := range values {
				means[i].Rows++
				means[i].E2E += math.Log(g[v].E2E.Value)
				means[i].TokensPerS += math.Log(g[v].TokensPerS)
			}
		}
		if len(values) < 2 || means[0].Rows == 0 {
			continue
		}
		lowest := math.Inf(1)
		for i := range means {
			means[i].E2E = math.Exp(means[i].E2E / float64(means[i].Rows))
			means[i].TokensPerS = math.Exp(means[i].TokensPerS / float64(means[i].Rows))
			lowest = math.Min(lowest, means[i].E2E)
		}
		for i := range means {
			means[i].E2ERatioVsFaster = means[i].E2E / lowest
		}
		c.Means = append(c.Means, means...)
	}
}

// Method says how the ranks, groups and means were reached.
func (c *Comparison) Method() string {
	tests := fmt.Sprintf("Mann-Whitney on each pair's pooled trials, %d pairs", c.Pairs)
	overRepetitions := "Welch's t test on the logs of their repetitions' medians, each cell on its own variance between repetitions"
	effect := "P(X < Y) for Mann-Whitney, the ratio of geometric means for the t test"
	if !c.logScale {
		overRepetitions = "Welch's t test on their repetitions' medians (some are not above zero, so not on their logs), each cell on its own variance between repetitions"
		effect = "P(X < Y) for Mann-Whitney, the difference of the means of the medians for the t test"
	}
	better := "faster in e2e"
	switch {
	case c.RankBy.Name == "j_per_token":
		better = "lower in energy per token"
	case c.RankBy.Name != "e2e_ms" && c.RankBy.HigherIsBetter:
		better = "higher in " + c.RankBy.Label
	case c.RankBy.Name != "e2e_ms":
		better = "lower in " + c.RankBy.Label
	}
	switch {
	case c.Repeated == c.Pairs && c.Pairs > 0:
		tests = fmt.Sprintf("%s, %d pairs", overRepetitions, c.Pairs)
	case c.Repeated > 0:
		tests = fmt.Sprintf("%d of %d pairs by %s, the rest by Mann-Whitney on pooled trials", c.Repeated, c.Pairs, overRepetitions)
	}
	return fmt.Sprintf("rank: 1 + the rows significantly %s (%s, Holm-adjusted, p < %g; which is better comes from the test's own effect: "+
		"%s); "+
		"group: rows that share a letter are told apart by no test, rows with no letter in common differ significantly "+
		"(a compact letter display: the tests are not transitive, so equal ranks do not mean that); "+
		"— for a row with too few trials for any test to tell it apart; "+
		"intervals: bootstrap percentile 95%%; per axis value: geometric means of its rows' medians across the other axes, over matched rows only "+
		"(each combination of the other axes that ran with every value of this one)", better, tests, session.Alpha, effect)
}

// PhaseSplitMethod says how the phase split's lines (Fits) are made, for
// each form of the comparison to print above them.
const PhaseSplitMethod = "phase split (a least-squares line through each group's sessions, each its trials' median; the slope's 95% interval " +
	"holds the drift between sessions, so a grid without repetitions has few points and wide intervals or none; n counts sessions)"

var rowColumns = []string{"rank", "cell", "label", "arm", "n", "sessions", "e2e_median_ms", "e2e_median_lo", "e2e_median_hi",
	"e2e_mean_ms", "e2e_mean_lo", "e2e_mean_hi", "ttft_median_ms", "tpot_median_ms", "output_tps", "j_per_token", "usd_per_1m_tokens",
	"ttft_median_lo", "ttft_median_hi", "tpot_median_lo", "tpot_median_hi", "group", "icc",
	"j_per_token_lo", "j_per_token_hi", "energy", "avg_power_w"}

func (r *Row) cells() []string {
	num := func(v float64) string { return session.FormatValue(v) }
	rank := strconv.Itoa(r.Rank)
	if r.Rank == 0 {
		rank = "—"
	}
	return []string{rank, r.Cell, r.Label, r.Arm, strconv.Itoa(r.N), strconv.Itoa(r.Sessions), num(r.E2E.Value), num(r.E2E.Lo), num(r.E2E.Hi),
		num(r.Mean.Value), num(r.Mean.Lo), num(r.Mean.Hi), num(r.TTFT.Value), num(r.TPOT.Value), num(r.TokensPerS), num(r.Energy.JPerToken), num(r.USDPer1M),
		num(r.TTFT.Lo), num(r.TTFT.Hi), num(r.TPOT.Lo), num(r.TPOT.Hi), cmp.Or(r.Group, "—"), num(r.ICC),
		num(r.Energy.Lo), num(r.Energy.Hi), r.Energy.Cell(), num(r.Energy.AvgPowerW)}
}

// values are the row's cells for JSON: numbers as numbers, and what is
// not known (an unranked row's rank and group, a NaN) as null.
func (r *Row) values() []any {
	rank, group, energy := any(r.Rank), any(r.Group), any(r.Energy.Cell())
	if r.Rank == 0 {
		rank, group = nil, nil
	}
	if r.Energy.N == 0 {
		energy = nil
	}
	num := session.JSONNumber
	return []any{rank, r.Cell, r.Label, r.Arm, r.N, r.Sessions, num(r.E2E.Value), num(r.E2E.Lo), num(r.E2E.Hi),
		num(r.Mean.Value), num(r.Mean.Lo), num(r.Mean.Hi), num(r.TTFT.Value), num(r.TPOT.Value), num(r.TokensPerS), num(r.Energy.JPerToken), num(r.USDPer1M),
		num(r.TTFT.Lo), num(r.TTFT.Hi), num(r.TPOT.Lo), num(r.TPOT.Hi), group, num(r.ICC),
		num(r.Energy.Lo), num(r.Energy.Hi), energy, num(r.Energy.AvgPowerW)}
}

// Write prints the comparison as text, md, csv or json.
func (c *Comparison) Write(w io.Writer, format string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(rowColumns)
		for i := range c.Rows {
			cells := c.Rows[i].cells()
			for k, v := range cells {
				if v == "—" {
					cells[k] = ""
				}
			}
			cw.Write(cells)
		}
		cw.Flush()
		return cw.Error()
	case "json":
		type row map[string]any
		out := struct {
			Grid    string     `json:"grid"`
			Axes    []string   `json:"axes"`
			Rows    []row      `json:"rows"`
			Means   []AxisMean `json:"axis_means"`
			Fits    []string   `json:"phase_fits,omitempty"`
			Method  string     `json:"method"`
			Caveats []string   `json:"caveats"`
		}{Grid: c.Name, Axes: c.Axes, Means: c.Means, Method: c.Method(), Caveats: c.Caveats}
		for _, f := range c.Fits {
			out.Fits = append(out.Fits, fmt.Sprintf("%s, %s: %s (n %d)", f.Group, f.What, f.Words, f.N))
		}
		for i := range c.Rows {
			r := row{}
			for k, v := range c.Rows[i].values() {
				r[rowColumns[k]] = v
			}
			out.Rows = append(out.Rows, r)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	md := format == "md"
	var b strings.Builder
	for _, cv := range c.Caveats {
		if md {
			b.WriteString("- **Caveat:** " + cv + "\n")
		} else {
			b.WriteString(session.WrapText("caveat: "+cv, c.Width) + "\n")
		}
	}
	if len(c.Caveats) > 0 {
		b.WriteString("\n")
	}
	energy := slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Energy.N > 0 }) // a column only where measured
	header := []string{"rank", "group", "cell", strings.Join(c.Axes, " · "), "arm", "n", "e2e median [95% CI] ms", "mean", "TTFT p50 [95% CI]", "TPOT p50 [95% CI]", "tok/s"}
	cost := slices.ContainsFunc(c.Rows, func(r Row) bool { return !math.IsNaN(r.USDPer1M) })
	if energy {
		header = append(header, "J/token")
	}
	if cost {
		header = append(header, "$/1M tokens")
	}
	rows := [][]string{header}
	for i := range c.Rows {
		r := &c.Rows[i]
		cells := r.cells()
		row := []string{cells[0], cells[21], r.Cell, r.Label, r.Arm, cells[4],
			fmt.Sprintf("%s [%s, %s]", cells[6], cells[7], cells[8]), cells[9],
			fmt.Sprintf("%s [%s, %s]", cells[12], cells[17], cells[18]), fmt.Sprintf("%s [%s, %s]", cells[13], cells[19], cells[20]), cells[14]}
		if energy {
			row = append(row, cells[25]) // "≈ idle" where that is all it is
		}
		if cost {
			row = append(row, cells[16])
		}
		rows = append(rows, row)
	}
	// The first block names the cells (rank, group, cell, axes); the
	// rest repeat only the cell id.
	writeTable(&b, rows, md, 4, c.Width, 2)
	b.WriteString("\n")
	means := [][]string{{"axis", "value", "matched rows", "e2e geomean (ms)", "vs fastest", "tok/s geomean"}}
	for _, a := range c.Means {
		means = append(means, []string{a.Axis, a.Value, strconv.Itoa(a.Rows), session.FormatValue(a.E2E), fmt.Sprintf("%.2f×", a.E2ERatioVsFaster), session.FormatValue(a.TokensPerS)})
	}
	writeTable(&b, means, md, 2, c.Width, 0, 1)
	if len(c.Fits) > 0 {
		b.WriteString("\n" + session.WrapText(PhaseSplitMethod+":", c.Width) + "\n")
		for _, f := range c.Fits {
			prefix := "  "
			if md {
				prefix = "- "
			}
			b.WriteString(session.WrapText(fmt.Sprintf("%s%s, %s: %s (n %d)", prefix, f.Group, f.What, f.Words, f.N), c.Width) + "\n")
		}
	}
	b.WriteString("\n" + session.WrapText(c.Method(), c.Width) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable prints rows as Markdown or as text that fits width in
// blocks: the first begins with the key columns, the rest with repeat.
func writeTable(b *strings.Builder, rows [][]string, md bool, key, width int, repeat ...int) {
	if md {
		for i, r := range rows {
			b.WriteString("| " + strings.Join(r, " | ") + " |\n")
			if i == 0 {
				b.WriteString("|" + strings.Repeat(" --- |", len(r)) + "\n")
			}
		}
		return
	}
	session.TextTable{Rows: rows, Key: key, Repeat: repeat, Width: width}.Write(b)
}
