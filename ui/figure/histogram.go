// Package figure holds the pictures' models: what a chart shows (bins and
// counts, curves, marks), computed once from a run's data, with no notion
// of how it is drawn. The dashboard draws them with glyphs, the HTML
// report with gonum/plot, so the two cannot disagree.
package figure

import (
	"math"

	"github.com/tokentop/tokentop/metrics"
)

// Histogram is several series over the same bins.
type Histogram struct {
	// Edges are the bins' bounds, from the smallest value to the largest
	// p99 of any series: one outlier does not squash the rest into a bin.
	Edges []float64
	// Overflow is set when some values lie beyond the last edge; they are
	// counted in the last bin.
	Overflow bool
	Series   []HistSeries
}

// HistSeries is one arm (or session) in a Histogram.
type HistSeries struct {
	Index  int // position among the series given, which picks its colour
	Name   string
	Counts []int // per bin, the values beyond the last edge in the last
	Stats  metrics.Stats
}

// Lo and Hi are the span of the bins.
func (h *Histogram) Lo() float64 { return h.Edges[0] }
func (h *Histogram) Hi() float64 { return h.Edges[len(h.Edges)-1] }

// NewHistogram bins every series with data over shared edges, at most
// maxBins of them (a chart's columns). Series without values are left out;
// with none at all the histogram has no series and no edges.
func NewHistogram(names []string, dists []*metrics.Distribution, maxBins int) Histogram {
	lo, hi := math.Inf(1), math.Inf(-1)
	var h Histogram
	var withData []*metrics.Distribution
	for i, d := range dists {
		if d.N() == 0 {
			continue
		}
		st := d.Stats()
		// The bins end at p99, or before a far outlier that p99 of a few
		// trials still reaches (AxisTop); the rest pile into the last bin.
		lo, hi = math.Min(lo, st.Min), math.Max(hi, math.Min(st.P99, AxisTop(d.Sorted())))
		h.Series = append(h.Series, HistSeries{Index: i, Name: names[i], Stats: st})
		withData = append(withData, d)
	}
	if len(withData) == 0 {
		return h
	}
	h.Edges = metrics.EqualBins(lo, hi, binCount(withData, lo, hi, maxBins))
	for i, d := range withData {
		counts := d.Counts(h.Edges)
		inBins := 0
		for _, c := range counts {
			inBins += c
		}
		if extra := d.N() - inBins; extra > 0 {
			counts[len(counts)-1] += extra
			h.Overflow = true
		}
		h.Series[i].Counts = counts
	}
	return h
}

// binCount chooses how many equal bins span [lo, hi]: the Freedman–Diaconis
// width (2·IQR·n^(-1/3)), the finest any series asks for, so that each
// bin holds enough trials to mean something; maxBins is the most a chart
// can show. Sturges' rule stands in where the IQR is zero or the trials
// are too few for quartiles.
func binCount(dists []*metrics.Distribution, lo, hi float64, maxBins int) int {
	if !(hi > lo) {
		return 1
	}
	width, total := math.Inf(1), 0
	for _, d := range dists {
		sorted := d.Sorted()
		total += len(sorted)
		if len(sorted) < 4 {
			continue
		}
		if iqr := metrics.PercentileSorted(sorted, 0.75) - metrics.PercentileSorted(sorted, 0.25); iqr > 0 {
			width = math.Min(width, 2*iqr/math.Cbrt(float64(len(sorted))))
		}
	}
	bins := int(math.Ceil(math.Log2(float64(max(1, total))))) + 1
	if !math.IsInf(width, 1) {
		bins = int(math.Ceil((hi - lo) / width))
	}
	return max(1, min(maxBins, bins))
}

// Bin is the bin of edges holding v, or -1 outside them.
func Bin(edges []float64, v float64) int {
	if math.IsNaN(v) || v < edges[0] || v > edges[len(edges)-1] {
		return -1
	}
	for i := 1; i < len(edges); i++ {
		if v < edges[i] {
			return i - 1
		}
	}
	return len(edges) - 2
}
