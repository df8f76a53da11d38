package metrics

import (
	"math"
	"testing"
	"time"
)

// TestEveryStatisticSurvivesValuesThatAreNotFinite: one e2e of 1e160 made
// a CV infinite and TrialsForMean loop for ever (int(Ceil(+Inf)) is
// negative). Every statistic, fed infinities, NaN, the largest floats and
// negative values, returns, with no index out of range, and no count of
// trials needed that is negative or past TooManyTrials.
func TestEveryStatisticSurvivesValuesThatAreNotFinite(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	samples := [][]float64{
		{1, 2, 3, 1e160},
		{1, 2, inf, 4, 5},
		{-inf, 1, 2, inf},
		{nan, 1, 2, 3},
		{math.MaxFloat64, math.MaxFloat64, 1},
		{-5, -1, 0, 3},
		{7},
		{},
	}
	trials := func(what string, n int) {
		if n < 0 || n > TooManyTrials {
			t.Errorf("%s: %d trials", what, n)
		}
	}
	for _, s := range samples {
		st := Describe(append([]float64(nil), s...))
		trials("TrialsForMean", TrialsForMean(st.CV, 0.01))
		trials("TrialsForMean(huge cv)", TrialsForMean(1e10, 1e-10))
		trials("TrialsToDetect", TrialsToDetect(st.Std, 0.02*st.Mean, 0.05, 4))
		sorted := append([]float64(nil), s...)
		if !hasNaN(sorted) {
			sortFloats(sorted)
			for _, p := range []float64{0, 0.5, 0.95, 0.99, 1} {
				trials("TrialsForQuantile", TrialsForQuantile(sorted, p, 0.05).N)
				PercentileSorted(sorted, p)
			}
			NewConfidenceSequence(0.05, 100).QuantileInterval(sorted, 0.5)
		}
		Mean(s)
		Median(append([]float64(nil), s...))
		CV(s)
		DescribeShape(s)
		MSER5(s)
		ConvergedAt(s, 0.01)
		MeanAbsDeviation(s)
		BrownForsythe(s, []float64{1, 2, 3})
		MannWhitney(s, []float64{1, 2, 3})
		CohensD(s, []float64{1, 2, 3})
		FitLine(s, s)
		Bootstrap(s, Mean, 100, 1)
		BootstrapTwoSample(s, []float64{1, 2, 3, 4}, 100, 1)
		var series Series
		var running RunningMedian
		for _, v := range s {
			series.Add(v)
			running.Add(v)
		}
	}
	for _, cv := range []float64{inf, nan, -1, 0, 1e300} {
		trials("TrialsForMean", TrialsForMean(cv, 0.01))
	}
	if n := TrialsForMean(inf, 0.01); n != 0 {
		t.Errorf("an infinite CV needs %d trials; want 0 (unknown)", n)
	}
	if n := TrialsForMean(1e10, 1e-10); n != TooManyTrials {
		t.Errorf("a CV no study could pin needs %d trials; want TooManyTrials", n)
	}
	DeriveTimings([]Arrival{{At: time.Hour * 1e6, Tokens: 1}, {At: -time.Second, Tokens: 1}}, time.Nanosecond, -1)
}

func hasNaN(s []float64) bool {
	for _, v := range s {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

func sortFloats(s []float64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
