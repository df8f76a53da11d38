package metrics

import "math"

// ConfidenceSequence gives 95% intervals that hold at every n at once, so
// a run may look after every trial and stop when the interval is narrow
// enough without inflating its error rate; a fixed-n interval watched that
// way misses far more often than 5%.
//
// Both intervals use Robbins' normal-mixture boundary (Howard, Ramdas,
// McAuliffe & Sekhon 2021): for a sum S_n whose increments are
// sub-Gaussian with variance process V_n, P(∃n: |S_n| ≥ r(V_n)) ≤ α with
// r(v) = sqrt((v+ρ)·ln((v+ρ)/(ρ·α²))).
//
//   - The mean: the asymptotic confidence sequence of Waudby-Smith, Arnold,
//     Wu, Wang & Ramdas (2024, "Time-uniform central limit theory and
//     asymptotic confidence sequences"): mean ± σ̂·r(n)/n, valid as n grows
//     for any distribution with a finite variance.
//   - A quantile p: the confidence sequence of Howard & Ramdas (2022,
//     "Sequential estimation of quantiles"): the count of values at or
//     below the true quantile minus n·p is a sum of bounded increments,
//     sub-Gaussian with variance 1/4 each, so order statistics at ranks
//     n·p ± r(n/4) bound it. Exact for any continuous distribution, at any
//     n.
type ConfidenceSequence struct {
	alpha float64
	// rho tunes the boundary: it is tightest around n = tuneAt.
	rho float64
}

// NewConfidenceSequence tunes a sequence of level 1-alpha to be tightest
// near n = tuneAt trials, by the optimum Waudby-Smith et al. give:
// ρ = n / (-2 ln α + ln(1 - 2 ln α)).
func NewConfidenceSequence(alpha float64, tuneAt int) ConfidenceSequence {
	l := -2 * math.Log(alpha)
	return ConfidenceSequence{alpha: alpha, rho: float64(max(tuneAt, 1)) / (l + math.Log(1+l))}
}

func (c ConfidenceSequence) radius(v, rho float64) float64 {
	return math.Sqrt((v + rho) * math.Log((v+rho)/(rho*c.alpha*c.alpha)))
}

// MeanHalfWidth is the half-width of the sequence's interval for the mean
// after n values with sample standard deviation std.
func (c ConfidenceSequence) MeanHalfWidth(n int, std float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	return std * c.radius(float64(n), c.rho) / float64(n)
}

// QuantileInterval is the sequence's interval for quantile p of the
// distribution behind sorted (ascending): infinite on a side the data do
// not reach yet.
func (c ConfidenceSequence) QuantileInterval(sorted []float64, p float64) CI {
	n := float64(len(sorted))
	u := c.radius(n/4, c.rho/4)
	out := CI{math.Inf(-1), math.Inf(1)}
	// Ranks as floats first: a radius that is not finite (no data) must
	// not become an index.
	if k := math.Ceil(n*p - u); k >= 1 && k <= n {
		out.Lo = sorted[int(k)-1]
	}
	if m := math.Floor(n*p + u); m >= 0 && m+1 <= n {
		out.Hi = sorted[int(m)]
	}
	return out
}
