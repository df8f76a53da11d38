package metrics

import (
	"math"
	"slices"
	"sort"
)

// Distribution accumulates one metric's values for live display. It keeps
// them ordered, so quantiles cost O(1) and histogram bins O(log n) each,
// however many trials a run has: a 10,000-trial dashboard redraws as fast
// as a 10-trial one. Adding costs a binary search and a move.
type Distribution struct {
	sorted []float64
	w      Welford
}

// Add folds in one value; NaN (an unknown field) is skipped.
func (d *Distribution) Add(x float64) {
	if math.IsNaN(x) {
		return
	}
	d.sorted = slices.Insert(d.sorted, sort.SearchFloat64s(d.sorted, x), x)
	d.w.Add(x)
}

// N is the count of values.
func (d *Distribution) N() int { return len(d.sorted) }

// Sorted are the values in ascending order; do not modify.
func (d *Distribution) Sorted() []float64 { return d.sorted }

// Stats are what Describe gives for the same values.
func (d *Distribution) Stats() Stats {
	st := Describe(nil)
	n := len(d.sorted)
	if n == 0 {
		return st
	}
	st.N = n
	st.Mean, st.Std, st.CV = d.w.Mean(), d.w.Std(), d.w.CV()
	st.Min, st.Max = d.sorted[0], d.sorted[n-1]
	st.P50, st.P95, st.P99 = PercentileSorted(d.sorted, 0.50), PercentileSorted(d.sorted, 0.95), PercentileSorted(d.sorted, 0.99)
	st.Median = st.P50
	return st
}

// Counts returns how many values fall in each bin [edges[i], edges[i+1]);
// the last bin also holds values equal to its upper edge. Values outside
// the edges are not counted.
func (d *Distribution) Counts(edges []float64) []int {
	if len(edges) < 2 {
		return nil
	}
	counts := make([]int, len(edges)-1)
	below := sort.SearchFloat64s(d.sorted, edges[0])
	for i := range counts {
		upTo := sort.SearchFloat64s(d.sorted, edges[i+1])
		if i == len(counts)-1 {
			upTo = sort.Search(len(d.sorted), func(j int) bool { return d.sorted[j] > edges[i+1] })
		}
		counts[i] = upTo - below
		below = upTo
	}
	return counts
}

// EqualBins returns n+1 edges splitting [lo, hi] evenly; a zero-width
// range is widened so a run of identical values still gets one bin.
func EqualBins(lo, hi float64, n int) []float64 {
	if hi <= lo {
		pad := math.Max(math.Abs(lo)*0.01, 1e-9)
		lo, hi = lo-pad, hi+pad
	}
	edges := make([]float64, n+1)
	for i := range edges {
		edges[i] = lo + (hi-lo)*float64(i)/float64(n)
	}
	edges[n] = hi
	return edges
}
