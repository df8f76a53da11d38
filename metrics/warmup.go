package metrics

import "slices"

// MSERBatch is MSER-5's batch size: batching smooths trial-to-trial noise
// so the rule reacts to trends, not single outliers.
const MSERBatch = 5

// mserSlack is how far above its minimum the MSER statistic may be and
// still count as settled. Once the series is flat the statistic is flat
// too, up to its own sampling noise (a relative error of about √(2/(k-d)),
// 25% at 30 batches), and the plain minimum then lands on a random dip far
// past the real settling point.
const mserSlack = 1.25

// MSER5 finds where a series settles, by White's MSER-5 rule: average the
// series in batches of five, and drop the leading d batches that minimise
// the squared standard error of the mean of what remains,
// Σ(Z_j - Z̄)²/(k-d)², looking at most at the first half. It takes the
// earliest d within mserSlack of the minimum. It returns how many leading
// values to drop (a multiple of 5), and false when the series is too short
// to tell (fewer than four batches).
func MSER5(series []float64) (truncate int, ok bool) {
	k := len(series) / MSERBatch
	if k < 4 {
		return 0, false
	}
	batches := make([]float64, k)
	for j := range batches {
		batches[j] = Mean(series[j*MSERBatch : (j+1)*MSERBatch])
	}
	stats := make([]float64, k/2+1)
	for d := range stats {
		rest := batches[d:]
		m := Mean(rest)
		ss := 0.0
		for _, z := range rest {
			ss += (z - m) * (z - m)
		}
		stats[d] = ss / float64(len(rest)*len(rest))
	}
	least := slices.Min(stats)
	settled := slices.IndexFunc(stats, func(stat float64) bool { return stat <= mserSlack*least })
	return settled * MSERBatch, true
}
