package metrics

import (
	"math"
	"slices"
)

// Shape describes a distribution beyond its centre and spread.
type Shape struct {
	// Skewness is the adjusted Fisher-Pearson coefficient G1: above 0 a
	// long right tail (a few slow trials), below 0 a long left one.
	Skewness float64
	// Bimodality is Sarle's bimodality coefficient (G1²+1)/(G2 + 3(n-1)²/
	// ((n-2)(n-3))); above 5/9 (the value of a uniform distribution) hints
	// at two or more modes, or a very heavy tail.
	Bimodality float64
	// LowFence and HighFence are Tukey's: 1.5 interquartile ranges beyond
	// the quartiles.
	LowFence, HighFence float64
	// Outliers are the indices (in the order given) of values outside the
	// fences.
	Outliers []int
}

// BimodalityThreshold is the bimodality coefficient of a uniform
// distribution; a larger one suggests more than one mode.
const BimodalityThreshold = 5.0 / 9

// DescribeShape computes the shape of values (in their arrival order, so
// Outliers can say which trials they were). Skewness needs 3 values and
// the bimodality coefficient 4; below that they are NaN.
func DescribeShape(values []float64) Shape {
	s := Shape{Skewness: math.NaN(), Bimodality: math.NaN(), LowFence: math.NaN(), HighFence: math.NaN()}
	n := float64(len(values))
	if len(values) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(values))
	q1, q3 := PercentileSorted(sorted, 0.25), PercentileSorted(sorted, 0.75)
	s.LowFence, s.HighFence = q1-1.5*(q3-q1), q3+1.5*(q3-q1)
	for i, v := range values {
		if v < s.LowFence || v > s.HighFence {
			s.Outliers = append(s.Outliers, i)
		}
	}
	m := Mean(values)
	var m2, m3, m4 float64
	for _, v := range values {
		d := v - m
		m2 += d * d
		m3 += d * d * d
		m4 += d * d * d * d
	}
	m2, m3, m4 = m2/n, m3/n, m4/n
	if len(values) >= 3 && m2 > 0 {
		s.Skewness = math.Sqrt(n*(n-1)) / (n - 2) * m3 / math.Pow(m2, 1.5)
	}
	if len(values) >= 4 && m2 > 0 {
		g2 := m4/(m2*m2) - 3
		excess := (n - 1) / ((n - 2) * (n - 3)) * ((n+1)*g2 + 6)
		s.Bimodality = (s.Skewness*s.Skewness + 1) / (excess + 3*(n-1)*(n-1)/((n-2)*(n-3)))
	}
	return s
}
