package metrics

import (
	"math"
	"slices"
)

// CliffsDelta is P(b > a) - P(b < a) over all pairs, from the Mann-Whitney
// U of b against a: +1 when every b exceeds every a, 0 when neither side
// tends to be larger.
func CliffsDelta(mw MannWhitneyResult, na, nb int) float64 {
	return 2*mw.U/float64(na*nb) - 1
}

// CohensD is the difference of means, b minus a, in units of PooledStd.
func CohensD(a, b []float64) float64 {
	return (Mean(b) - Mean(a)) / PooledStd(a, b)
}

// PooledStd is the standard deviation the two samples share, each about
// its own mean, so a difference between them does not inflate it:
// √(((na-1)·sa² + (nb-1)·sb²) / (na+nb-2)). NaN below two values a side.
func PooledStd(a, b []float64) float64 {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN()
	}
	var wa, wb Welford
	for _, v := range a {
		wa.Add(v)
	}
	for _, v := range b {
		wb.Add(v)
	}
	na, nb := float64(len(a)), float64(len(b))
	return math.Sqrt(((na-1)*wa.Std()*wa.Std() + (nb-1)*wb.Std()*wb.Std()) / (na + nb - 2))
}

// Magnitude names the size of a Cliff's delta by the thresholds of Romano
// et al. (2006): negligible below 0.147, small below 0.33, medium below
// 0.474, large from there.
func Magnitude(cliffsDelta float64) string {
	switch d := math.Abs(cliffsDelta); {
	case math.IsNaN(d):
		return "unknown"
	case d < 0.147:
		return "negligible"
	case d < 0.33:
		return "small"
	case d < 0.474:
		return "medium"
	}
	return "large"
}

// Holm adjusts p-values for multiple comparisons by Holm's step-down
// method, which controls the family-wise error rate without assuming the
// tests are independent. NaN p-values stay NaN and do not count.
func Holm(p []float64) []float64 {
	adjusted := make([]float64, len(p))
	var order []int
	for i, v := range p {
		adjusted[i] = math.NaN()
		if !math.IsNaN(v) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case p[i] < p[j]:
			return -1
		case p[i] > p[j]:
			return 1
		}
		return 0
	})
	running := 0.0
	for rank, i := range order {
		running = max(running, min(1, float64(len(order)-rank)*p[i]))
		adjusted[i] = running
	}
	return adjusted
}

// absDeviations is each value's distance from the values' median.
func absDeviations(values []float64) []float64 {
	med := Median(slices.Clone(values))
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = math.Abs(v - med)
	}
	return out
}

// MeanAbsDeviation is the mean distance of values from their median: the
// spread BrownForsythe compares between groups.
func MeanAbsDeviation(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	return Mean(absDeviations(values))
}

// BrownForsythe tests whether groups differ in spread: a one-way ANOVA on
// each value's absolute deviation from its group's median (Levene's test
// with the median, robust to the skew latencies have). It returns the F
// statistic and its p-value; fewer than two groups, or a group with fewer
// than two values, give NaN.
func BrownForsythe(groups ...[]float64) (f, p float64) {
	k := len(groups)
	if k < 2 {
		return math.NaN(), math.NaN()
	}
	deviations := make([][]float64, k)
	total, grand := 0, 0.0
	for g, values := range groups {
		if len(values) < 2 {
			return math.NaN(), math.NaN()
		}
		deviations[g] = absDeviations(values)
		for _, d := range deviations[g] {
			grand += d
		}
		total += len(values)
	}
	grand /= float64(total)
	between, within := 0.0, 0.0
	for _, dev := range deviations {
		m := Mean(dev)
		between += float64(len(dev)) * (m - grand) * (m - grand)
		for _, d := range dev {
			within += (d - m) * (d - m)
		}
	}
	if within == 0 {
		return math.NaN(), math.NaN()
	}
	d1, d2 := float64(k-1), float64(total-k)
	f = (between / d1) / (within / d2)
	return f, FSurvival(f, d1, d2)
}
