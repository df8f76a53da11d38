package figure

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// AxisTop clips only far outliers: one 3.3 s trial among 30 ms ones, not
// the tail of a long-tailed latency (lognormal, σ 0.5), where it leaves
// out fewer than 1 in 500 values.
func TestAxisTopClipsOnlyFarOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var steady []float64
	for range 40 {
		steady = append(steady, 30+3*rng.NormFloat64())
	}
	slices.Sort(steady)
	if top := AxisTop(steady); top != steady[len(steady)-1] {
		t.Errorf("no outlier: top %v, want the largest value %v", top, steady[len(steady)-1])
	}
	withOutlier := append(slices.Clone(steady), 3300)
	top := AxisTop(withOutlier)
	if top != steady[len(steady)-1] {
		t.Errorf("one outlier: top %v, want the largest other value %v", top, steady[len(steady)-1])
	}
	if c := ClippedAbove(top, withOutlier, steady); c.N != 1 || c.Max != 3300 {
		t.Errorf("clipped %+v, want the one outlier", c)
	}
	var tail []float64
	for range 10000 {
		tail = append(tail, math.Exp(0.5*rng.NormFloat64()))
	}
	slices.Sort(tail)
	if c := ClippedAbove(AxisTop(tail), tail); c.N > len(tail)/500 {
		t.Errorf("a long tail loses %d of %d values", c.N, len(tail))
	}
	// Several columns: the axis holds each one's bulk.
	fast, slow := []float64{1, 2, 3}, []float64{100, 110, 120}
	if top := AxisTop(fast, slow); top != 120 {
		t.Errorf("top of two columns %v, want 120", top)
	}
	if !math.IsNaN(AxisTop()) || !math.IsNaN(AxisTop(nil)) {
		t.Error("no values: want NaN")
	}
}
