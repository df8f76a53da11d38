package session

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tokentop/tokentop/metrics"
)

// Alpha is the significance level of every verdict, after Holm's
// correction.
const Alpha = 0.05

// detectableChange is the relative change a "how many trials" hint is
// sized for.
const detectableChange = 0.02

// lengthMetric is tested beside every comparison, outside the Holm
// family (Comparison.Lengths): arms that write different numbers of
// tokens differ in e2e for that reason alone, and the verdicts must say
// so.
const lengthMetric = "output_tokens"

// perTokenMetrics lead the verdicts when output lengths differ: they do
// not grow with the length. Where reasoning lengths differ, TTFO leads
// with them: TTFT times the thinking's first token, not the answer's.
var perTokenMetrics = []string{"tpot_ms", "itl_mean_ms", "itl_cv"}

// ABTest is one metric of one column against its baseline column.
type ABTest struct {
	Metric           Metric
	Column, Baseline int
	NA, NB           int // counted values, baseline and column
	metrics.TwoSample
	MannWhitney          metrics.MannWhitneyResult
	CliffsDelta, CohensD float64
	// PAdjusted is the Mann-Whitney p-value, Holm-adjusted over every
	// location test of the comparison.
	PAdjusted float64
	// SpreadF and SpreadP are the Brown-Forsythe test of a difference in
	// spread; SpreadPAdjusted is Holm-adjusted over the spread tests.
	SpreadF, SpreadP, SpreadPAdjusted float64
	// SpreadRatio is the column's absolute spread over the baseline's
	// (mean distance from the median, what Brown-Forsythe compares): the
	// direction of a spread verdict. The CVs are spread relative to the
	// mean, which can differ while the absolute spread does not, and the
	// other way round.
	SpreadRatio float64
	// TrialsToDetect is the trials per arm with which this test, in its
	// Holm family, would detect a 2% change of the baseline's mean with
	// 80% power (metrics.TrialsToDetect).
	TrialsToDetect int
	// TooFew is set when the values are so few that no Mann-Whitney test
	// could reach p < Alpha; nothing else is computed then, and the test
	// stays out of the Holm family.
	TooFew bool
	// pooledSD and baselineMean size TrialsToDetect once the family is
	// known; family is its size.
	pooledSD, baselineMean float64
	family                 int
}

// outOfReach is the trials per arm past which the verdict calls a 2%
// change out of reach at the arms' spread: 28 hours an arm at a second a
// trial.
const outOfReach = 100_000

// Test is the test of metric in column col, once RunTests has run; nil
// before, or for a baseline column.
func (c *Comparison) Test(metric string, col int) *ABTest {
	for i := range c.Tests {
		if t := &c.Tests[i]; t.Metric.Name == metric && t.Column == col {
			return t
		}
	}
	return nil
}

// Significant reports whether the column differs from its baseline in
// location after the correction.
func (t *ABTest) Significant() bool { return t.PAdjusted < Alpha }

// IntervalShowsIt reports whether the medians' interval lies wholly on the
// side of the test's direction. Mann-Whitney judges whole distributions,
// so with several modes it can find a difference the medians' interval
// spans; every output that shows the interval beside a verdict must then
// say so. True when there is no interval to contradict.
func (t *ABTest) IntervalShowsIt() bool {
	e := t.MedianRatio
	return math.IsNaN(e.Lo) || t.CliffsDelta > 0 && e.Lo > 1 || t.CliffsDelta < 0 && e.Hi < 1
}

// IntervalWithoutVerdict reports whether a difference that is not
// significant has a medians' interval that excludes no change all the
// same: the interval is the comparison's own, at 95%, while the test is
// adjusted over every test of the family, and the test decides.
func (t *ABTest) IntervalWithoutVerdict() bool {
	e := t.MedianRatio
	return !t.TooFew && !t.Significant() && (e.Lo > 1 || e.Hi < 1)
}

// Better reports whether a significant difference is for the better:
// lower latency or spread, higher throughput. Meaningless when the
// difference is not significant.
func (t *ABTest) Better() bool { return (t.CliffsDelta < 0) != t.Metric.HigherIsBetter }

