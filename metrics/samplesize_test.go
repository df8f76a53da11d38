package metrics

import (
	"math"
	"math/rand/v2"
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
	if got := TrialsToDetect(1, 0.5); got != 63 {
		t.Errorf("TrialsToDetect(1, 0.5) = %d, want 63", got)
	}
}

func TestLeastTrialsForQuantileInterval(t *testing.T) {
	if got := leastTrialsForQuantileInterval(0.95); got != 73 {
		t.Errorf("p95 interval exists from %d trials, want 73", got)
	}
}
