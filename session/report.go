package session

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/metrics"
)

// earlyTrials is how many timed trials right after the warmup count as
// "early" when outliers are attributed to a warmup that was too short.
const earlyTrials = 5

// trendP is the significance below which the timed trials MSER-5 would
// drop count as still trending.
const trendP = 0.01

// ArmReport is one arm's repeatability: how its e2e is distributed, how
// fast its mean settled, how many trials its statistics need, and whether
// its warmup fit.
type ArmReport struct {
	Arm           string
	N, Warmup     int // counted timed trials, warmup trials that succeeded
	Median, Mean  float64
	CV            metrics.Estimate
	Shape         metrics.Shape
	OutlierTrials []int // trial numbers beyond Tukey's fences
	EarlyOutliers int   // how many of those were among the first timed trials
	ConvergedAt   int
	ConvergeTol   float64
	// Trials needed for 95% confidence within ±1% and ±5%.
	MeanNeeds1, MeanNeeds5 int
	P95Needs5, P99Needs5   metrics.QuantileNeed
	WarmupRatio            float64
	// Settle is where MSER-5 finds the series (warmup and timed, in
	// order) settled; SettleKnown is false below 20 trials.
	Settle        int
	SettleKnown   bool
	WarmupVerdict string
	StoppedBy     string
	// Reasoning is a reasoning model's thinking against its output over
	// the counted trials; its ReasoningMean is 0 where the model did not
	// reason, NaN where that is not known.
	Reasoning Reasoning
	// TokenNotes say what its ITL is between where that is not one token
	// and the next (see TokenNotes).
	TokenNotes []string
	// Curve is the running mean, its 95% CI half-width and the running CV
	// after each timed trial.
	Curve []metrics.Point
	// Dependence is how much each timed trial's e2e tells of the next's:
	// where material, the CV interval is a block bootstrap's and the
	// trials needed for the mean are scaled up to match.
	Dependence metrics.Dependence
	// Energy is its energy per token (EnergyOf); N is 0 where no trial
	// had energy.
	Energy EnergyFigure
	// Replicas are its rows per replica where it ran on a fleet, and
	// ReplicaWords which of them differ (nil on one server).
	Replicas     []ReplicaRow
	ReplicaWords []string
}

// Report is a session's repeatability report, on e2e latency.
type Report struct {
	Session string
	// Caveats come first: a stop rule's target not reached, an
	// unfinished run, degraded, truncated or cached trials.
	Caveats []string
	// Reached is what the stop rule reached, where every arm reached its
	// target (else the first caveat says how far they got).
	Reached string
	// Load is a load run's results (LoadResults.Lines); nil otherwise.
	Load []string
	// Models are, where the arms run different models, each one's
	// per-token latency, decode rate and memory (Comparison.ModelRows).
	Models  []ModelRow
	Arms    []ArmReport
	Options TestOptions
}

// BuildReport computes the repeatability report of a session.
func BuildReport(s *Session, opts TestOptions) *Report {
	r := &Report{Session: FileStem(s.Path), Options: opts, Caveats: SessionCaveats(s)}
	if p := s.Precision(); !p.Missed {
		r.Reached = p.Line
	}
	if res, err := s.LoadResults(); err != nil {
		r.Caveats = append(r.Caveats, "no load results: "+err.Error())
	} else if res != nil {
		r.Load = res.Lines()
	}
	r.Models = ModelsOf(s)
	groups := ByArm(s.Records)
	for _, arm := range armOrder(s) {
		a := armReport(arm, groups[arm], s.Manifest.Summary[arm], opts)
		a.Energy = EnergyOf(Counted(groups[arm]), s.Manifest.Power)
		a.Replicas = ReplicasOf(groups[arm], s.Manifest.TargetOf(arm).Replicas)
		a.ReplicaWords = ReplicaWords(groups[arm], a.Replicas)
		r.Arms = append(r.Arms, a)
	}
	return r
}