// Direction is the word a significant difference earns: the metric's
// More or Less without its verb ("slower", "steadier").
func (t *ABTest) Direction() string { return strings.TrimPrefix(t.moreOrLess(), "is ") }

// moreOrLess is the metric's More or Less, as the difference goes.
func (t *ABTest) moreOrLess() string {
	if t.CliffsDelta < 0 {
		return t.Metric.Less
	}
	return t.Metric.More
}

// Change is the median's change against the baseline with its 95%
// interval, "+37.4% [+35.1%, +39.8%]"; short leaves the interval out.
func (t *ABTest) Change(short bool) string {
	if short {
		return percentChange(t.MedianRatio.Value)
	}
	return ratioPercent(t.MedianRatio)
}

// SpreadSignificant reports whether the spreads differ after the
// correction.
func (t *ABTest) SpreadSignificant() bool { return t.SpreadPAdjusted < Alpha }

// TestOptions size the statistics.
type TestOptions struct {
	Resamples int
	Seed      uint64
}

// DefaultTestOptions are the final report's: 10,000 bootstrap resamples.
var DefaultTestOptions = TestOptions{Resamples: metrics.ReportResamples, Seed: 1}

// RunTests stores ABTests' results in c.
func (c *Comparison) RunTests(opts TestOptions) {
	c.Tests, c.Lengths = c.ABTests(opts)
	c.TestOptions = opts
}

// ABTests computes the A/B statistics of every column that has a
// baseline, for every metric of the comparison, and Holm-adjusts the
// p-values over all of them (tests with too few values stay out of the
// family). lengths are each column's output-token counts tested against
// its baseline's, alone at Alpha: a difference there explains e2e
// differences, and the verdicts say so. It only reads c, so it may run
// while c is drawn. Tests run in parallel; each is seeded alike, so the
// result does not depend on scheduling.
func (c *Comparison) ABTests(opts TestOptions) (tests, lengths []ABTest) {
	pairs := func(m Metric) []ABTest {
		var out []ABTest
		for i, col := range c.Columns {
			if col.Baseline != i {
				out = append(out, ABTest{Metric: m, Column: i, Baseline: col.Baseline})
			}
		}
		return out
	}
	for _, name := range c.Metrics {
		m, _ := LookupMetric(name)
		tests = append(tests, pairs(m)...)
	}
	length, _ := LookupMetric(lengthMetric)
	lengths = pairs(length)
	if c.Reasoned() {
		reasoning, _ := LookupMetric(reasoningMetric)
		lengths = append(lengths, pairs(reasoning)...)
	}
	all := append(slices.Clip(tests), lengths...)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				c.runTest(&all[i], opts)
			}
		})
	}
	for i := range all {
		next <- i
	}
	close(next)
	wg.Wait()
	tests, lengths = all[:len(tests)], all[len(tests):]
	// NaN keeps a test with too few values out of Holm's count.
	location, spread := make([]float64, len(tests)), make([]float64, len(tests))
	for i, t := range tests {
		location[i], spread[i] = t.MannWhitney.P, t.SpreadP
	}
	location, spread = metrics.Holm(location), metrics.Holm(spread)
	family := familySize(tests)
	for i := range tests {
		t := &tests[i]
		t.PAdjusted, t.SpreadPAdjusted = location[i], spread[i]
		t.TrialsToDetect = metrics.TrialsToDetect(t.pooledSD, detectableChange*t.baselineMean, Alpha, family)
		t.family = family
	}
	for i := range lengths {
		lengths[i].PAdjusted, lengths[i].SpreadPAdjusted = lengths[i].MannWhitney.P, lengths[i].SpreadP
	}
	return tests, lengths
}

// familySize is how many location tests Holm's correction spans.
func familySize(tests []ABTest) int {
	n := 0
	for _, t := range tests {
		if !t.TooFew {
			n++
		}
	}
	return n
}

