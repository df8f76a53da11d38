package figure

import (
	"math"
	"slices"
	"testing"
	"time"
)

// A reading is taken as it is; without one, the counter's rise over the
// time between samples gives the power; the first counter sample has no
// rise to measure.
func TestPowerComesFromReadingsOrTheCountersRise(t *testing.T) {
	nan := math.NaN()
	tr := NewPowerTrace()
	tr.Add(0, nan, 1_000)                    // counter only: no rise yet
	tr.Add(100*time.Millisecond, nan, 6_000) // 5 J in 0.1 s: 50 W
	tr.Add(200*time.Millisecond, 70, nan)    // a reading
	tr.Add(300*time.Millisecond, nan, nan)   // nothing
	if !slices.Equal(tr.Watts, []float64{50, 70}) || !slices.Equal(tr.At, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
		t.Errorf("watts %v at %v", tr.Watts, tr.At)
	}
}
