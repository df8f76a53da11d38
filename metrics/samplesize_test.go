package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTrialsForMeanIsTheSmallestSufficientN(t *testing.T) {
	for _, tc := range []struct{ cv, tol float64 }{{0.05, 0.01}, {0.3, 0.05}, {0.02, 0.01}, {0.5, 0.01}} {
		n := TrialsForMean(tc.cv, tc.tol)
		halfWidth := func(n int) float64 { return TQuantile975(n-1) * tc.cv / math.Sqrt(float64(n)) }
		if halfWidth(n) > tc.tol || (n > 2 && halfWidth(n-1) <= tc.tol) {
			t.Errorf("TrialsForMean(%g, %g) = %d: half-width %g there, %g at n-1", tc.cv, tc.tol, n, halfWidth(n), halfWidth(n-1))
		}
	}
	if TrialsForMean(math.NaN(), 0.01) != 0 {
		t.Error("unknown CV must give 0")
	}
}

// On the exact quantiles of an exponential distribution the estimate must
// match the asymptotic answer n = (z·√(p(1-p)) / (f(q)·tol·q))², where f is
// the density at the quantile q.
func TestTrialsForQuantileMatchesAsymptotics(t *testing.T) {
	const n, p, tol = 4000, 0.95, 0.05
	sorted := make([]float64, n)
	for i := range sorted {
		sorted[i] = -math.Log(1 - (float64(i)+0.5)/n)
	}
	q, density := -math.Log(1-p), 1-p
	want := math.Pow(z975*math.Sqrt(p*(1-p))/(density*tol*q), 2)
	got := TrialsForQuantile(sorted, p, tol)
	if got.AtLeast || math.Abs(float64(got.N)-want)/want > 0.1 {
		t.Errorf("TrialsForQuantile = %+v, want about %.0f", got, want)
	}
}

func TestTrialsForQuantileNeedsATail(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sorted := make([]float64, 100)
	for i := range sorted {
		sorted[i] = float64(i) + rng.Float64()
	}
	got := TrialsForQuantile(sorted, 0.99, 0.05)
	if !got.AtLeast || got.N != 381 {
		t.Errorf("p99 from 100 trials: %+v, want 'at least' 381", got)
	}
	if lo, hi := quantileRanks(got.N, 0.99); lo < 1 || hi > got.N {
		t.Errorf("at the least n %d the interval's ranks %d..%d must exist", got.N, lo, hi)
	}
}

// Textbook: 63 per group (normal approximation) detect half a standard
// deviation with 80% power at α = 0.05.
func TestTrialsToDetect(t *testing.T) {
	// sd 1, delta 0.5, one test at α = 0.05: the z formula's 63, over
	// Mann-Whitney's efficiency 3/π: 66.
	if got := TrialsToDetect(1, 0.5, 0.05, 1); got != 66 {
		t.Errorf("TrialsToDetect(1, 0.5, 0.05, 1) = %d, want 66", got)
	}
	// In a family of 4, at α/4: 2·(2.498+0.842)²·4/(3/π) = 93.5.
	if got := TrialsToDetect(1, 0.5, 0.05, 4); got != 94 {
		t.Errorf("family of 4: %d, want 94", got)
	}
	// No spread at all: the exact test's minimum, 4 per arm at 0.05 and 5
	// at 0.0125, not the formula's 0 (or the old "~2").
	if got := TrialsToDetect(0, 0.5, 0.05, 1); got != 4 {
		t.Errorf("zero spread: %d, want 4", got)
	}
	if got := TrialsToDetect(0, 0.5, 0.05, 4); got != 5 {
		t.Errorf("zero spread, family 4: %d, want 5", got)
	}
}

func TestMannWhitneyCanReject(t *testing.T) {
	for _, c := range []struct {
		na, nb int
		alpha  float64
		want   bool
	}{{3, 3, 0.05, false}, {4, 4, 0.05, true}, {3, 5, 0.05, true}, {3, 4, 0.05, false}, {4, 4, 0.0125, false}, {5, 5, 0.0125, true}, {1, 100, 0.05, true}, {1, 30, 0.05, false}, {0, 9, 0.05, false}, {400, 400, 0.05, true}} {
		if got := MannWhitneyCanReject(c.na, c.nb, c.alpha); got != c.want {
			t.Errorf("%d vs %d at %g: %v", c.na, c.nb, c.alpha, got)
		}
	}
}

func TestLeastTrialsForQuantileInterval(t *testing.T) {
	if got := leastTrialsForQuantileInterval(0.95); got != 73 {
		t.Errorf("p95 interval exists from %d trials, want 73", got)
	}
}

// The order-statistic interval of the median holds the true median about
// 95% of the time, at any shape; below 8 values there is none.
func TestQuantileCICoversTheMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{8, 30, 200} {
		covered := 0
		const runs = 2000
		for range runs {
			x := make([]float64, n)
			for i := range x {
				x[i] = math.Exp(rng.NormFloat64()) // lognormal: its median is 1
			}
			slices.Sort(x)
			if ci := QuantileCI(x, 0.5); ci.Lo <= 1 && 1 <= ci.Hi {
				covered++
			}
		}
		t.Logf("n %d: the median's interval held it in %.1f%%", n, 100*float64(covered)/runs)
		if rate := float64(covered) / runs; rate < 0.93 {
			t.Errorf("n %d: covered %.1f%%", n, 100*rate)
		}
	}
	if ci := QuantileCI([]float64{1, 2, 3, 4, 5, 6, 7}, 0.5); !math.IsNaN(ci.Lo) {
		t.Errorf("7 values: %+v", ci)
	}
}
