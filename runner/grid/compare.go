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
	"text/tabwriter"

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
	// TokensPerS is Σ tokens / Σ time; JPerToken the median where energy
	// was measured (NaN otherwise).
	TokensPerS, JPerToken float64
	// USDPer1M is the cost of a million output tokens at the profile's
	// usd_per_hour (NaN without one).
	USDPer1M float64
	// Rank is 1 plus the number of rows significantly faster in e2e
	// (Holm-adjusted pairwise Mann-Whitney tests), so rows that no test
	// tells apart share a rank; 0 (unranked) for a row too small for any
	// test to tell apart.
	Rank     int
	Sessions int
	e2e      []float64
	// perSession are the counted trials of each of its sessions: the
	// phase fits take a session as one point, so that drift between
	// sessions shows in their intervals.
	perSession [][]*session.Record
	weightMB   float64 // the model's weights (the built-in engine says), NaN when unknown
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

// Comparison is the grid's cells side by side.
type Comparison struct {
	Name    string
	Axes    []string
	Rows    []Row
	Means   []AxisMean
	Caveats []string
	// Pairs is how many pairwise tests the ranks rest on.
	Pairs int
	// Fits split the time into its phases (TR121) where the grid varies
	// what they scale with.
	Fits []PhaseFit
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
// cells. opts seeds and sizes the bootstrap intervals.
func Compare(dir string, opts session.TestOptions) (*Comparison, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not a grid folder: %w", dir, err)
	}
	m, err := decodeManifest(path, data)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Name: m.Name, Axes: m.Axes}
	e2eMetric, _ := session.LookupMetric("e2e_ms")
	metric := func(name string) session.Metric { mt, _ := session.LookupMetric(name); return mt }
	for _, cell := range m.Cells {
		byArm := map[string][]*session.Record{}
		bySession := map[string][][]*session.Record{}
		weight := map[string]float64{}
		usdPerHour := 0.0
		var arms []string
		sessions := 0
		for _, run := range cell.Runs {
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
			usdPerHour = s.Manifest.Profile.USDPerHour
			c.Caveats = append(c.Caveats, prefixed(cell.ID+" ", session.SessionCaveats(s))...)
			for arm, recs := range session.ByArm(s.Records) {
				if !slices.Contains(arms, arm) {
					arms = append(arms, arm)
				}
				mb, err := strconv.ParseFloat(s.Manifest.TargetOf(arm).Details["weight_mb"], 64)
				if err != nil {
					mb = math.NaN()
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
			r := Row{Cell: cell.ID, Label: cell.Label, Values: cell.Values, Arm: arm, N: len(recs), Sessions: sessions, e2e: e2e, perSession: bySession[arm], weightMB: weight[arm],
				E2E:        median(e2e, opts),
				Mean:       metrics.Estimate{Value: metrics.Mean(e2e), CI: metrics.Bootstrap(e2e, metrics.Mean, opts.Resamples, opts.Seed)},
				TTFT:       median(session.Values(recs, metric("ttft_ms")), opts),
				TPOT:       median(session.Values(recs, metric("tpot_ms")), opts),
				TokensPerS: metric("output_tps").Pooled(recs),
				JPerToken:  metrics.Median(session.Values(recs, metric("j_per_token"))),
				USDPer1M:   math.NaN(),
			}
			if usdPerHour > 0 && r.TokensPerS > 0 {
				r.USDPer1M = (1e6 / r.TokensPerS) / 3600 * usdPerHour // the summary's rule (DESIGN.md)
			}
			c.Rows = append(c.Rows, r)
		}
	}
	c.axisMeans() // before rank sorts the rows: each axis's values in the grid's order
	c.rank()
	c.phaseFits()
	return c, nil
}

// slopeWords says a slope in ms per scale units of x (unit), with its
// interval and whether that interval holds no change.
func slopeWords(f metrics.LinearFit, scale float64, unit string) string {
	verb := "rises"
	if f.Slope < 0 {
		verb = "falls"
	}
	line := fmt.Sprintf("%s %s ms %s", verb, session.FormatValue(math.Abs(scale*f.Slope)), unit)
	switch {
	case math.IsNaN(f.SlopeCI.Lo):
		return line + fmt.Sprintf(" (no interval from %d sessions: repetitions give one)", f.N)
	case f.SlopeCI.Lo <= 0 && f.SlopeCI.Hi >= 0:
		line += ", not significantly"
	}
	return line + fmt.Sprintf(" [%s, %s]", session.FormatValue(scale*f.SlopeCI.Lo), session.FormatValue(scale*f.SlopeCI.Hi))
}

// inverseRate is the slope read as a rate, scale/slope in unit, with its
// interval, for a slope known to be positive: where the slope's interval
// reaches zero its reciprocal could be any rate, or none, so it says
// nothing. With no interval (one session per point) it gives the estimate
// alone, as slopeWords does.
func inverseRate(f metrics.LinearFit, scale float64, unit, gloss string) string {
	switch {
	case !(f.Slope > 0):
		return ""
	case math.IsNaN(f.SlopeCI.Lo):
		return fmt.Sprintf(" (1/slope: %s %s%s)", session.FormatValue(scale/f.Slope), unit, gloss)
	case f.SlopeCI.Lo <= 0:
		return ""
	}
	return fmt.Sprintf(" (1/slope: %s %s [%s, %s]%s)", session.FormatValue(scale/f.Slope), unit,
		session.FormatValue(scale/f.SlopeCI.Hi), session.FormatValue(scale/f.SlopeCI.Lo), gloss)
}

// phaseFits fits, over each group of cells alike in every other axis
// (one point per session: its trials' mean x and median y, since trials
// of one session share its drift and are not independent of it),
// TTFT against the prompt's tokens (prefill) where the grid varies
// prompt_words, the time per output token against the weights' size
// (decode reads every weight per token) where it varies model or dtype,
// and against the context where it varies max_tokens or prompt_words.
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
		{"TTFT against prompt tokens", []string{"prompt_words"}, promptTokens, func(t *session.Record) float64 { return t.TTFTMs },
			func(f metrics.LinearFit) string {
				return "TTFT " + slopeWords(f, 1000, "per 1,000 prompt tokens") + inverseRate(f, 1000, "prompt tokens/s", "")
			}},
		{"TPOT against weight size", []string{"model", "dtype"}, func(r *Row, _ *session.Record) float64 { return r.weightMB },
			func(t *session.Record) float64 { return t.TPOTMs },
			func(f metrics.LinearFit) string {
				return "TPOT " + slopeWords(f, 1000, "per GB of weights") + inverseRate(f, 1, "GB/s", ", the rate if decode only read the weights")
			}},
		{"TPOT against context", []string{"max_tokens", "prompt_words"}, func(_ *Row, t *session.Record) float64 {
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
			c.Fits = append(c.Fits, PhaseFit{Group: key, What: spec.what, LinearFit: f, Words: spec.words(f)})
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

// testable reports whether some pair of row i could reach significance:
// the smallest p-value a Mann-Whitney test of its trials against another
// row's can reach is below α over all the pairs (Holm's first step, the
// most lenient). A row of a few trials (a cell cut short) cannot, and a
// rank of 1 by default would read as "as fast as the fastest".
func (c *Comparison) testable(i int) bool {
	if len(c.Rows[i].e2e) < 2 || c.Pairs == 0 {
		return false
	}
	for j := range c.Rows {
		if j != i && len(c.Rows[j].e2e) >= 2 && metrics.MannWhitneyCanReject(len(c.Rows[i].e2e), len(c.Rows[j].e2e), session.Alpha/float64(c.Pairs)) {
			return true
		}
	}
	return false
}

// rank tests every pair of rows on e2e (Mann-Whitney, Holm-adjusted over
// all pairs) and ranks each row by how many rows are significantly
// faster; rows are then sorted by rank and median.
func (c *Comparison) rank() {
	type pair struct{ i, j int }
	var pairs []pair
	var p []float64
	for i := range c.Rows {
		for j := i + 1; j < len(c.Rows); j++ {
			if len(c.Rows[i].e2e) < 2 || len(c.Rows[j].e2e) < 2 {
				continue
			}
			pairs = append(pairs, pair{i, j})
			p = append(p, metrics.MannWhitney(c.Rows[i].e2e, c.Rows[j].e2e).P)
		}
	}
	c.Pairs = len(pairs)
	adjusted := metrics.Holm(p)
	faster := make([]int, len(c.Rows))
	for k, pr := range pairs {
		if !(adjusted[k] < session.Alpha) {
			continue
		}
		a, b := c.Rows[pr.i], c.Rows[pr.j]
		if a.E2E.Value < b.E2E.Value {
			faster[pr.j]++
		} else {
			faster[pr.i]++
		}
	}
	for i := range c.Rows {
		c.Rows[i].Rank = 1 + faster[i]
		if !c.testable(i) {
			c.Rows[i].Rank = 0 // no test could tell it apart from any other: a rank would claim a tie nothing showed
		}
	}
	slices.SortStableFunc(c.Rows, func(a, b Row) int {
		ra, rb := a.Rank, b.Rank
		if ra == 0 {
			ra = math.MaxInt
		}
		if rb == 0 {
			rb = math.MaxInt
		}
		if ra != rb {
			return ra - rb
		}
		return cmp.Compare(a.E2E.Value, b.E2E.Value)
	})
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

// Method says how the ranks and means were reached.
func (c *Comparison) Method() string {
	return fmt.Sprintf("rank: 1 + the rows significantly faster in e2e (Mann-Whitney over each pair, %d pairs, Holm-adjusted, p < %g), so rows no test tells apart share a rank; "+
		"— for a row with too few trials for any test to tell it apart; "+
		"intervals: bootstrap percentile 95%%; per axis value: geometric means of its rows' medians across the other axes, over matched rows only "+
		"(each combination of the other axes that ran with every value of this one)", c.Pairs, session.Alpha)
}

// PhaseSplitMethod says how the phase split's lines (Fits) are made, for
// each form of the comparison to print above them.
const PhaseSplitMethod = "phase split (a least-squares line through each group's sessions, each its trials' median; the slope's 95% interval " +
	"holds the drift between sessions, so a grid without repetitions has few points and wide intervals or none; n counts sessions)"

var rowColumns = []string{"rank", "cell", "label", "arm", "n", "sessions", "e2e_median_ms", "e2e_median_lo", "e2e_median_hi",
	"e2e_mean_ms", "e2e_mean_lo", "e2e_mean_hi", "ttft_median_ms", "tpot_median_ms", "output_tps", "j_per_token", "usd_per_1m_tokens",
	"ttft_median_lo", "ttft_median_hi", "tpot_median_lo", "tpot_median_hi"}

func (r *Row) cells() []string {
	num := func(v float64) string { return session.FormatValue(v) }
	rank := strconv.Itoa(r.Rank)
	if r.Rank == 0 {
		rank = "—"
	}
	return []string{rank, r.Cell, r.Label, r.Arm, strconv.Itoa(r.N), strconv.Itoa(r.Sessions), num(r.E2E.Value), num(r.E2E.Lo), num(r.E2E.Hi),
		num(r.Mean.Value), num(r.Mean.Lo), num(r.Mean.Hi), num(r.TTFT.Value), num(r.TPOT.Value), num(r.TokensPerS), num(r.JPerToken), num(r.USDPer1M),
		num(r.TTFT.Lo), num(r.TTFT.Hi), num(r.TPOT.Lo), num(r.TPOT.Hi)}
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
		type row map[string]string
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
			for k, v := range c.Rows[i].cells() {
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
			b.WriteString("caveat: " + cv + "\n")
		}
	}
	if len(c.Caveats) > 0 {
		b.WriteString("\n")
	}
	energy := slices.ContainsFunc(c.Rows, func(r Row) bool { return !math.IsNaN(r.JPerToken) }) // a column only where measured
	header := []string{"rank", "cell", strings.Join(c.Axes, " · "), "arm", "n", "e2e median [95% CI] ms", "mean", "TTFT p50 [95% CI]", "TPOT p50 [95% CI]", "tok/s"}
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
		row := []string{cells[0], r.Cell, r.Label, r.Arm, cells[4],
			fmt.Sprintf("%s [%s, %s]", cells[6], cells[7], cells[8]), cells[9],
			fmt.Sprintf("%s [%s, %s]", cells[12], cells[17], cells[18]), fmt.Sprintf("%s [%s, %s]", cells[13], cells[19], cells[20]), cells[14]}
		if energy {
			row = append(row, cells[15])
		}
		if cost {
			row = append(row, cells[16])
		}
		rows = append(rows, row)
	}
	writeTable(&b, rows, md)
	b.WriteString("\n")
	means := [][]string{{"axis", "value", "matched rows", "e2e geomean (ms)", "vs fastest", "tok/s geomean"}}
	for _, a := range c.Means {
		means = append(means, []string{a.Axis, a.Value, strconv.Itoa(a.Rows), session.FormatValue(a.E2E), fmt.Sprintf("%.2f×", a.E2ERatioVsFaster), session.FormatValue(a.TokensPerS)})
	}
	writeTable(&b, means, md)
	if len(c.Fits) > 0 {
		b.WriteString("\n" + PhaseSplitMethod + ":\n")
		for _, f := range c.Fits {
			prefix := "  "
			if md {
				prefix = "- "
			}
			b.WriteString(fmt.Sprintf("%s%s, %s: %s (n %d)\n", prefix, f.Group, f.What, f.Words, f.N))
		}
	}
	b.WriteString("\n" + c.Method() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTable(b *strings.Builder, rows [][]string, md bool) {
	if md {
		for i, r := range rows {
			b.WriteString("| " + strings.Join(r, " | ") + " |\n")
			if i == 0 {
				b.WriteString("|" + strings.Repeat(" --- |", len(r)) + "\n")
			}
		}
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
