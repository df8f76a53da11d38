package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
)

// CI is a confidence interval.
type CI struct{ Lo, Hi float64 }

// DefaultResamples is the bootstrap size for session summaries.
const DefaultResamples = 2000

// Statistic reduces a sample to one number. It may reorder its argument,
// which is a scratch copy.
type Statistic func(sample []float64) float64

// Mean is a Statistic.
func Mean(sample []float64) float64 {
	sum := 0.0
	for _, v := range sample {
		sum += v
	}
	return sum / float64(len(sample))
}

// Median is a Statistic: it selects in place in O(n) expected time, which
// matters when it runs thousands of times in a bootstrap.
func Median(sample []float64) float64 {
	n := len(sample)
	if n == 0 {
		return math.NaN()
	}
	hi := selectKth(sample, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selection every value left of n/2 is <= hi; the lower middle
	// is their maximum.
	lo := slices.Max(sample[:n/2])
	return (lo + hi) / 2
}

// selectKth reorders a so a[k] is the k-th smallest and returns it
// (Hoare's quickselect with a median-of-three pivot).
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}

// MinIntervalN is the fewest values a 95% interval is given for. Below 6
// not even [min, max] covers the median 95% of the time (its coverage is
// 1 - 2·0.5^n: 94% at 5, 50% at 2), so a bootstrap "95%" interval there,
// which is at most [min, max], would claim more than it holds.
const MinIntervalN = 6

// Bootstrap returns the percentile-method 95% confidence interval of stat
// over values, from resamples seeded resamples (the same seed gives the
// same interval). Fewer than MinIntervalN values give NaN bounds: too
// few for an interval.
func Bootstrap(values []float64, stat Statistic, resamples int, seed uint64) CI {
	if len(values) < MinIntervalN || resamples < 1 {
		return CI{math.NaN(), math.NaN()}
	}
	rng := rand.New(rand.NewPCG(seed, 0x746f6b656e746f70))
	scratch := make([]float64, len(values))
	estimates := make([]float64, resamples)
	for r := range estimates {
		for i := range scratch {
			scratch[i] = values[rng.IntN(len(values))]
		}
		estimates[r] = stat(scratch)
	}
	return percentileCI(estimates)
}