func (c *Comparison) runTest(t *ABTest, opts TestOptions) {
	a, b := c.Columns[t.Baseline].Values(t.Metric), c.Columns[t.Column].Values(t.Metric)
	t.NA, t.NB = len(a), len(b)
	if t.TooFew = !metrics.MannWhitneyCanReject(t.NA, t.NB, Alpha); t.TooFew {
		t.MannWhitney = metrics.MannWhitneyResult{U: math.NaN(), P: math.NaN()}
		t.SpreadF, t.SpreadP = math.NaN(), math.NaN()
		return
	}
	t.TwoSample = metrics.BootstrapTwoSample(a, b, opts.Resamples, opts.Seed)
	t.MannWhitney = metrics.MannWhitney(a, b)
	t.CliffsDelta = metrics.CliffsDelta(t.MannWhitney, len(a), len(b))
	t.CohensD = metrics.CohensD(a, b)
	t.SpreadF, t.SpreadP = metrics.BrownForsythe(a, b)
	t.SpreadRatio = metrics.MeanAbsDeviation(b) / metrics.MeanAbsDeviation(a)
	t.pooledSD, t.baselineMean = metrics.PooledStd(a, b), metrics.Mean(a)
}

// Verdict says in words whether the column differs from its baseline in
// the metric, e.g. "temp-0.8 is slower than greedy: median e2e +37.4%
// [+35.1%, +39.8%], p < 0.001, large effect".
func (t *ABTest) Verdict(labels []string) string {
	a, b := labels[t.Baseline], labels[t.Column]
	if t.TooFew {
		return fmt.Sprintf("%s vs %s: too few %s values to compare (%d and %d): no Mann-Whitney test of so few can reach p < %g",
			b, a, t.Metric.Label, t.NB, t.NA, Alpha)
	}
	change := fmt.Sprintf("median %s %s", t.Metric.Label, ratioPercent(t.MedianRatio))
	if !t.Significant() {
		if t.IntervalWithoutVerdict() {
			change += t.whyNotSignificant(b, a)
		}
		need := ""
		switch n := t.TrialsToDetect; {
		case n > outOfReach:
			need = fmt.Sprintf("; a 2%% change is out of reach at this spread (~%s trials per arm)", trialsWords(n))
		case n > 0:
			need = fmt.Sprintf("; to detect a 2%% change you need ~%s trials per arm", trialsWords(n))
		}
		return fmt.Sprintf("%s vs %s: no significant difference in %s (%s, %s)%s",
			b, a, t.Metric.Label, change, formatP(t.PAdjusted), need)
	}
	word := t.moreOrLess()
	// Mann-Whitney judges the whole distributions, not the medians: with
	// two modes the medians' interval can span no change (or worse) while
	// one side is plainly slower. Then say what the test found, in its
	// terms, beside the interval that does not show it.
	if !t.IntervalShowsIt() {
		change += fmt.Sprintf(" (the medians' interval does not show it: the difference is in the distributions as a whole, %s %s than %s in %.0f%% of trial pairs, ties counting half)",
			b, word, a, (1+math.Abs(t.CliffsDelta))/2*100)
	}
	return fmt.Sprintf("%s %s than %s: %s, %s, %s effect", b, word, a, change, formatP(t.PAdjusted), metrics.Magnitude(t.CliffsDelta))
}

// whyNotSignificant says why a medians' interval that excludes no change
// earned no verdict. Where the interval at the family's Bonferroni level
// still excludes it, the medians do differ: Mann-Whitney tests whether
// one arm's trials run below the other's (P(b < a)), not the medians,
// and one arm can have the lower median and the heavier tail; else the
// 95% interval is not adjusted for the family, and the test decides.
func (t *ABTest) whyNotSignificant(b, a string) string {
	family := t.TwoSample.MedianRatioAt(1 - Alpha/float64(max(1, t.family)))
	if !(family.Lo > 1 || family.Hi < 1) {
		return fmt.Sprintf(" (this interval is not adjusted for the family's %d tests and excludes no change; the Holm-adjusted test decides)", t.family)
	}
	whole, side, share := t.Metric.Less, "below", (1-t.CliffsDelta)/2 // P(b < a), ties counting half
	if t.MedianRatio.Value > 1 {
		whole, side, share = t.Metric.More, "above", (1+t.CliffsDelta)/2
	}
	return fmt.Sprintf(" and [%s, %s] at the family's level: the medians differ, but %s is not %s as a whole: its trials lie %s %s's in %.0f%% of trial pairs, ties counting half, which is what the test judges",
		percentChange(family.Lo), percentChange(family.Hi), b, strings.TrimPrefix(whole, "is "), side, a, share*100)
}

