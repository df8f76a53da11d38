package metrics

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

// endHeap holds the ends of the requests in the system, earliest first.
type endHeap []float64

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// servedBlock is one open-loop block against a server of two slots
// taken first come, first served, empty at the start as tokentop's blocks
// find it: m Poisson arrivals at rho × its capacity, each request a
// prefill (exponential, mean 0.1) then a decode (0.9), and whether its
// TTFT from its due time (its wait, then its prefill) met the SLO of one
// mean service time.
func servedBlock(rng *rand.Rand, m int, rho float64) []bool {
	const slots, slo = 2, 1.0
	free := make([]float64, slots)
	at := 0.0
	met := make([]bool, m)
	ends := &endHeap{}
	for k := range met {
		at += rng.ExpFloat64() / (slots * rho)
		for ends.Len() > 0 && (*ends)[0] <= at {
			heap.Pop(ends)
		}
		first := 0
		for s := range free {
			if free[s] < free[first] {
				first = s
			}
		}
		start := math.Max(at, free[first])
		prefill := 0.1 * rng.ExpFloat64()
		free[first] = start + prefill + 0.9
		heap.Push(ends, free[first])
		met[k] = start-at+prefill <= slo
	}
	return met
}

// The interval over blocks covers the goodput that blocks of the level
// give at least 90% of the time, from 2 to 5 blocks, at every utilisation
// from 0.5 to 0.95, where Wilson's interval over the requests (what was
// printed before) covers far less as the requests' queueing ties them.
func TestGoodputIntervalCoversNearCapacity(t *testing.T) {
	const m, truthBlocks = 60, 20000
	reps := 1000
	if testing.Short() || raceEnabled {
		reps = 300
	}
	for _, rho := range []float64{0.5, 0.6, 0.7, 0.8, 0.86, 0.9, 0.95} {
		rng := rand.New(rand.NewPCG(uint64(rho*100), 7))
		var sum float64
		for range truthBlocks {
			met := servedBlock(rng, m, rho)
			x := 0
			for _, v := range met {
				if v {
					x++
				}
			}
			sum += float64(x) / m
		}
		truth := sum / truthBlocks
		for _, blocks := range []int{2, 3, 5} {
			covered, wilsonCovered := 0, 0
			for range reps {
				met := make([][]bool, blocks)
				x, n := 0, 0
				for b := range met {
					met[b] = servedBlock(rng, m, rho)
					for _, v := range met[b] {
						n++
						if v {
							x++
						}
					}
				}
				_, ci, ok := GoodputInterval(met)
				if !ok {
					t.Fatalf("%d blocks gave no interval", blocks)
				}
				if ci.Lo <= truth && truth <= ci.Hi {
					covered++
				}
				if w := WilsonInterval(x, n); w.Lo <= truth && truth <= w.Hi {
					wilsonCovered++
				}
			}
			coverage, wilson := float64(covered)/float64(reps), float64(wilsonCovered)/float64(reps)
			if coverage < 0.90 {
				t.Errorf("utilisation %.2f, %d blocks: covered the goodput %.4f in %.1f%% of runs, want 90%% or more", rho, blocks, truth, 100*coverage)
			}
			if rho >= 0.8 && wilson > 0.8 {
				t.Errorf("utilisation %.2f, %d blocks: Wilson's interval covered %.1f%%: the simulation shows no dependence to guard against", rho, blocks, 100*wilson)
			}
			t.Logf("utilisation %.2f, %d blocks: goodput %.3f covered %.1f%% (Wilson over requests %.1f%%)", rho, blocks, truth, 100*coverage, 100*wilson)
		}
	}
}

// One block gives no interval: it cannot show how blocks differ.
func TestGoodputIntervalNeedsTwoBlocks(t *testing.T) {
	g, ci, ok := GoodputInterval([][]bool{{true, true, false, true}})
	if ok || g != 0.75 || !math.IsNaN(ci.Lo) {
		t.Errorf("one block: %v %v %v", g, ci, ok)
	}
	if _, _, ok := GoodputInterval(nil); ok {
		t.Error("no blocks gave an interval")
	}
	// Two perfect blocks still leave room below 100%: never narrower
	// than Wilson's.
	all := func(n int) []bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = true
		}
		return b
	}
	_, ci, ok = GoodputInterval([][]bool{all(60), all(60)})
	if !ok || ci.Hi != 1 || ci.Lo > WilsonInterval(120, 120).Lo {
		t.Errorf("two perfect blocks: %v", ci)
	}
}