func armReport(arm string, records []*Record, summary ArmSummary, opts TestOptions) ArmReport {
	counted := Counted(records)
	a := ArmReport{Arm: arm, StoppedBy: summary.StoppedBy, ConvergeTol: summary.ConvergeTolerance,
		Reasoning: ReasoningOf(counted), TokenNotes: TokenNotes(arm, counted)}
	if a.ConvergeTol == 0 {
		a.ConvergeTol = 0.01
	}
	var series, timed, warmup []float64
	var timedTrials []int
	// The timed trials are the counted ones, as everywhere: a load
	// block's ramp-up and drain requests are not among them.
	for _, rec := range records {
		switch {
		case rec.Phase == PhaseWarmup && rec.Status == StatusOK:
			warmup = append(warmup, rec.E2EMs)
		case rec.Counted():
			timed = append(timed, rec.E2EMs)
			timedTrials = append(timedTrials, rec.Trial)
		default:
			continue
		}
		series = append(series, rec.E2EMs)
	}
	a.N, a.Warmup = len(timed), len(warmup)
	st := metrics.Describe(timed)
	a.Median, a.Mean = st.Median, st.Mean
	a.Dependence = metrics.DependenceOf(timed)
	a.CV = metrics.Estimate{Value: st.CV, CI: a.Dependence.Interval(timed, metrics.CV, opts.Resamples, opts.Seed)}
	a.Shape = metrics.DescribeShape(timed)
	for _, i := range a.Shape.Outliers {
		a.OutlierTrials = append(a.OutlierTrials, timedTrials[i])
		if i < earlyTrials {
			a.EarlyOutliers++
		}
	}
	a.ConvergedAt = metrics.ConvergedAt(timed, a.ConvergeTol)
	a.MeanNeeds1, a.MeanNeeds5 = metrics.TrialsForMean(st.CV, 0.01), metrics.TrialsForMean(st.CV, 0.05)
	if d := a.Dependence; d.Material { // correlated trials are worth fewer independent ones
		inflate := func(n int) int { return min(metrics.TooManyTrials, int(math.Ceil(float64(n)*(1+d.R)/(1-d.R)))) }
		a.MeanNeeds1, a.MeanNeeds5 = inflate(a.MeanNeeds1), inflate(a.MeanNeeds5)
	}
	ascending := slices.Sorted(slices.Values(timed))
	a.P95Needs5, a.P99Needs5 = metrics.TrialsForQuantile(ascending, 0.95, 0.05), metrics.TrialsForQuantile(ascending, 0.99, 0.05)
	a.WarmupRatio = metrics.Describe(warmup).Median / st.Median
	var s metrics.Series
	for _, v := range timed {
		a.Curve = append(a.Curve, s.Add(v))
	}
	a.Settle, a.SettleKnown = metrics.MSER5(series)
	a.WarmupVerdict = warmupVerdict(series, a.Warmup, a.Settle, a.SettleKnown)
	return a
}

// warmupVerdict judges the fixed warmup against where MSER-5 finds the
// series settled. A settling point inside the timed trials counts only
// when the timed trials before it differ significantly from those after
// (Mann-Whitney p < 0.01): MSER-5 alone also reacts to noise.
func warmupVerdict(series []float64, warmup, settle int, known bool) string {
	switch {
	case !known:
		return fmt.Sprintf("too few trials to judge the warmup (MSER-5 needs 20, this arm has %d)", len(series))
	case settle > warmup:
		mw := metrics.MannWhitney(series[settle:], series[warmup:settle])
		if mw.P < trendP {
			return fmt.Sprintf("warmup of %d was too short: the series settles after trial %d (MSER-5), and the first %d timed trials differ from the rest (%s); raise warmup to %d",
				warmup, settle, settle-warmup, formatP(mw.P), settle)
		}
		return fmt.Sprintf("warmup of %d is enough: MSER-5 marks trial %d, but the timed trials before it do not differ from the rest (%s)",
			warmup, settle, formatP(mw.P))
	case settle+metrics.MSERBatch <= warmup:
		return fmt.Sprintf("warmup of %d was longer than needed: the series %s (MSER-5)", warmup, settledWords(settle))
	case warmup == 0:
		return "no warmup needed: the series is steady from the first trial (MSER-5)"
	}
	return fmt.Sprintf("warmup of %d fits: the series %s (MSER-5)", warmup, settledWords(settle))
}

func settledWords(settle int) string {
	if settle == 0 {
		return "is steady from the first trial"
	}
	return fmt.Sprintf("settles after %d trials", settle)
}

// Write renders the report in one of Formats.
func (r *Report) Write(w io.Writer, format string) error {
	text := func(w io.Writer) error { return r.writeText(w, "", "  ") }
	md := func(w io.Writer) error { return r.writeText(w, "### ", "- ") }
	return writers{text, md, r.writeCSV, r.writeJSON}.write(w, format)
}

