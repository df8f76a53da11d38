package metrics

import (
	"math"
	"testing"
)

// SciPy's documented example (scipy.stats.mannwhitneyu: ages of male and
// female staff, from Conover's textbook): U = 17 for the males, exact
// two-sided p = 0.1111, normal approximation 0.11134688653314041.
func TestMannWhitneyPublishedExample(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	got := MannWhitney(females, males)
	if got.U != 17 || !got.Exact || math.Abs(got.P-1.0/9) > 1e-12 {
		t.Errorf("exact: %+v, want U 17, p 1/9", got)
	}
	// The reverse direction counts the other pairs: U' = na·nb - U.
	if rev := MannWhitney(males, females); rev.U != 3 || math.Abs(rev.P-got.P) > 1e-12 {
		t.Errorf("reversed: %+v, want U 3 and the same p", rev)
	}
	if p := normalUPValue(17, 4, 5, 0); math.Abs(p-0.11134688653314041) > 1e-12 {
		t.Errorf("normal approximation p = %.17g, want 0.11134688653314041", p)
	}
}

// Reference values computed with SciPy 1.10 (mannwhitneyu, two-sided).
func TestMannWhitneyAgainstSciPy(t *testing.T) {
	a := []float64{10.346, 10.822, 10.33, 8.697, 10.905, 10.446, 9.463, 10.581, 10.365, 10.294, 10.028, 10.547, 9.264, 9.837, 9.518,
		10.599, 10.04, 9.708, 9.218, 9.743, 10.008, 9.724, 11.294, 11.007, 7.289, 8.111, 9.825, 9.578, 10.214, 10.217}
	b := []float64{12.718, 9.488, 10.222, 12.643, 11.247, 11.263, 10.086, 8.952, 10.767, 10.709, 9.373, 9.917, 10.528, 9.655, 10.502,
		10.695, 10.636, 10.094, 11.194, 11.491, 10.921, 9.782, 11.332, 10.099, 11.479}
	got := MannWhitney(a, b)
	if got.U != 527 || !got.Exact || math.Abs(got.P-0.009652452814686316) > 1e-12 {
		t.Errorf("30 vs 25 exact: %+v, want U 527, p 0.009652452814686316", got)
	}
	// Ties: normal approximation with tie and continuity corrections.
	tied := MannWhitney([]float64{1, 2, 2, 3, 3, 3, 4, 5}, []float64{3, 4, 4, 5, 5, 6, 7})
	if tied.U != 48.5 || tied.Exact || math.Abs(tied.P-0.018530522991017574) > 1e-12 {
		t.Errorf("tied: %+v, want U 48.5, p 0.018530522991017574", tied)
	}
}

// The exact null distribution of U is symmetric, sums to C(na+nb, na),
// and matches small cases counted by hand.
func TestUFrequencies(t *testing.T) {
	// na = nb = 2: of the 6 orders, U = 2 for abba and baab, one each else.
	want := []float64{1, 1, 2, 1, 1}
	got := uFrequencies(2, 2)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("uFrequencies(2, 2) = %v, want %v", got, want)
		}
	}
	f := uFrequencies(12, 9)
	total := 0.0
	for u := range f {
		total += f[u]
		if f[u] != f[len(f)-1-u] {
			t.Fatalf("not symmetric at u = %d", u)
		}
	}
	if total != 293930 { // C(21, 9)
		t.Errorf("total %g, want C(21, 9) = 293930", total)
	}
}

func TestMannWhitneyDegenerate(t *testing.T) {
	if r := MannWhitney(nil, []float64{1}); !math.IsNaN(r.P) {
		t.Errorf("empty side: %+v, want NaN", r)
	}
	if r := MannWhitney([]float64{5, 5, 5}, []float64{5, 5}); r.P != 1 {
		t.Errorf("all equal: %+v, want p 1", r)
	}
}

// The exact distribution at its size limit, 50 against 50.
func BenchmarkMannWhitneyExact50x50(b *testing.B) {
	a, c := make([]float64, 50), make([]float64, 50)
	for i := range a {
		a[i], c[i] = float64(2*i), float64(2*i+1)
	}
	for b.Loop() {
		if !MannWhitney(a, c).Exact {
			b.Fatal("not exact")
		}
	}
}
