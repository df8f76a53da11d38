package session

import (
	"fmt"
	"math"
	"runtime"
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
	// TrialsToDetect is the trials per arm that would detect a 2% change
	// of the baseline's mean with 80% power.
	TrialsToDetect int
}

// Significant reports whether the column differs from its baseline in
// location after the correction.
func (t *ABTest) Significant() bool { return t.PAdjusted < Alpha }

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
	c.Tests, c.TestOptions = c.ABTests(opts), opts
}

// ABTests computes the A/B statistics of every column that has a
// baseline, for every metric of the comparison, and Holm-adjusts the
// p-values over all of them. It only reads c, so it may run while c is
// drawn. Tests run in parallel; each is seeded alike, so the result does
// not depend on scheduling.
func (c *Comparison) ABTests(opts TestOptions) []ABTest {
	var tests []ABTest
	for _, name := range c.Metrics {
		m, _ := LookupMetric(name)
		for i, col := range c.Columns {
			if col.Baseline != i {
				tests = append(tests, ABTest{Metric: m, Column: i, Baseline: col.Baseline})
			}
		}
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				c.runTest(&tests[i], opts)
			}
		})
	}
	for i := range tests {
		next <- i
	}
	close(next)
	wg.Wait()
	location, spread := make([]float64, len(tests)), make([]float64, len(tests))
	for i, t := range tests {
		location[i], spread[i] = t.MannWhitney.P, t.SpreadP
	}
	location, spread = metrics.Holm(location), metrics.Holm(spread)
	for i := range tests {
		tests[i].PAdjusted, tests[i].SpreadPAdjusted = location[i], spread[i]
	}
	return tests
}

func (c *Comparison) runTest(t *ABTest, opts TestOptions) {
	a, b := c.Columns[t.Baseline].Values(t.Metric), c.Columns[t.Column].Values(t.Metric)
	t.NA, t.NB = len(a), len(b)
	t.TwoSample = metrics.BootstrapTwoSample(a, b, opts.Resamples, opts.Seed)
	t.MannWhitney = metrics.MannWhitney(a, b)
	t.CliffsDelta = metrics.CliffsDelta(t.MannWhitney, len(a), len(b))
	t.CohensD = metrics.CohensD(a, b)
	t.SpreadF, t.SpreadP = metrics.BrownForsythe(a, b)
	t.TrialsToDetect = metrics.TrialsToDetect(metrics.PooledStd(a, b), detectableChange*metrics.Mean(a))
}

// Verdict says in words whether the column differs from its baseline in
// the metric, e.g. "temp-0.8 is slower than greedy: median e2e +37.4%
// [+35.1%, +39.8%], p < 0.001, large effect".
func (t *ABTest) Verdict(labels []string) string {
	a, b := labels[t.Baseline], labels[t.Column]
	if t.NA < 2 || t.NB < 2 {
		return fmt.Sprintf("%s vs %s: too few %s values to compare (%d and %d)", b, a, t.Metric.Label, t.NB, t.NA)
	}
	change := fmt.Sprintf("median %s %s", t.Metric.Label, ratioPercent(t.MedianRatio))
	if !t.Significant() {
		return fmt.Sprintf("%s vs %s: no significant difference in %s (%s, %s); to detect a 2%% change you need ~%d trials per arm",
			b, a, t.Metric.Label, change, formatP(t.PAdjusted), t.TrialsToDetect)
	}
	word := t.Metric.More
	if t.CliffsDelta < 0 {
		word = t.Metric.Less
	}
	return fmt.Sprintf("%s %s than %s: %s, %s, %s effect", b, word, a, change, formatP(t.PAdjusted), metrics.Magnitude(t.CliffsDelta))
}

// SpreadVerdict says whether the column varies more or less than its
// baseline, with both CVs and the Brown-Forsythe test.
func (t *ABTest) SpreadVerdict(labels []string) string {
	a, b := labels[t.Baseline], labels[t.Column]
	if t.NA < 2 || t.NB < 2 {
		return fmt.Sprintf("%s vs %s: too few %s values to compare spread", b, a, t.Metric.Label)
	}
	cvs := fmt.Sprintf("CV %s %s vs %s %s, ratio %.2f× [%.2f, %.2f]", b, formatEstimate(t.CVB), a, formatEstimate(t.CVA),
		t.CVRatio.Value, t.CVRatio.Lo, t.CVRatio.Hi)
	if !t.SpreadSignificant() {
		return fmt.Sprintf("%s and %s vary alike in %s: %s, Brown-Forsythe %s", b, a, t.Metric.Label, cvs, formatP(t.SpreadPAdjusted))
	}
	word := "more"
	if t.CVRatio.Value < 1 {
		word = "less"
	}
	return fmt.Sprintf("%s varies %s than %s in %s: %s, Brown-Forsythe %s", b, word, a, t.Metric.Label, cvs, formatP(t.SpreadPAdjusted))
}

// TestsNote says how the verdicts were reached, once under them.
func (c *Comparison) TestsNote() string {
	if len(c.Tests) == 0 {
		return ""
	}
	return fmt.Sprintf("Verdicts: Mann-Whitney U test (exact without ties up to 50×50 values, else normal approximation), "+
		"p-values Holm-adjusted (family size %d: metrics %d × comparisons %d), significant below %g; effect size from Cliff's delta; "+
		"intervals: bootstrap percentile 95%%, %d resamples, seed %d; spread: Brown-Forsythe test, Holm-adjusted alike; "+
		"trials needed: 80%% power at α = %g.",
		len(c.Tests), len(c.Metrics), len(c.Tests)/max(1, len(c.Metrics)), Alpha, c.TestOptions.Resamples, c.TestOptions.Seed, Alpha)
}

// Verdicts are the lines under a comparison's table: each column's verdict
// per metric, then the spread verdicts.
func (c *Comparison) Verdicts() []string {
	labels, _ := ShortLabels(c.Columns)
	var lines []string
	for i := range c.Tests {
		lines = append(lines, c.Tests[i].Verdict(labels))
	}
	return append(lines, c.SpreadVerdicts()...)
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
// "+37.4% [+35.1%, +39.8%]".
func ratioPercent(e metrics.Estimate) string {
	pct := func(r float64) string {
		if d := FormatDelta((r - 1) * 100); d != "" {
			return d
		}
		return "?"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(e.Value), pct(e.Lo), pct(e.Hi))
}

func formatEstimate(e metrics.Estimate) string {
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
