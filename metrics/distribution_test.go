package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDistributionMatchesDescribe(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d Distribution
	var values []float64
	for i := 0; i < 500; i++ {
		x := math.Round(rng.ExpFloat64()*1000) / 100 // ties on purpose
		values = append(values, x)
		d.Add(x)
		if i%97 == 0 {
			d.Add(math.NaN()) // unknown fields are skipped
		}
		got, want := d.Stats(), Describe(values)
		if got.N != want.N || got.Min != want.Min || got.Max != want.Max || got.P50 != want.P50 || got.P95 != want.P95 ||
			got.P99 != want.P99 || math.Abs(got.Mean-want.Mean) > 1e-9 || (i > 0 && math.Abs(got.Std-want.Std) > 1e-9) {
			t.Fatalf("after %d values: got %+v want %+v", i+1, got, want)
		}
	}
}

func TestDistributionCountsMatchAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d Distribution
	var values []float64
	for i := 0; i < 300; i++ {
		x := float64(rng.IntN(50))
		values = append(values, x)
		d.Add(x)
	}
	edges := EqualBins(10, 40, 6)
	counts := d.Counts(edges)
	for b := range counts {
		want := 0
		for _, v := range values {
			last := b == len(counts)-1
			if v >= edges[b] && (v < edges[b+1] || last && v == edges[b+1]) {
				want++
			}
		}
		if counts[b] != want {
			t.Errorf("bin %d [%g, %g): %d, want %d", b, edges[b], edges[b+1], counts[b], want)
		}
	}
	full := d.Counts(EqualBins(d.Stats().Min, d.Stats().Max, 7))
	total := 0
	for _, c := range full {
		total += c
	}
	if total != d.N() {
		t.Errorf("bins over [min, max] hold %d of %d values", total, d.N())
	}
}

func TestEqualBinsOfOneValue(t *testing.T) {
	var d Distribution
	d.Add(5)
	d.Add(5)
	edges := EqualBins(5, 5, 3)
	if c := d.Counts(edges); c[0]+c[1]+c[2] != 2 || edges[0] >= 5 || edges[3] <= 5 {
		t.Errorf("edges %v counts %v", edges, c)
	}
}

func BenchmarkDistributionAdd10k(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([]float64, 10000)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	for b.Loop() {
		var d Distribution
		for _, x := range xs {
			d.Add(x)
		}
	}
}