// Lines are the report as text: a heading per arm and its facts.
func (r *Report) Lines(heading, item string) []string {
	var lines []string
	prefix := "caveat: "
	if bullet := strings.TrimSpace(item); bullet != "" { // Markdown: a list item each
		prefix = bullet + " **Caveat:** "
	}
	if r.Reached != "" {
		lines = append(lines, "stopped: "+r.Reached)
	}
	for _, c := range r.Caveats {
		lines = append(lines, prefix+c)
	}
	if len(lines) > 0 {
		lines = append(lines, "")
	}
	if len(r.Load) > 0 {
		lines = append(lines, heading+"load")
		for _, l := range r.Load {
			lines = append(lines, item+l)
		}
		lines = append(lines, "")
	}
	if len(r.Models) > 0 {
		// A line a model, as the headless summary says them: as a
		// table, eight columns did not fit a terminal's 80.
		_, notes := ModelsTable(r.Models)
		lines = append(lines, heading+"models")
		for _, m := range r.Models {
			lines = append(lines, item+m.Words())
		}
		for _, n := range notes {
			lines = append(lines, item+n)
		}
		lines = append(lines, "")
	}
	add := func(label, format string, args ...any) {
		lines = append(lines, fmt.Sprintf("%s%-10s %s", item, label, fmt.Sprintf(format, args...)))
	}
	for _, a := range r.Arms {
		lines = append(lines, fmt.Sprintf("%s%s: %d timed trials (+%d warmup), e2e median %s ms, mean %s ms",
			heading, a.Arm, a.N, a.Warmup, FormatValue(a.Median), FormatValue(a.Mean)))
		if a.N < 2 {
			lines = append(lines, item+"too few timed trials to describe", "")
			continue
		}
		add("spread", "CV %s; %s; %s", formatEstimate(a.CV), skewWords(a.Shape.Skewness), modalityWords(a.Shape.Bimodality))
		add("outliers", "%s", outlierWords(a))
		if a.ConvergedAt > 0 {
			add("converged", "running mean within ±%g%% of its final value from n = %d on (held for %d trials)", a.ConvergeTol*100, a.ConvergedAt, a.N-a.ConvergedAt+1)
		} else {
			add("converged", "no: the running mean has not stayed within ±%g%% of its final value for the last %d trials", a.ConvergeTol*100, metrics.SettledFor(a.N))
		}
		add("needed", "for 95%% confidence: mean ±1%% %s, ±5%% %s; p95 ±5%% %s; p99 ±5%% %s",
			trialsWords(a.MeanNeeds1), trialsWords(a.MeanNeeds5), needWords(a.P95Needs5), needWords(a.P99Needs5))
		add("warmup", "ratio %s; %s", FormatValue(a.WarmupRatio), a.WarmupVerdict)
		add("drift", "%s", dependenceWords(a.Dependence, a.N))
		if r := a.Reasoning; r.ReasoningMean > 0 {
			add("reasoning", "%s of %s output tokens were thinking (means); TTFT median %s ms (its first token), TTFO median %s ms (the answer's first)",
				FormatValue(r.ReasoningMean), FormatValue(r.OutputMean), FormatValue(r.TTFTMedian), FormatValue(r.TTFOMedian))
		}
		if a.Energy.N > 0 {
			add("energy", "%s", a.Energy.Words())
		}
		if len(a.Replicas) > 0 {
			lines = append(lines, item+"replicas:")
			for _, l := range ReplicasTable(a.Replicas).Lines() {
				lines = append(lines, item+"  "+l)
			}
		}
		for _, w := range a.ReplicaWords {
			lines = append(lines, item+w)
		}
		if a.StoppedBy != "" {
			add("stopped", "%s", a.StoppedBy)
		}
		for _, note := range a.TokenNotes {
			lines = append(lines, item+note)
		}
		lines = append(lines, "")
	}
	return append(lines, fmt.Sprintf("e2e latency of timed ok trials; CV interval: bootstrap percentile 95%% (moving-block where the drift line says so), %d resamples, seed %d; outliers: Tukey's fences (1.5 IQR); trials needed: Student t for the mean, order-statistic intervals for p95/p99; warmup: MSER-5. %s.",
		r.Options.Resamples, r.Options.Seed, CVIntervalCaveat))
}