// SpreadVerdict says whether the column varies more or less than its
// baseline in absolute terms (the Brown-Forsythe test, with the ratio of
// the spreads it compares), then how the spreads compare relative to the
// means (the CVs and their ratio's interval). The two can disagree: a
// slower arm with the same CV spreads more in ms, and an arm with the
// same spread in ms around a larger mean has a smaller CV.
func (t *ABTest) SpreadVerdict(labels []string) string {
	a, b := labels[t.Baseline], labels[t.Column]
	if t.TooFew {
		return fmt.Sprintf("%s vs %s: too few %s values to compare spread", b, a, t.Metric.Label)
	}
	if math.IsNaN(t.SpreadP) {
		return fmt.Sprintf("%s vs %s: the spread of %s cannot be judged (no variation on a side to test)", b, a, t.Metric.Label)
	}
	ratio := fmt.Sprintf("%.2f× [%.2f, %.2f]", t.CVRatio.Value, t.CVRatio.Lo, t.CVRatio.Hi)
	if math.IsNaN(t.CVRatio.Lo) {
		ratio = fmt.Sprintf("%.2f×", t.CVRatio.Value)
	}
	relative := "relative to the mean"
	if t.CVRatio.Lo > 1 || t.CVRatio.Hi < 1 { // the interval says which way
		relative += fmt.Sprintf(" %s varies %s", b, spreadWord(t.CVRatio.Value))
	}
	relative += fmt.Sprintf(": CV %s %s vs %s %s, ratio %s", b, formatEstimate(t.CVB), a, formatEstimate(t.CVA), ratio)
	absolute := fmt.Sprintf("absolute spread %.2f× (mean distance from the median), Brown-Forsythe %s", t.SpreadRatio, formatP(t.SpreadPAdjusted))
	if !t.SpreadSignificant() {
		return fmt.Sprintf("%s vs %s: no significant difference in the spread of %s (%s); %s", b, a, t.Metric.Label, absolute, relative)
	}
	return fmt.Sprintf("%s varies %s than %s in %s: %s; %s", b, spreadWord(t.SpreadRatio), a, t.Metric.Label, absolute, relative)
}

func spreadWord(ratio float64) string {
	if ratio < 1 {
		return "less"
	}
	return "more"
}

// CVIntervalCaveat says what the CV's bootstrap interval covers, as
// measured by metrics' TestCVIntervalCoverage on lognormal latencies.
const CVIntervalCaveat = "CV intervals (bootstrap percentile) cover less than their nominal 95% at small n: " +
	"about 80% at 15 trials and 89% at 40 for a CV of 0.1, 71% and 82% for a CV of 0.5"

// TestsNote says how the verdicts were reached, once under them.
func (c *Comparison) TestsNote() string {
	if len(c.Tests) == 0 {
		return ""
	}
	family := fmt.Sprintf("family size %d: metrics %d × comparisons %d", familySize(c.Tests), len(c.Metrics), len(c.Columns)-baselines(c.Columns))
	if familySize(c.Tests) == 0 {
		family = "no test: every comparison had too few values"
	}
	return fmt.Sprintf("Verdicts: Mann-Whitney U test (exact without ties up to 50×50 values, else normal approximation), "+
		"p-values Holm-adjusted (%s), significant below %g; effect size from Cliff's delta; "+
		"intervals: bootstrap percentile 95%%, %d resamples, seed %d; spread: Brown-Forsythe test, Holm-adjusted alike; "+
		"trials needed: 80%% power for this test at α = %g over the family (Mann-Whitney efficiency 3/π). %s.",
		family, Alpha, c.TestOptions.Resamples, c.TestOptions.Seed, Alpha, CVIntervalCaveat)
}

// baselines counts the columns that are their own baseline.
func baselines(columns []Column) int {
	n := 0
	for i, col := range columns {
		if col.Baseline == i {
			n++
		}
	}
	return n
}

