package builtin

import (
	"math"
	"math/rand/v2"
	"testing"
)

// halvesOfFloats rounds v to halves (and returns them as floats too).
func halvesOfFloats(v []float32) ([]uint16, []float32) {
	h, f := make([]uint16, len(v)), make([]float32, len(v))
	storeHalvesGeneric(h, v)
	widenHalves(f, h)
	return h, f
}

// filledCache is a cache of n random keys and values, as floats or halves.
func filledCache(rng *rand.Rand, n int, format string) kvCache {
	c := newKVCache(n, format)
	const chunk = 4096
	for at := 0; at < n; at += chunk {
		k, v := randomVec(rng, min(chunk, n-at)), randomVec(rng, min(chunk, n-at))
		c.store(at, k, v)
	}
	return c
}

// TestHalfKernelsAreTheF32KernelsOnWidenedHalves: the scores and the mix
// over a cache of halves are the f32 kernels' over the halves widened,
// bit for bit, at every width (a ragged one through the portable
// kernels, as the f32 scores take it), row span and stride.
func TestHalfKernelsAreTheF32KernelsOnWidenedHalves(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, cols := range []int{8, 16, 20, 24, 32, 40, 64, 72, 96, 128, 200, 256} {
		for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 9, 33} {
			for _, stride := range []int{cols, cols + 8} {
				halves, widened := halvesOfFloats(randomVec(rng, rows*stride))
				x := randomVec(rng, cols)
				scratch := make([]float32, cols)
				for _, lo := range []int{0, rows / 2, rows - 1} {
					got, want := make([]float32, rows), make([]float32, rows)
					dotRowsHalf(got, halves, x, lo, rows, cols, stride, scratch)
					if cols%8 == 0 {
						dotRows(want, widened, x, lo, rows, cols, stride)
					} else {
						dotRowsGeneric(want, widened, x, lo, rows, cols, stride)
					}
					for r := range rows {
						if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
							t.Fatalf("cols %d rows %d stride %d lo %d: score %d is %v, the f32 kernel's %v", cols, rows, stride, lo, r, got[r], want[r])
						}
					}
				}
				weights := randomVec(rng, rows)
				got, want := make([]float32, cols), make([]float32, cols)
				weightedSumHalf(got, weights, halves, stride, scratch)
				weightedSum(want, weights, widened, stride)
				for c := range cols {
					if math.Float32bits(got[c]) != math.Float32bits(want[c]) {
						t.Fatalf("cols %d rows %d stride %d: mix[%d] is %v, the f32 kernel's %v", cols, rows, stride, c, got[c], want[c])
					}
				}
			}
		}
	}
}

// TestStoreHalvesRoundsAsF32ToF16: the cache's vector rounding, and the
// query's and weights' (roundToHalves), is f32ToF16's (to nearest even,
// subnormal halves, overflow to infinity) on every finite float pattern
// drawn, at every tail length.
func TestStoreHalvesRoundsAsF32ToF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var src []float32
	for len(src) < 1<<16 {
		f := math.Float32frombits(rng.Uint32())
		if !math.IsNaN(float64(f)) {
			src = append(src, f)
		}
	}
	// Ties: halfway between two halves, in the normal and subnormal ranges.
	for _, h := range []uint16{0x0001, 0x0002, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x7bfe, 0x8001, 0xbc01} {
		a, b := f16ToF32(h), f16ToF32(h+1)
		src = append(src, a+(b-a)/2, 65504+16, 65504+15.99, -65520)
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, len(src)} {
		dst := make([]uint16, n)
		storeHalves(dst, src[:n])
		rounded := append([]float32(nil), src[:n]...)
		roundToHalves(rounded)
		for i, f := range src[:n] {
			if want := f32ToF16(f); dst[i] != want || math.Float32bits(rounded[i]) != math.Float32bits(f16ToF32(want)) {
				t.Fatalf("n %d: %g (%#08x) stored as %#04x, rounded to %g; f32ToF16 %#04x", n, f, math.Float32bits(f), dst[i], rounded[i], want)
			}
		}
	}
}

// A head's attention allocates nothing, from either cache: it runs for
// every head of every layer of every token.
func TestAttentionDoesNotAllocate(t *testing.T) {
	shape := SyntheticShapes["stories15M"]
	for _, format := range []string{"f32", "f16"} {
		st := NewState(Synthetic(shape, 1))
		st.cache = filledCache(rand.New(rand.NewPCG(3, 4)), len(st.cache.keys), format)
		copy(st.q, randomVec(rand.New(rand.NewPCG(5, 6)), len(st.q)))
		st.pos = 100
		job := newAttnJob([][]*State{{st}}, 1, shape, 1)
		if n := testing.AllocsPerRun(10, func() { job.do(0, job.parts()) }); n != 0 {
			t.Errorf("%s cache: %v allocations a layer's attention", format, n)
		}
	}
}

