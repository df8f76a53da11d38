package metrics

import "math"

// TooManyTrials caps every count of trials needed: a need beyond it
// (data so spread that no study could pin them) is reported as "more
// than" it, not as a number that would overflow or take for ever to find.
const TooManyTrials = 1_000_000_000

// trialsFrom turns a computed count of trials into one: up, capped at
// TooManyTrials; 0 (unknown) when it is not a number.
func trialsFrom(x float64) int {
	switch {
	case math.IsNaN(x):
		return 0
	case x >= TooManyTrials:
		return TooManyTrials
	}
	return max(0, int(math.Ceil(x)))
}

// TrialsForMean is the n at which the 95% confidence interval of the mean
// (Student t) is within ±tol of the mean, for data with coefficient of
// variation cv: the smallest n with t(n-1)·cv/√n <= tol, at most
// TooManyTrials. 0 when cv is unknown or not finite.
func TrialsForMean(cv, tol float64) int {
	if math.IsNaN(cv) || math.IsInf(cv, 0) || cv < 0 || !(tol > 0) {
		return 0
	}
	n := max(2, trialsFrom(math.Pow(z975*cv/tol, 2)))
	// The t quantile is above the normal one, so the answer is at or just
	// above the normal approximation: a few steps.
	for n < TooManyTrials && TQuantile975(n-1)*cv/math.Sqrt(float64(n)) > tol {
		n++
	}
	return n
}

// QuantileNeed is how many trials a quantile's estimate needs.
type QuantileNeed struct {
	N int
	// AtLeast is true when the data are too few to estimate the quantile's
	// spread at all: N is then the least n at which its interval exists.
	AtLeast bool
}

// TrialsForQuantile estimates the n at which the distribution-free 95%
// interval of quantile p (order statistics at ranks n·p ± 1.96·√(n·p(1-p)))
// is within ±tol of the quantile. It measures the interval on the sorted
// values at hand and scales its width by 1/√n, which is how it shrinks.
// Tail quantiles need the most: p99's interval does not exist below 381
// trials, p95's below 73.
func TrialsForQuantile(sorted []float64, p, tol float64) QuantileNeed {
	least := leastTrialsForQuantileInterval(p)
	if least == 0 {
		return QuantileNeed{} // the minimum or the maximum: no interval at any n
	}
	n := len(sorted)
	if n < least {
		return QuantileNeed{N: least, AtLeast: true}
	}
	ci, q := QuantileCI(sorted, p), PercentileSorted(sorted, p)
	halfWidth := (ci.Hi - ci.Lo) / 2
	need := trialsFrom(float64(n) * math.Pow(halfWidth/(tol*math.Abs(q)), 2))
	if need == 0 && !(halfWidth == 0) { // a quantile of 0, or values that are not finite: no relative width
		return QuantileNeed{}
	}
	return QuantileNeed{N: max(need, least)}
}

// QuantileCI is the distribution-free 95% interval of quantile p of the
// ascending values: the order statistics at quantileRanks. It needs only
// the sort, where a bootstrap of the median resamples thousands of times
// (37 ms at 1,000 values, too much to redo on the dashboard's path per
// trial); NaN bounds where the values are too few for one (below 8 for
// the median).
func QuantileCI(sorted []float64, p float64) CI {
	lo, hi := quantileRanks(len(sorted), p)
	if lo < 1 || hi > len(sorted) {
		return CI{math.NaN(), math.NaN()}
	}
	return CI{sorted[lo-1], sorted[hi-1]}
}

// quantileRanks are the 1-based ranks of the distribution-free 95%
// interval of quantile p among n values.
func quantileRanks(n int, p float64) (lo, hi int) {
	np, spread := float64(n)*p, z975*math.Sqrt(float64(n)*p*(1-p))
	return int(math.Floor(np - spread)), int(math.Ceil(np + spread))
}

func leastTrialsForQuantileInterval(p float64) int {
	if !(p > 0 && p < 1) {
		return 0 // the minimum and the maximum have no such interval
	}
	n := 2
	for {
		if lo, hi := quantileRanks(n, p); lo >= 1 && hi <= n {
			return n
		}
		n++
	}
}

// mannWhitneyARE is the asymptotic relative efficiency of the
// Mann-Whitney test against the t test for normal data (3/π): it needs
// about 1/0.955 times the t test's trials there, and fewer for the
// skewed, heavy-tailed data latencies are, so sizing by it errs towards
// enough.
const mannWhitneyARE = 3 / math.Pi

// TrialsToDetect is the number of trials per arm the verdict's test
// needs to detect a difference delta between means with 80% power, for
// data with standard deviation sd, when the test is one of a Holm family
// of the given size. The verdict is a two-sided Mann-Whitney test whose
// p-value must pass Holm's correction; sizing it at the family's
// Bonferroni level α/family (what Holm asks of the smallest p-value)
// keeps the promised power when only this test's difference is real:
//
//	n = 2·(z(1-α/2family) + z(0.8))²·(sd/delta)² / (3/π)
//
// and never fewer than the exact test's minimum at that level (4 per arm
// at α = 0.05, 5 at 0.0125). 0 when sd is unknown.
func TrialsToDetect(sd, delta, alpha float64, family int) int {
	if math.IsNaN(sd) || math.IsInf(sd, 0) || delta == 0 || math.IsNaN(delta) || math.IsInf(delta, 0) || family < 1 {
		return 0
	}
	level := alpha / float64(family)
	z := NormalQuantile(1-level/2) + NormalQuantile(0.8)
	n := trialsFrom(2 * z * z * sd * sd / (delta * delta) / mannWhitneyARE)
	least := 1
	for !MannWhitneyCanReject(least, least, level) {
		least++
	}
	return max(n, least)
}