// VerdictLine is one line of the verdicts: a test's verdict (Test set),
// or a note on a column (Test nil), such as output lengths that differ.
type VerdictLine struct {
	Text string
	Test *ABTest
}

// VerdictLines are the verdicts in reading order: for each column, a note
// when its output length differs from its baseline's, then its verdict per
// metric, the per-token metrics first when lengths differ (they do not
// grow with the length).
func (c *Comparison) VerdictLines() []VerdictLine {
	labels, _ := ShortLabels(c.Columns)
	var lines []VerdictLine
	for col := range c.Columns {
		if d := c.Columns[col].Differences; len(d) > 0 {
			lines = append(lines, VerdictLine{Text: fmt.Sprintf("%s vs %s: the sessions were set up differently (%s), so the verdicts below measure that as well",
				labels[col], labels[c.Columns[col].Baseline], strings.Join(d, "; "))})
		}
		differ, reasoningDiffers := false, false
		for i := range c.Lengths {
			if t := &c.Lengths[i]; t.Column == col && t.LengthsDiffer() {
				differ = true
				reasoningDiffers = reasoningDiffers || t.Metric.Name == reasoningMetric
				lines = append(lines, VerdictLine{Text: t.LengthNote(labels)})
			}
		}
		for _, note := range TokenNotes(labels[col], c.Columns[col].records) {
			lines = append(lines, VerdictLine{Text: note})
		}
		var own []*ABTest
		for i := range c.Tests {
			if c.Tests[i].Column == col {
				own = append(own, &c.Tests[i])
			}
		}
		if differ {
			// Per-token metrics rank 0, the rest 1; a stable sort keeps
			// the order within each.
			rank := func(t *ABTest) int {
				if slices.Contains(perTokenMetrics, t.Metric.Name) || reasoningDiffers && t.Metric.Name == "ttfo_ms" {
					return 0
				}
				return 1
			}
			slices.SortStableFunc(own, func(x, y *ABTest) int { return rank(x) - rank(y) })
		}
		for _, t := range own {
			lines = append(lines, VerdictLine{Text: c.verdictText(t, labels), Test: t})
		}
	}
	return lines
}

// Verdicts are the lines under a comparison's table: VerdictLines, then
// the spread verdicts.
func (c *Comparison) Verdicts() []string {
	var lines []string
	for _, l := range c.VerdictLines() {
		lines = append(lines, l.Text)
	}
	return append(lines, c.SpreadVerdicts()...)
}

// materialLengthChange is the change in mean output length below which
// length cannot explain an e2e difference worth a note: e2e grows at most
// in proportion to the tokens written, so a 0.1% shorter output (a few
// early stops in 1,000 capped trials) moves e2e by about 0.1%.
const materialLengthChange = 0.01

// LengthsDiffer reports whether an output_tokens check found the column
// writing more or fewer tokens than its baseline, significantly and by at
// least materialLengthChange of the mean.
func (t *ABTest) LengthsDiffer() bool {
	return !t.TooFew && t.PAdjusted < Alpha && math.Abs(t.MeanDiff.Value) >= materialLengthChange*t.baselineMean
}

