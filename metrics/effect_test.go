package metrics

import (
	"math"
	"testing"
)

func TestCliffsDeltaCountsPairs(t *testing.T) {
	a := []float64{1, 2, 3}
	b := []float64{2, 4, 5, 6}
	// Pairs b > a: 2>1, 4,5,6 > all three: 1 + 9 = 10; ties (2,2): 1; less: 1.
	want := (10.0 - 1.0) / 12
	if got := CliffsDelta(MannWhitney(a, b), len(a), len(b)); math.Abs(got-want) > 1e-12 {
		t.Errorf("Cliff's delta = %g, want %g", got, want)
	}
	if got := CliffsDelta(MannWhitney(b, a), len(b), len(a)); math.Abs(got+want) > 1e-12 {
		t.Errorf("reversed = %g, want %g", got, -want)
	}
}

func TestCohensD(t *testing.T) {
	// Both sds are 1 (values m-1, m, m+1), means differ by 2: d = 2.
	if got := CohensD([]float64{0, 1, 2}, []float64{2, 3, 4}); math.Abs(got-2) > 1e-12 {
		t.Errorf("Cohen's d = %g, want 2", got)
	}
}

func TestMagnitudeThresholds(t *testing.T) {
	for d, want := range map[float64]string{0.1: "negligible", -0.2: "small", 0.4: "medium", -0.9: "large", math.NaN(): "unknown"} {
		if got := Magnitude(d); got != want {
			t.Errorf("Magnitude(%g) = %s, want %s", d, got, want)
		}
	}
}

// R's p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02.
func TestHolmMatchesR(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005, math.NaN()})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i, w := range want {
		if math.Abs(got[i]-w) > 1e-12 {
			t.Errorf("Holm = %v, want %v then NaN", got, want)
		}
	}
	if !math.IsNaN(got[4]) {
		t.Errorf("NaN p-value adjusted to %g", got[4])
	}
}

// SciPy's documented example for scipy.stats.levene (center="median", the
// Brown-Forsythe test): statistic 7.584952754501659, p 0.002431505967249681;
// and the first two groups alone, computed with SciPy 1.10.
func TestBrownForsytheMatchesSciPy(t *testing.T) {
	a := []float64{8.88, 9.12, 9.04, 8.98, 9.00, 9.08, 9.01, 8.85, 9.06, 8.99}
	b := []float64{8.88, 8.95, 9.29, 9.44, 9.15, 9.58, 8.36, 9.18, 8.67, 9.05}
	c := []float64{8.95, 9.12, 8.95, 8.85, 9.03, 8.84, 9.07, 8.98, 8.86, 8.98}
	for _, tc := range []struct {
		groups [][]float64
		f, p   float64
	}{
		{[][]float64{a, b, c}, 7.584952754501659, 0.002431505967249681},
		{[][]float64{a, b}, 8.461374333228711, 0.009364737715584399},
	} {
		f, p := BrownForsythe(tc.groups...)
		if math.Abs(f-tc.f) > 1e-9 || math.Abs(p-tc.p) > 1e-9 {
			t.Errorf("BrownForsythe = %.15g, %.15g; want %.15g, %.15g", f, p, tc.f, tc.p)
		}
	}
	if f, _ := BrownForsythe(a); !math.IsNaN(f) {
		t.Errorf("one group gave F %g, want NaN", f)
	}
}
