package metrics

import (
	"math"
	"testing"
)

func TestNormalQuantileInvertsCDF(t *testing.T) {
	for _, tc := range []struct{ p, z float64 }{{0.975, 1.959963984540054}, {0.8, 0.8416212335729143}, {0.5, 0}, {0.001, -3.090232306167813}} {
		if got := NormalQuantile(tc.p); math.Abs(got-tc.z) > 1e-9 {
			t.Errorf("NormalQuantile(%g) = %.12f, want %.12f", tc.p, got, tc.z)
		}
		if got := NormalCDF(tc.z); math.Abs(got-tc.p) > 1e-12 {
			t.Errorf("NormalCDF(%g) = %.12f, want %g", tc.z, got, tc.p)
		}
	}
}

// F-table values: the upper 5% and 1% points of F (Abramowitz & Stegun
// table 26.9) have survival 0.05 and 0.01.
func TestFSurvivalMatchesTables(t *testing.T) {
	for _, tc := range []struct{ f, d1, d2, p float64 }{
		{4.96, 1, 10, 0.05},
		{3.89, 2, 12, 0.05},
		{2.69, 4, 30, 0.05},
		{10.04, 1, 10, 0.01},
		{3.84, 1, 1e6, 0.05}, // F(1, ∞) is chi-square(1)
	} {
		if got := FSurvival(tc.f, tc.d1, tc.d2); math.Abs(got-tc.p) > 0.0015 {
			t.Errorf("FSurvival(%g; %g, %g) = %.5f, want %.3f", tc.f, tc.d1, tc.d2, got, tc.p)
		}
	}
	if got := FSurvival(0, 3, 5); got != 1 {
		t.Errorf("FSurvival(0) = %g, want 1", got)
	}
}