// LengthNote says that two arms wrote (or reasoned) different numbers of
// tokens, and what follows for reading e2e (and TTFT).
func (t *ABTest) LengthNote(labels []string) string {
	word := "more"
	if t.CliffsDelta < 0 {
		word = "fewer"
	}
	// The means say how much: medians of capped lengths are often equal
	// (128 vs 128) when a few trials stop early.
	mean := t.baselineMean + t.MeanDiff.Value
	if t.Metric.Name == reasoningMetric {
		const follows = ": its TTFT, e2e and output tok/s count that thinking; read TTFO (the answer's first token) and the per-token metrics (TPOT, ITL) first"
		tokens := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
		switch {
		case t.baselineMean == 0:
			return fmt.Sprintf("note: %s thinks (mean %s reasoning tokens a trial; %s) where %s does not%s", labels[t.Column], tokens(mean), formatP(t.PAdjusted), labels[t.Baseline], follows)
		case mean == 0:
			return fmt.Sprintf("note: %s does not think where %s does (mean %s reasoning tokens a trial; %s)%s", labels[t.Column], labels[t.Baseline], tokens(t.baselineMean), formatP(t.PAdjusted), follows)
		}
		return fmt.Sprintf("note: %s thinks in %s tokens than %s (mean %s vs %s reasoning tokens, %s; median %s vs %s; %s)%s",
			labels[t.Column], word, labels[t.Baseline], tokens(mean), tokens(t.baselineMean), FormatDelta(100*t.MeanDiff.Value/t.baselineMean),
			strconv.FormatFloat(t.MedianB, 'f', -1, 64), strconv.FormatFloat(t.MedianA, 'f', -1, 64), formatP(t.PAdjusted), follows)
	}
	return fmt.Sprintf("note: %s writes %s tokens than %s (mean %s vs %s, %s; median %s vs %s; %s): its e2e and output tok/s differ partly for that reason; "+
		"read the per-token metrics (TPOT) first, or set fixed_length = true where the backend can",
		labels[t.Column], word, labels[t.Baseline], strconv.FormatFloat(mean, 'f', 1, 64), strconv.FormatFloat(t.baselineMean, 'f', 1, 64),
		FormatDelta(100*t.MeanDiff.Value/t.baselineMean), strconv.FormatFloat(t.MedianB, 'f', -1, 64), strconv.FormatFloat(t.MedianA, 'f', -1, 64), formatP(t.PAdjusted))
}

// TokenNotes say, of one column's counted trials, what its ITL is between
// where that is not one token and the next: chunks that carried several
// tokens (counts the server gave, or did not), and tokens that arrived in
// a burst far tighter than the server generated them.
func TokenNotes(label string, records []*Record) []string {
	var notes []string
	var bundled, uncounted, burst, tokens, chunks int
	for _, r := range records {
		if r.Chunks > 0 && r.OutputTokens > r.Chunks {
			bundled++
			tokens, chunks = tokens+r.OutputTokens, chunks+r.Chunks
			if r.ITLPer == ITLPerChunk {
				uncounted++
			}
		}
		if r.Delivery == DeliveryBurst {
			burst++
		}
	}
	switch {
	case uncounted > 0:
		notes = append(notes, fmt.Sprintf("note: %s's chunks carried several tokens each (%d tokens in %d chunks, in %d of its %d trials) and the server did not say how many each: "+
			"its ITL is the gap between chunks, not tokens; TPOT, from the token count, is per token", label, tokens, chunks, bundled, len(records)))
	case bundled > 0:
		notes = append(notes, fmt.Sprintf("note: %s's chunks carried several tokens each (%d tokens in %d chunks, in %d of its %d trials); the server gave each chunk's count, "+
			"so its ITL splits a chunk's gap evenly among its tokens", label, tokens, chunks, bundled, len(records)))
	}
	if burst > 0 {
		notes = append(notes, fmt.Sprintf("note: in %d of %d trials of %s the tokens arrived in a burst, within a quarter of the server's own decode time: "+
			"their ITL measures delivery, not generation (server_decode_ms has the generation's)", burst, len(records), label))
	}
	return notes
}

// SpreadVerdicts are each column's spread verdict for the first metric,
// and for any other metric whose spread differs significantly.
func (c *Comparison) SpreadVerdicts() []string {
	labels, _ := ShortLabels(c.Columns)
	var lines []string
	for i := range c.Tests {
		t := &c.Tests[i]
		if t.Metric.Name == c.Metrics[0] || t.SpreadSignificant() {
			lines = append(lines, t.SpreadVerdict(labels))
		}
	}
	return lines
}

// ratioPercent prints a ratio as a percent change with its interval:
// "+37.4% [+35.1%, +39.8%]", or without one when the values are too few
// for it (metrics.MinIntervalN).
func ratioPercent(e metrics.Estimate) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return percentChange(e.Value) + " (too few values for an interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", percentChange(e.Value), percentChange(e.Lo), percentChange(e.Hi))
}

