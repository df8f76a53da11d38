package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Watched after every trial up to n = 400, a valid 95% confidence sequence
// leaves the truth at any point in at most about 5% of runs; a fixed-n
// Student-t interval watched the same way misses much more often: the
// trap of checking until the interval looks good. The data are lognormal
// with a CV of 0.4, skewed like latencies. The median's sequence is exact
// and is watched from n = 10; the mean's is asymptotic and is watched
// from n = 30, the stop rule's minimum for it (with a CV above 1 it needs
// far more, which is why the median is the stop rule's default).
func TestConfidenceSequenceUnderContinuousMonitoring(t *testing.T) {
	const reps, minN, minNMean, maxN = 1000, 10, 30, 400
	const mu, sigma = 3.0, 0.4
	trueMean, trueMedian := math.Exp(mu+sigma*sigma/2), math.Exp(mu)
	cs := NewConfidenceSequence(0.05, 60)
	rng := rand.New(rand.NewPCG(3, 4))
	var meanMissed, medianMissed, naiveMissed int
	for range reps {
		var w Welford
		var sorted []float64
		var mean, median, naive bool
		for n := 1; n <= maxN; n++ {
			x := math.Exp(mu + sigma*rng.NormFloat64())
			w.Add(x)
			i, _ := slices.BinarySearch(sorted, x)
			sorted = slices.Insert(sorted, i, x)
			if n < minN {
				continue
			}
			if n >= minNMean {
				mean = mean || math.Abs(w.Mean()-trueMean) > cs.MeanHalfWidth(n, w.Std())
			}
			naive = naive || math.Abs(w.Mean()-trueMean) > w.HalfWidth95()
			iv := cs.QuantileInterval(sorted, 0.5)
			median = median || trueMedian < iv.Lo || trueMedian > iv.Hi
		}
		meanMissed += b2i(mean)
		medianMissed += b2i(median)
		naiveMissed += b2i(naive)
	}
	rate := func(k int) float64 { return float64(k) / reps }
	t.Logf("ever missed the truth: mean sequence %.1f%%, median sequence %.1f%%, fixed-n t interval %.1f%%",
		100*rate(meanMissed), 100*rate(medianMissed), 100*rate(naiveMissed))
	// 5% nominal; the binomial standard error over 1000 runs is 0.7 points.
	if rate(meanMissed) > 0.07 {
		t.Errorf("mean confidence sequence missed in %.1f%% of runs, want at most 5%% (+2 for noise)", 100*rate(meanMissed))
	}
	if rate(medianMissed) > 0.07 {
		t.Errorf("median confidence sequence missed in %.1f%% of runs, want at most 5%% (+2 for noise)", 100*rate(medianMissed))
	}
	if rate(naiveMissed) < 0.15 {
		t.Errorf("the fixed-n interval watched continuously missed only %.1f%%: the test no longer shows the trap", 100*rate(naiveMissed))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The sequence pays for validity at every n with width: about 1.6 times a
// fixed-n interval near its tuning point, growing slowly away from it.
func TestConfidenceSequenceWidth(t *testing.T) {
	cs := NewConfidenceSequence(0.05, 100)
	ratio := cs.MeanHalfWidth(100, 1) / (TQuantile975(99) / 10)
	if ratio < 1.3 || ratio > 1.8 {
		t.Errorf("at the tuning point the sequence is %.2f× the t interval, want about 1.6×", ratio)
	}
	if cs.MeanHalfWidth(1000, 1) >= cs.MeanHalfWidth(100, 1) {
		t.Errorf("the interval must narrow with n")
	}
	iv := cs.QuantileInterval([]float64{1, 2, 3}, 0.5)
	if !math.IsInf(iv.Lo, -1) || !math.IsInf(iv.Hi, 1) {
		t.Errorf("3 values cannot bound the median at 95%% for all n: got %+v", iv)
	}
}
