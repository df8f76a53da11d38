package metrics

import (
	"math"
	"testing"
)

// Against the textbook formulas worked by hand (scipy.stats.linregress
// gives the same slope, intercept and standard error).
func TestFitLine(t *testing.T) {
	f := FitLine([]float64{1, 2, 3, 4, 5, 6}, []float64{2.1, 3.9, 6.2, 7.8, 10.1, 12.2})
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"slope", f.Slope, 2.02}, {"intercept", f.Intercept, -0.02}, {"lo", f.SlopeCI.Lo, 1.90127}, {"hi", f.SlopeCI.Hi, 2.13873}} {
		if math.Abs(c.got-c.want) > 1e-4 {
			t.Errorf("%s %v, want %v", c.name, c.got, c.want)
		}
	}
	if f := FitLine([]float64{3, 3, 3}, []float64{1, 2, 3}); !math.IsNaN(f.Slope) {
		t.Errorf("x all equal: slope %v", f.Slope)
	}
	if f := FitLine([]float64{1, 2}, []float64{1, 3}); f.Slope != 2 || !math.IsNaN(f.SlopeCI.Lo) {
		t.Errorf("two points: %+v", f)
	}
}