// percentChange prints a ratio as a signed percent change, "+37.4%".
func percentChange(ratio float64) string {
	if d := FormatDelta((ratio - 1) * 100); d != "" {
		return d
	}
	return "?"
}

// formatEstimate prints "0.113 [0.090, 0.131]", or says there are too
// few values for the interval (metrics.MinIntervalN), as ratioPercent does.
func formatEstimate(e metrics.Estimate) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return FormatValue(e.Value) + " (too few values for an interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", FormatValue(e.Value), FormatValue(e.Lo), FormatValue(e.Hi))
}

// formatP prints a p-value the way papers do.
func formatP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "p = ?"
	case p < 0.001:
		return "p < 0.001"
	}
	return "p = " + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", p), "0"), ".")
}

// verdictText is a test's verdict in words. Energy per token is said as
// a ratio, "uses 6.00× [5.80, 6.30] the energy per token of", its
// interval widened by both arms' energy uncertainty (EnergyOf); against
// an arm whose energy is not distinguishable from idle there is no ratio
// to say.
func (c *Comparison) verdictText(t *ABTest, labels []string) string {
	if t.Metric.Name != energyMetric || t.TooFew {
		return t.Verdict(labels)
	}
	a, b := labels[t.Baseline], labels[t.Column]
	ratio, idle, differs := c.EnergyRatio(t, false)
	if idle != nil {
		side := a
		if idle == &c.Columns[t.Column] {
			side = b
		}
		e := idle.Energy()
		return fmt.Sprintf("%s vs %s: no ratio of energy per token: %s's is not distinguishable from idle (its interval [%s, %s] J/token holds zero)",
			b, a, side, FormatValue(e.Lo), FormatValue(e.Hi))
	}
	medians := fmt.Sprintf("median %s vs %s J/token", FormatValue(c.Columns[t.Column].Energy().JPerToken), FormatValue(c.Columns[t.Baseline].Energy().JPerToken))
	switch {
	case !t.Significant():
		return fmt.Sprintf("%s vs %s: no significant difference in energy per token (%s uses %s the energy per token of %s; %s, %s)",
			b, a, b, ratio, a, medians, formatP(t.PAdjusted))
	case !differs:
		return fmt.Sprintf("%s vs %s: no difference in energy per token beyond the measurement's uncertainty (%s uses %s the energy per token of %s, an interval that holds 1 once the idle baseline's drift and the readings' resolution are carried; %s; the test on the trials alone gave %s)",
			b, a, b, ratio, a, medians, formatP(t.PAdjusted))
	}
	return fmt.Sprintf("%s uses %s the energy per token of %s: %s, %s, %s effect", b, ratio, a, medians, formatP(t.PAdjusted), metrics.Magnitude(t.CliffsDelta))
}

// EnergyRatio is an energy test's ratio of medians, column over
// baseline, "6.00× [5.80, 6.30]" (short: "6.00×"), its interval widened by
// each side's energy uncertainty at its least favourable end; idle is the
// column whose energy is not distinguishable from idle, where one is
// (then there is no ratio). differs is false where the widened interval
// holds 1: the test's p-value sees the trials' spread, not the idle
// baseline's drift, which shifts arms of different trial lengths
// differently, so a difference within it is not one.
func (c *Comparison) EnergyRatio(t *ABTest, short bool) (ratio string, idle *Column, differs bool) {
	ea, eb := c.Columns[t.Baseline].Energy(), c.Columns[t.Column].Energy()
	switch {
	case eb.Idle():
		return "", &c.Columns[t.Column], false
	case ea.Idle():
		return "", &c.Columns[t.Baseline], false
	}
	ua, ub := ea.Uncertainty/ea.JPerToken, eb.Uncertainty/eb.JPerToken
	lo, hi := t.MedianRatio.Lo*(1-ub)/(1+ua), t.MedianRatio.Hi*(1+ub)/max(1e-9, 1-ua)
	differs = lo > 1 || hi < 1
	if short || math.IsNaN(lo) {
		return fmt.Sprintf("%.2f×", t.MedianRatio.Value), nil, differs
	}
	return fmt.Sprintf("%.2f× [%.2f, %.2f]", t.MedianRatio.Value, lo, hi), nil, differs
}
