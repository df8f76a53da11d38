package metrics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The running median matches sorting each prefix, with ties, both parities
// and values arriving in every order.
func TestRunningMedianMatchesSortingEachPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, values := range [][]float64{{5}, {2, 1}, {1, 1, 1, 2}, {3, 1, 2, 5, 4}} {
		var m RunningMedian
		for i, v := range values {
			if got, want := m.Add(v), PercentileSorted(slices.Sorted(slices.Values(values[:i+1])), 0.5); got != want {
				t.Errorf("%v after %d: %v, want %v", values, i+1, got, want)
			}
		}
	}
	var m RunningMedian
	var seen []float64
	for i := range 2000 {
		v := float64(rng.IntN(50)) // many ties
		seen = append(seen, v)
		got := m.Add(v)
		if want := PercentileSorted(slices.Sorted(slices.Values(seen)), 0.5); got != want {
			t.Fatalf("value %d: %v, want %v", i, got, want)
		}
	}
}