// A layer's attention cuts the pass into parts of one kv head's heads
// for a run of one stream's tokens: every head of every token in exactly
// one part, and at least as many parts with work as threads where the
// heads allow it.
func TestAttentionPartsHoldEveryHeadOnce(t *testing.T) {
	for _, c := range []struct {
		heads, kvHeads, hs, threads int
		tokens                      []int // each stream's
	}{
		{14, 2, 64, 1, []int{1}}, {14, 2, 64, 2, []int{1}}, {14, 2, 64, 3, []int{1}}, {14, 2, 64, 8, []int{1}},
		{14, 2, 64, 64, []int{1}}, {14, 2, 64, 2, []int{64}}, {14, 2, 64, 2, []int{64, 1, 1, 5}},
		{32, 8, 64, 2, []int{1}}, {32, 8, 64, 16, []int{1, 1}}, {12, 12, 64, 4, []int{1}}, {4, 1, 256, 3, []int{1}},
		{16, 8, 128, 7, []int{3, 64, 64}}, {12, 12, 64, 2, []int{64}}, {16, 8, 128, 2, []int{63}},
	} {
		shape := Shape{Dim: c.heads * c.hs, Heads: c.heads, KVHeads: c.kvHeads}
		streams := make([][]*State, len(c.tokens))
		for i, n := range c.tokens {
			for range n {
				streams[i] = append(streams[i], &State{})
			}
		}
		job := newAttnJob(streams, 0, shape, c.threads)
		seen := make(map[*State][]int)
		working := 0
		for p := range job.parts() {
			tokens, h0, h1 := job.part(p)
			if len(tokens) == 0 {
				continue
			}
			working++
			group := c.heads / c.kvHeads
			if h0 >= h1 || h0/group != (h1-1)/group {
				t.Fatalf("%+v: part %d holds heads [%d, %d), not one kv head's", c, p, h0, h1)
			}
			if bytes := len(tokens) * (h1 - h0) * c.hs * 4; len(tokens) > 1 && bytes > attnQueryBytes {
				t.Fatalf("%+v: part %d holds %d bytes of queries", c, p, bytes)
			}
			for _, st := range tokens {
				if seen[st] == nil {
					seen[st] = make([]int, c.heads)
				}
				for h := h0; h < h1; h++ {
					seen[st][h]++
				}
			}
		}
		for _, tokens := range streams {
			for _, st := range tokens {
				for h := range c.heads {
					if n := seen[st]; n == nil || n[h] != 1 {
						t.Fatalf("%+v: head %d of a token is in %v parts", c, h, n)
					}
				}
			}
		}
		if want := min(c.threads, c.heads*len(c.tokens)); working < want {
			t.Errorf("%+v: %d parts with work for %d threads", c, working, c.threads)
		}
	}
}

// A stream's tokens and the heads that share a kv head take its keys and
// values a block at a time, every token's every head in turn
// (attendHeads); each head's output at each token is what it is when that
// head of that token runs alone, bit for bit: every sum is the same sum
// in the same order. The tokens are a prompt chunk's (consecutive
// positions, spanning several blocks) on a global and a sliding layer,
// with and without gemma3's query scale, from either cache.
func TestGroupedAttentionIsHeadByHeadBitForBit(t *testing.T) {
	shape := Shape{Dim: 384, HiddenDim: 64, Layers: 2, Heads: 6, KVHeads: 2, Vocab: 16, SeqLen: 700}
	for _, format := range []string{"f32", "f16"} {
		for _, attnScale := range []float32{0, 0.125} {
			w := Synthetic(shape, 1)
			w.Layers[1].Sliding, w.Window, w.AttnScale = true, 150, attnScale
			st := NewState(w)
			st.cache = filledCache(rand.New(rand.NewPCG(3, 4)), len(st.cache.keys), format)
			rng := rand.New(rand.NewPCG(5, 6))
			for _, chunk := range []struct{ first, n int }{{0, 1}, {5, 9}, {120, 20}, {250, 64}, {690, 10}} {
				tokens := make([]*State, chunk.n)
				queries := make([][]float32, chunk.n)
				for i := range tokens {
					tokens[i] = st.view()
					tokens[i].pos = chunk.first + i
					queries[i] = randomVec(rng, shape.Dim)
				}
				for l := range shape.Layers {
					for i, tok := range tokens {
						copy(tok.q, queries[i])
					}
					attendHeads(tokens, l, 0, 3)
					attendHeads(tokens, l, 3, 6)
					for i, tok := range tokens {
						together := append([]float32(nil), tok.ao...)
						copy(tok.q, queries[i])
						for h := range shape.Heads {
							attendHeads(tokens[i:i+1], l, h, h+1)
						}
						for j, v := range tok.ao {
							if math.Float32bits(v) != math.Float32bits(together[j]) {
								t.Fatalf("%s cache, scale %v, layer %d, pos %d: output %d is %v together, %v alone", format, attnScale, l, tok.pos, j, together[j], v)
							}
						}
					}
				}
			}
		}
	}
}
