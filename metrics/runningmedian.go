package metrics

import "container/heap"

// RunningMedian gives the median of the values so far after each Add, in
// O(log n) per value: the lower half in a max-heap, the upper half in a
// min-heap, balanced so the lower half holds the extra value.
type RunningMedian struct {
	lower maxHeap
	upper minHeap
}

// Add folds in x and returns the median of every value so far.
func (m *RunningMedian) Add(x float64) float64 {
	if m.lower.Len() == 0 || x <= m.lower.f64[0] {
		heap.Push(&m.lower, x)
	} else {
		heap.Push(&m.upper, x)
	}
	switch {
	case m.lower.Len() > m.upper.Len()+1:
		heap.Push(&m.upper, heap.Pop(&m.lower))
	case m.upper.Len() > m.lower.Len():
		heap.Push(&m.lower, heap.Pop(&m.upper))
	}
	if m.lower.Len() > m.upper.Len() {
		return m.lower.f64[0]
	}
	return (m.lower.f64[0] + m.upper.f64[0]) / 2
}

type f64s struct{ f64 []float64 }

func (h f64s) Len() int        { return len(h.f64) }
func (h f64s) Swap(i, j int)   { h.f64[i], h.f64[j] = h.f64[j], h.f64[i] }
func (h *f64s) Push(x any)     { h.f64 = append(h.f64, x.(float64)) }
func (h *f64s) Pop() (out any) { out, h.f64 = h.f64[len(h.f64)-1], h.f64[:len(h.f64)-1]; return out }

type maxHeap struct{ f64s }

func (h maxHeap) Less(i, j int) bool { return h.f64[i] > h.f64[j] }

type minHeap struct{ f64s }

func (h minHeap) Less(i, j int) bool { return h.f64[i] < h.f64[j] }
