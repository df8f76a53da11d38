package figure

import (
	"math"
	"slices"
	"testing"

	"github.com/tokentop/tokentop/metrics"
)

// Histogram bins come from the data: a few hundred trials on a wide panel
// get Freedman–Diaconis bins, not one bin per column (a barcode of
// one-trial columns); the finest series decides, so all share them.
func TestBinsComeFromTheData(t *testing.T) {
	var wide, narrow metrics.Distribution
	for i := range 300 {
		wide.Add(100 + float64((i*37)%100))  // uniform over 100..199: IQR 50
		narrow.Add(120 + float64((i*37)%20)) // IQR 10, so finer bins
	}
	both := []*metrics.Distribution{&wide, &narrow}
	// FD width for narrow: 2·10/300^(1/3) ≈ 2.99, over 100..199: 34 bins.
	if got := binCount(both, 100, 199, 190); got < 30 || got > 36 {
		t.Errorf("%d bins for 300 trials over 190 columns; Freedman–Diaconis gives about 34", got)
	}
	if got := binCount(both[:1], 100, 199, 190); got < 6 || got > 8 {
		t.Errorf("%d bins for the wide series alone; Freedman–Diaconis gives about 7", got)
	}
	if got := binCount(both, 100, 199, 20); got != 20 {
		t.Errorf("%d bins in 20 columns; at most one per column", got)
	}
	var two metrics.Distribution
	two.Add(1)
	two.Add(2)
	if got := binCount([]*metrics.Distribution{&two}, 1, 2, 100); got != 2 {
		t.Errorf("%d bins for 2 values; Sturges gives 2", got)
	}
}

// Every series shares the edges, values past the largest p99 pile into the
// last bin and are flagged, and a series without values is left out with
// the others keeping their index (their colour).
func TestAHistogramSharesItsBinsAndCountsEveryValue(t *testing.T) {
	var empty, a, b metrics.Distribution
	for i := range 200 {
		a.Add(10 + float64(i%50))
		b.Add(20 + float64(i%30))
	}
	b.Add(10_000) // far past any p99
	h := NewHistogram([]string{"none", "a", "b"}, []*metrics.Distribution{&empty, &a, &b}, 80)
	if len(h.Series) != 2 || h.Series[0].Index != 1 || h.Series[1].Name != "b" {
		t.Fatalf("series %+v", h.Series)
	}
	if !h.Overflow || h.Lo() != 10 || h.Hi() >= 10_000 {
		t.Errorf("edges %v..%v, overflow %v", h.Lo(), h.Hi(), h.Overflow)
	}
	for i, s := range h.Series {
		total := 0
		for _, c := range s.Counts {
			total += c
		}
		if len(s.Counts) != len(h.Edges)-1 || total != s.Stats.N {
			t.Errorf("series %d: %d counts for %d bins, %d of %d values", i, len(s.Counts), len(h.Edges)-1, total, s.Stats.N)
		}
	}
	if none := NewHistogram([]string{"x"}, []*metrics.Distribution{&empty}, 80); none.Series != nil || none.Edges != nil {
		t.Errorf("no values, yet %+v", none)
	}
	if got := Bin(h.Edges, math.NaN()); got != -1 {
		t.Errorf("NaN in bin %d", got)
	}
	if !slices.IsSorted(h.Edges) {
		t.Errorf("edges out of order: %v", h.Edges)
	}
}