func (r *Report) writeText(w io.Writer, heading, item string) error {
	_, err := io.WriteString(w, strings.Join(r.Lines(heading, item), "\n")+"\n")
	return err
}

func skewWords(g float64) string {
	switch {
	case math.IsNaN(g):
		return "skew unknown"
	case g > 1:
		return fmt.Sprintf("skew %+.2f (a long tail of slow trials)", g)
	case g < -1:
		return fmt.Sprintf("skew %+.2f (a long tail of fast trials)", g)
	}
	return fmt.Sprintf("skew %+.2f (roughly symmetric)", g)
}

func modalityWords(b float64) string {
	switch {
	case math.IsNaN(b):
		return "modality unknown"
	case b > metrics.BimodalityThreshold:
		return fmt.Sprintf("possibly more than one mode (bimodality coefficient %.2f > 0.555)", b)
	}
	return fmt.Sprintf("one mode (bimodality coefficient %.2f)", b)
}

func outlierWords(a ArmReport) string {
	fences := fmt.Sprintf("Tukey's fences (%s..%s ms)", FormatValue(a.Shape.LowFence), FormatValue(a.Shape.HighFence))
	if !(a.Shape.LowFence > 0) { // no e2e lies below zero: only the upper fence can hold one out
		fences = fmt.Sprintf("Tukey's upper fence (%s ms; the lower one is below zero)", FormatValue(a.Shape.HighFence))
	}
	if len(a.OutlierTrials) == 0 {
		return "none beyond " + fences
	}
	trials := make([]string, 0, len(a.OutlierTrials))
	for i, t := range a.OutlierTrials {
		if i == 10 {
			trials = append(trials, fmt.Sprintf("… %d more", len(a.OutlierTrials)-10))
			break
		}
		trials = append(trials, strconv.Itoa(t))
	}
	return fmt.Sprintf("%d beyond %s: trials %s; %d among the first %d timed trials",
		len(a.OutlierTrials), fences, strings.Join(trials, ", "), a.EarlyOutliers, earlyTrials)
}

func needWords(q metrics.QuantileNeed) string {
	if q.AtLeast {
		// Not a count that is cheaper than a p95's: the fewest trials at
		// which the interval exists at all, and likely far more.
		return fmt.Sprintf("more than these trials can tell (its interval needs %s to exist at all)", FormatCount(q.N))
	}
	return trialsWords(q.N)
}

// dependenceWords say whether an arm's trials were independent enough for
// the ordinary bootstrap.
func dependenceWords(d metrics.Dependence, n int) string {
	switch {
	case math.IsNaN(d.R):
		return "lag-1 autocorrelation of e2e: too few trials or no spread"
	case !d.Material:
		return fmt.Sprintf("lag-1 autocorrelation of e2e %.2f: trials independent enough for the ordinary bootstrap (material above 0.1 and 1.96/√n = %.2f)", d.R, 1.96/math.Sqrt(float64(n)))
	}
	return fmt.Sprintf("lag-1 autocorrelation of e2e %.2f: each trial tells of the next, so the %d trials are worth about %s independent ones; "+
		"intervals from a moving-block bootstrap (blocks of %d), trials needed scaled by (1+r)/(1−r)", d.R, n, FormatCount(int(math.Round(d.EffectiveN))), d.Block)
}

// trialsWords says a count of trials needed: "—" when it cannot be
// known, and never a number past metrics.TooManyTrials.
func trialsWords(n int) string {
	switch {
	case n <= 0:
		return "—"
	case n >= metrics.TooManyTrials:
		return "more than " + FormatCount(metrics.TooManyTrials)
	}
	return FormatCount(n)
}

var reportColumns = []string{"arm", "n", "warmup", "median_ms", "mean_ms", "cv", "cv_lo", "cv_hi", "skewness", "bimodality",
	"outliers", "early_outliers", "converged_at", "converge_tolerance", "trials_mean_1pct", "trials_mean_5pct",
	"trials_p95_5pct", "trials_p95_5pct_at_least", "trials_p99_5pct", "trials_p99_5pct_at_least",
	"warmup_ratio", "mser5_settle", "warmup_verdict", "stopped_by", "reasoning_tokens_mean", "output_tokens_mean", "ttft_median_ms", "ttfo_median_ms",
	"lag1_autocorrelation", "bootstrap_block", "effective_n",
	"j_per_token", "j_per_token_lo", "j_per_token_hi", "energy_not_distinguishable_from_idle", "avg_power_w"}

