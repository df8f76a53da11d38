package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Reference: SciPy 1.10 skew(bias=False) = 2.905823136078587 and, with
// kurtosis(bias=False), the bimodality coefficient 0.7236845639074425;
// NumPy's quartiles 2.2125 and 2.3875.
func TestDescribeShapeMatchesSciPy(t *testing.T) {
	x := []float64{2.1, 2.3, 2.2, 2.8, 2.2, 2.4, 5.0, 2.3, 2.25, 2.35}
	s := DescribeShape(x)
	if math.Abs(s.Skewness-2.905823136078587) > 1e-12 || math.Abs(s.Bimodality-0.7236845639074425) > 1e-12 {
		t.Errorf("skewness %.15g, bimodality %.15g", s.Skewness, s.Bimodality)
	}
	iqr := 2.3875 - 2.2125
	if math.Abs(s.HighFence-(2.3875+1.5*iqr)) > 1e-12 || math.Abs(s.LowFence-(2.2125-1.5*iqr)) > 1e-12 {
		t.Errorf("fences %g..%g", s.LowFence, s.HighFence)
	}
	if !slices.Equal(s.Outliers, []int{3, 6}) {
		t.Errorf("outliers at %v, want trials 3 and 6 (2.8 and 5.0)", s.Outliers)
	}
}

func TestBimodalityCoefficientSeesTwoModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	one, two := make([]float64, 400), make([]float64, 400)
	for i := range one {
		one[i] = 100 + 5*rng.NormFloat64()
		two[i] = 100 + 5*rng.NormFloat64() + float64(i%2)*40
	}
	if b := DescribeShape(one).Bimodality; b >= BimodalityThreshold {
		t.Errorf("normal data: bimodality %.3f, want below 5/9", b)
	}
	if b := DescribeShape(two).Bimodality; b <= BimodalityThreshold {
		t.Errorf("two modes: bimodality %.3f, want above 5/9", b)
	}
}

// A series that starts 60% slow and decays over its first 25 values, then
// stays flat with noise, settles at about 25; a flat series at once.
func TestMSER5FindsTheTransient(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	series := make([]float64, 200)
	flat := make([]float64, 200)
	for i := range series {
		noise := rng.NormFloat64()
		flat[i] = 100 + noise
		series[i] = 100 + noise
		if i < 25 {
			series[i] += 60 * float64(25-i) / 25
		}
	}
	if d, ok := MSER5(series); !ok || d < 15 || d > 35 {
		t.Errorf("transient of 25: truncate %d (ok %v), want 15..35", d, ok)
	}
	if d, ok := MSER5(flat); !ok || d > 10 {
		t.Errorf("flat series: truncate %d (ok %v), want at most 10", d, ok)
	}
	if _, ok := MSER5(flat[:19]); ok {
		t.Error("19 values are too few to tell")
	}
}
