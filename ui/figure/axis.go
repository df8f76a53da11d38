package figure

import (
	"math"
	"slices"

	"github.com/tokentop/tokentop/metrics"
)

// farFence is how many (p95 − p50) spans past p95 a value may lie before
// a chart clips it: a latency's tail is long, so the fence is far, and
// only values that would flatten the rest are clipped.
const farFence = 3

// AxisTop is where a value axis should end so that a few far outliers do
// not flatten every other value into a line (one 3.3 s trial among 30 ms
// ones did): the largest value of any column within its own far fence,
// p95 + 3·(p95 − p50). Each sorted column is ascending; NaN values are
// not in them. With no values it is NaN.
func AxisTop(sorted ...[]float64) float64 {
	top := math.NaN()
	for _, s := range sorted {
		if len(s) == 0 {
			continue
		}
		p50, p95 := metrics.PercentileSorted(s, 0.5), metrics.PercentileSorted(s, 0.95)
		fence := p95 + farFence*(p95-p50)
		// The largest value at or below the fence.
		i, _ := slices.BinarySearch(s, math.Nextafter(fence, math.Inf(1)))
		if v := s[max(0, i-1)]; math.IsNaN(top) || v > top {
			top = v
		}
	}
	return top
}

// Clipped counts the values above top, and gives the largest, for a
// chart's caption: the points drawn at its edge are counted and their
// reach said.
type Clipped struct {
	N   int
	Max float64
}

// ClippedAbove counts the values of every column above top.
func ClippedAbove(top float64, sorted ...[]float64) Clipped {
	var c Clipped
	for _, s := range sorted {
		i, _ := slices.BinarySearch(s, math.Nextafter(top, math.Inf(1)))
		if n := len(s) - i; n > 0 {
			c.N += n
			c.Max = math.Max(c.Max, s[len(s)-1])
		}
	}
	return c
}