func (a *ArmReport) row() []any {
	settle := any(math.NaN())
	if a.SettleKnown {
		settle = a.Settle
	}
	return []any{a.Arm, a.N, a.Warmup, a.Median, a.Mean, a.CV.Value, a.CV.Lo, a.CV.Hi, a.Shape.Skewness, a.Shape.Bimodality,
		len(a.OutlierTrials), a.EarlyOutliers, a.ConvergedAt, a.ConvergeTol, a.MeanNeeds1, a.MeanNeeds5,
		a.P95Needs5.N, a.P95Needs5.AtLeast, a.P99Needs5.N, a.P99Needs5.AtLeast,
		a.WarmupRatio, settle, a.WarmupVerdict, a.StoppedBy, a.Reasoning.ReasoningMean, a.Reasoning.OutputMean, a.Reasoning.TTFTMedian, a.Reasoning.TTFOMedian,
		a.Dependence.R, a.Dependence.Block, a.Dependence.EffectiveN,
		a.Energy.JPerToken, a.Energy.Lo, a.Energy.Hi, a.Energy.N > 0 && a.Energy.Idle(), a.Energy.AvgPowerW}
}

func (r *Report) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(reportColumns)
	for i := range r.Arms {
		cw.Write(csvCells(r.Arms[i].row()))
	}
	cw.Flush()
	return cw.Error()
}

func (r *Report) writeJSON(w io.Writer) error {
	type point struct {
		N         int `json:"n"`
		Mean      any `json:"mean"`
		HalfWidth any `json:"ci95_half_width"`
		CV        any `json:"cv"`
	}
	type replica struct {
		Replica    int    `json:"replica"`
		URL        string `json:"url,omitempty"`
		N          int    `json:"n"`
		Median     any    `json:"e2e_median_ms"`
		P95        any    `json:"e2e_p95_ms"`
		TokensPerS any    `json:"output_tps"`
	}
	type model struct {
		Arm         string `json:"arm"`
		Model       string `json:"model"`
		N           int    `json:"n"`
		TokenMeanMs any    `json:"per_token_mean_ms"`
		TokenP99Ms  any    `json:"per_token_p99_ms"`
		TokenCV     any    `json:"per_token_cv"`
		DecodeTPS   any    `json:"decode_tps"`
		PeakRSSMB   any    `json:"peak_rss_mb"`
		WeightMB    any    `json:"weight_mib"`
	}
	type arm struct {
		Summary       map[string]any `json:"summary"`
		OutlierTrials []int          `json:"outlier_trials"`
		Curve         []point        `json:"convergence"`
		Replicas      []replica      `json:"replicas,omitempty"`
		ReplicaWords  []string       `json:"replica_words,omitempty"`
	}
	out := struct {
		Session string   `json:"session"`
		Reached string   `json:"reached,omitempty"`
		Caveats []string `json:"caveats"`
		Load    []string `json:"load,omitempty"`
		Models  []model  `json:"models,omitempty"`
		Arms    []arm    `json:"arms"`
	}{Session: r.Session, Reached: r.Reached, Caveats: r.Caveats, Load: r.Load}
	for _, m := range r.Models {
		out.Models = append(out.Models, model{m.Label, m.Model, m.N, JSONNumber(m.TokenMeanMs), JSONNumber(m.TokenP99Ms),
			JSONNumber(m.TokenCV), JSONNumber(m.DecodeTPS), JSONNumber(m.PeakRSSMB), JSONNumber(m.WeightMB)})
	}
	for i := range r.Arms {
		a := &r.Arms[i]
		j := arm{Summary: jsonObject(reportColumns, a.row()), OutlierTrials: a.OutlierTrials, ReplicaWords: a.ReplicaWords}
		for _, r := range a.Replicas {
			j.Replicas = append(j.Replicas, replica{r.Replica, r.URL, r.N, JSONNumber(r.Median), JSONNumber(r.P95), JSONNumber(r.TokensPerS)})
		}
		for _, p := range a.Curve {
			j.Curve = append(j.Curve, point{p.N, JSONNumber(p.Mean), JSONNumber(p.HalfWidth), JSONNumber(p.CV)})
		}
		out.Arms = append(out.Arms, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
