package metrics

import "math"

// TrialsForMean is the n at which the 95% confidence interval of the mean
// (Student t) is within ±tol of the mean, for data with coefficient of
// variation cv: the smallest n with t(n-1)·cv/√n <= tol. 0 when cv is
// unknown.
func TrialsForMean(cv, tol float64) int {
	if math.IsNaN(cv) || cv < 0 || tol <= 0 {
		return 0
	}
	n := max(2, int(math.Ceil(math.Pow(z975*cv/tol, 2))))
	for TQuantile975(n-1)*cv/math.Sqrt(float64(n)) > tol {
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
	n := len(sorted)
	if n < least {
		return QuantileNeed{N: least, AtLeast: true}
	}
	lo, hi := quantileRanks(n, p)
	q := PercentileSorted(sorted, p)
	halfWidth := (sorted[hi-1] - sorted[lo-1]) / 2
	need := int(math.Ceil(float64(n) * math.Pow(halfWidth/(tol*math.Abs(q)), 2)))
	return QuantileNeed{N: max(need, least)}
}

// quantileRanks are the 1-based ranks of the distribution-free 95%
// interval of quantile p among n values.
func quantileRanks(n int, p float64) (lo, hi int) {
	np, spread := float64(n)*p, z975*math.Sqrt(float64(n)*p*(1-p))
	return int(math.Floor(np - spread)), int(math.Ceil(np + spread))
}

func leastTrialsForQuantileInterval(p float64) int {
	n := 2
	for {
		if lo, hi := quantileRanks(n, p); lo >= 1 && hi <= n {
			return n
		}
		n++
	}
}

// TrialsToDetect is the number of trials per arm a two-sided test at
// α = 0.05 needs to detect a difference delta between means with 80%
// power, for data with standard deviation sd (normal approximation:
// n = 2·(z₀.₉₇₅ + z₀.₈)²·(sd/delta)²). 0 when sd is unknown.
func TrialsToDetect(sd, delta float64) int {
	if math.IsNaN(sd) || delta == 0 {
		return 0
	}
	z := z975 + NormalQuantile(0.8)
	return max(2, int(math.Ceil(2*z*z*sd*sd/(delta*delta))))
}
