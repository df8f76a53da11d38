package builtin

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"
)

func randomVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// refMatVec is the float64 reference every kernel is held to.
func refMatVec(w []float32, rows, cols int, x []float32) []float64 {
	out := make([]float64, rows)
	for r := range rows {
		var s float64
		for c := range cols {
			s += float64(w[r*cols+c]) * float64(x[c])
		}
		out[r] = s
	}
	return out
}

// relErr is the largest error relative to the output's scale (the L2 norm
// of |w_r|·|x|, which bounds each row's rounding).
func relErr(got []float32, want []float64, w []float32, cols int, x []float32) float64 {
	worst := 0.0
	for r := range want {
		var scale float64
		for c := range cols {
			scale += math.Abs(float64(w[r*cols+c]) * float64(x[c]))
		}
		worst = max(worst, math.Abs(float64(got[r])-want[r])/max(scale, 1e-30))
	}
	return worst
}

// kernelShapes include Q8_0 rows of 7 and 11 groups: pairs of groups with
// one left over, after and without a whole block of eight; and an odd
// column count across four f32 tiles and one more (40×33), as the f32
// decode kernel takes its columns two at a time, four tiles at once.
var kernelShapes = [][2]int{{1, 1}, {3, 7}, {6, 40}, {9, 2056}, {17, 33}, {40, 33}, {64, 64}, {172, 64}, {64, 172}, {5, 224}, {288, 288}, {3, 352}, {768, 288}, {2048, 768}}

// randomBatch is n random vectors of cols values, quantized in every
// form, and an output of rows values for each.
func randomBatch(rng *rand.Rand, n, rows, cols int) ([]*quantized, [][]float32) {
	xs, outs := make([]*quantized, n), make([][]float32, n)
	for s := range n {
		x := newQuantized(cols)
		x.quantize(randomVec(rng, cols), allForms)
		xs[s], outs[s] = &x, make([]float32, rows)
	}
	return xs, outs
}

// q8Shapes are the kernel shapes whose rows are whole Q8_0 groups.
func q8Shapes() [][2]int {
	var out [][2]int
	for _, shape := range kernelShapes {
		if shape[1]%GroupSize == 0 {
			out = append(out, shape)
		}
	}
	return out
}

// The kernels this build dispatches to and the portable ones are held to
// the same references, whatever GOEXPERIMENT says; the SIMD build adds
// each instruction set's kernels that this CPU can run
// (kernels_simd_test.go), whichever the dispatch picks.
var f32Kernels = map[string]func([]float32, *Matrix, []float32, int, int){"dispatched": matVecF32, "portable": matVecF32Generic}
var q8Kernels = map[string]func([]float32, *Matrix, *quantized, int, int){"portable": matVecQ8Generic}

func TestMatVecF32AgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for name, kernel := range f32Kernels {
		for _, shape := range kernelShapes {
			rows, cols := shape[0], shape[1]
			w, x := randomVec(rng, rows*cols), randomVec(rng, cols)
			got := make([]float32, rows)
			// Rows [1, rows) only, so a kernel writing outside its span shows.
			got[0] = 42
			kernel(got, NewF32(rows, cols, w), x, 1, rows)
			if got[0] != 42 {
				t.Errorf("%s %d×%d: wrote row 0 outside [1, %d)", name, rows, cols, rows)
			}
			got[0] = float32(refMatVec(w[:cols], 1, cols, x)[0])
			if e := relErr(got, refMatVec(w, rows, cols, x), w, cols, x); e > 1e-4 {
				t.Errorf("%s %d×%d: relative error %.2e", name, rows, cols, e)
			}
		}
	}
}

// Q8_0 rounds each weight and input to 1/254 of its block's range: the
// documented bound is 2/127 of Σ|w||x| (two roundings of half a step each,
// with headroom), measured errors are far below it.
const q8Bound = 2.0 / 127

func TestMatVecQ8AgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, shape := range q8Shapes() {
		rows, cols := shape[0], shape[1]
		w, x := randomVec(rng, rows*cols), randomVec(rng, cols)
		m, err := NewF32(rows, cols, w).Quantize()
		if err != nil {
			t.Fatal(err)
		}
		xq := newQuantized(cols)
		xq.quantize(x, allForms)
		want := refMatVec(w, rows, cols, x)
		portable := make([]float32, rows)
		matVecQ8Generic(portable, m, &xq, 0, rows)
		for name, kernel := range q8Kernels {
			got := make([]float32, rows)
			kernel(got, m, &xq, 0, rows)
			if e := relErr(got, want, w, cols, x); e > q8Bound {
				t.Errorf("%s %d×%d: relative error %.2e over the Q8_0 bound %.2e", name, rows, cols, e, q8Bound)
			}
			// Integer sums inside a group are exact, so kernels agree closely.
			for r := range rows {
				if d := math.Abs(float64(got[r] - portable[r])); d > 1e-4*math.Abs(want[r])+1e-4 {
					t.Errorf("%s %d×%d row %d: %v, the portable kernel %v", name, rows, cols, r, got[r], portable[r])
					break
				}
			}
		}
	}
	if _, err := NewF32(2, 33, make([]float32, 66)).Quantize(); err == nil {
		t.Error("quantized a matrix whose columns are not a multiple of 32")
	}
}

// Attention's kernels: scores over strided cached keys, and the weighted
// sum of strided cached values, at head widths inside, at and past the
// 64 columns the assembly keeps in registers. The scores write only their
// rows (a span starting anywhere, of any length), and the mix adds to
// what out holds.
func TestAttentionKernelsAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	type scoreKernel = func(out, w, x []float32, lo, hi, cols, stride int)
	type mixKernel = func(out, weights, v []float32, stride int)
	for _, hs := range []int{8, 12, 48, 64, 72, 104, 128, 256} {
		stride := 3*hs + 5 // keys of one head sit inside wider cache rows
		positions := 37
		cache, q := randomVec(rng, positions*stride), randomVec(rng, hs)
		weights := randomVec(rng, positions)
		for name, kernel := range map[string]scoreKernel{"dispatched": dotRows, "portable": dotRowsGeneric} {
			for _, lo := range []int{0, 1, 6} {
				for _, hi := range []int{lo + 1, lo + 3, lo + 4, positions} {
					const sentinel = 12345
					got := make([]float32, positions+3)
					for p := range got {
						got[p] = sentinel
					}
					kernel(got, cache, q, lo, hi, hs, stride)
					for p := range got {
						if p < lo || p >= hi {
							if got[p] != sentinel {
								t.Fatalf("%s scores hs=%d rows [%d, %d): wrote %v at %d", name, hs, lo, hi, got[p], p)
							}
							continue
						}
						var want, scale float64
						for i := range hs {
							want += float64(cache[p*stride+i]) * float64(q[i])
							scale += math.Abs(float64(cache[p*stride+i]) * float64(q[i]))
						}
						if math.Abs(float64(got[p])-want) > 1e-5*scale {
							t.Fatalf("%s scores hs=%d pos %d: %v, want %v", name, hs, p, got[p], want)
						}
					}
				}
			}
		}
		for name, kernel := range map[string]mixKernel{"dispatched": weightedSum, "portable": weightedSumGeneric} {
			start := randomVec(rng, hs)
			got := append([]float32(nil), start...)
			kernel(got, weights, cache, stride)
			for i := range hs {
				want, scale := float64(start[i]), math.Abs(float64(start[i]))
				for p := range positions {
					want += float64(weights[p]) * float64(cache[p*stride+i])
					scale += math.Abs(float64(weights[p]) * float64(cache[p*stride+i]))
				}
				if math.Abs(float64(got[i])-want) > 1e-5*scale {
					t.Fatalf("%s weighted sum hs=%d lane %d: %v, want %v", name, hs, i, got[i], want)
				}
			}
		}
	}
}

// Softmax and SiLU compute e^x in float32 vectors with GOEXPERIMENT=simd
// (Cephes' polynomial) and through math.Exp otherwise; both are held to
// float64 within 1e-6 relative, on inputs from far below float32's normal
// range to well above 1.
func TestSoftmaxAndSwiGLUAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{8, 13, 64, 256, 1000} {
		x := randomVec(rng, n)
		for i := range x {
			x[i] *= 60 // scores from about -60 to 60: exp spans e^-120 (0) to 1
		}
		if n%8 != 0 {
			x[n-1] = float32(math.Inf(-1)) // attention's padding has weight 0
		}
		const scale = 2
		for name, kernel := range map[string]func([]float32, float32){"dispatched": softmax, "portable": softmaxGeneric} {
			got := append([]float32(nil), x...)
			kernel(got, scale)
			top := math.Inf(-1)
			for _, v := range x {
				top = max(top, float64(v*scale))
			}
			var sum float64
			for _, v := range x {
				sum += math.Exp(float64(v*scale) - top)
			}
			for i, v := range x {
				want := math.Exp(float64(v*scale)-top) / sum
				if math.Abs(float64(got[i])-want) > 1e-6*want+1e-38 {
					t.Fatalf("%s softmax n=%d [%d]: %v, want %v", name, n, i, got[i], want)
				}
			}
		}
	}
	h, g := randomVec(rng, 173), randomVec(rng, 173)
	for i := range h {
		h[i] *= 100 // SiLU from -100 (where e^-h saturates) to 100
	}
	for name, kernel := range map[string]func(hb, hb2 []float32){"dispatched": swiGLU, "portable": swiGLUGeneric} {
		got := append([]float32(nil), h...)
		kernel(got, g)
		for i, v := range h {
			want := float64(v) / (1 + math.Exp(-float64(v))) * float64(g[i])
			if math.Abs(float64(got[i])-want) > 1e-6*math.Abs(want)+1e-30 {
				t.Fatalf("%s swiGLU h=%v: %v, want %v", name, v, got[i], want)
			}
		}
		// Threads split the hidden layer anywhere; an element's value must
		// not depend on where its span starts or ends.
		split := append([]float32(nil), h...)
		kernel(split[:83], g[:83])
		kernel(split[83:], g[83:])
		for i := range got {
			if got[i] != split[i] {
				t.Fatalf("%s swiGLU [%d]: %v whole, %v split at 83", name, i, got[i], split[i])
			}
		}
	}
}

func TestPoolSplitsRowsExactlyOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	rows, cols := 1000, 288 // large enough to fan out
	w, x := randomVec(rng, rows*cols), randomVec(rng, cols)
	m := NewF32(rows, cols, w)
	serial := make([]float32, rows)
	matVecF32(serial, m, x, 0, rows)
	for _, threads := range []int{1, 2, 3, 7} {
		p := NewPool(threads)
		out := make([]float32, rows)
		runMatVec(p, m, out, x, nil)
		for i := range out {
			if out[i] != serial[i] {
				t.Fatalf("threads %d: row %d = %v, serial %v", threads, i, out[i], serial[i])
			}
		}
		p.Close()
	}
}

// countingJob records which parts it was asked for, and any empty span.
type countingJob struct {
	done  []atomic.Int32
	empty atomic.Int32
}

func (j *countingJob) parts() int { return len(j.done) }
func (j *countingJob) flops() int { return 1 << 30 }
func (j *countingJob) do(lo, hi int) {
	if lo >= hi {
		j.empty.Add(1)
	}
	for i := lo; i < hi; i++ {
		j.done[i].Add(1)
	}
}

// Jobs of fewer parts than threads (one stream's sampling) do every part
// once and wake no worker for nothing.
func TestPoolGivesEveryPartOnceAndNoEmptySpan(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 4, 7} {
		p := NewPool(threads)
		for parts := 1; parts <= 9; parts++ {
			for range 20 {
				j := &countingJob{done: make([]atomic.Int32, parts)}
				p.run(j)
				for i := range j.done {
					if n := j.done[i].Load(); n != 1 {
						t.Fatalf("threads %d, parts %d: part %d done %d times", threads, parts, i, n)
					}
				}
				if n := j.empty.Load(); n > 0 {
					t.Fatalf("threads %d, parts %d: %d empty spans handed out", threads, parts, n)
				}
			}
		}
		p.Close()
	}
}

func TestF16Conversion(t *testing.T) {
	for h, want := range map[uint16]float32{0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 5.960464477539063e-08, 0x0400: 6.103515625e-05, 0x3555: 0.33325195} {
		if got := f16ToF32(h); got != want {
			t.Errorf("f16 %#04x = %v, want %v", h, got, want)
		}
	}
	if !math.IsInf(float64(f16ToF32(0x7c00)), 1) || !math.IsNaN(float64(f16ToF32(0x7e00))) {
		t.Error("inf/nan")
	}
}

// TestF16ConversionOfEveryHalf holds every one of the 65,536 halves to
// the value its fields state (sign, 5-bit exponent of bias 15, 10-bit
// fraction; subnormal below the least exponent), bit for bit, signed
// zeros and NaN payloads included.
func TestF16ConversionOfEveryHalf(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
		var want float64
		switch exp {
		case 0:
			want = math.Ldexp(frac, -24)
		case 0x1f:
			want = math.Inf(1)
		default:
			want = math.Ldexp(1024+frac, exp-25)
		}
		wantBits := math.Float32bits(float32(want))
		if exp == 0x1f && frac != 0 {
			wantBits = 0x7f800000 | uint32(h&0x3ff)<<13 // the payload kept, quiet bit and all
		}
		wantBits |= uint32(h>>15) << 31
		if got := math.Float32bits(f16ToF32(h)); got != wantBits {
			t.Fatalf("f16 %#04x = %#08x, want %#08x", h, got, wantBits)
		}
	}
}

// quantizerInput is 40 random groups but for a group of zeros (group 1),
// a group of halves and near-halves whose scale is 1 (group 2, ties), and
// one scaled by scale (group 3).
func quantizerInput(seed uint64, scale float32) (x, ties []float32) {
	x = randomVec(rand.New(rand.NewPCG(seed, seed)), 40*GroupSize)
	for i := GroupSize; i < 2*GroupSize; i++ {
		x[i] = 0
	}
	ties = []float32{127, 0.5, -0.5, 1.5, -2.5, 126.5, -126.5, 0.49999997, -0.49999997, 2.4999998, 1e-30, -127}
	copy(x[2*GroupSize:], ties)
	for i := 3 * GroupSize; i < 4*GroupSize; i++ {
		x[i] *= scale
	}
	return x, ties
}

// TestQuantizeMatchesGeneric holds the build's quantizer (vectorised with
// GOEXPERIMENT=simd) to the portable one bit for bit, on random blocks and
// on a block whose scale is exactly 1, where halves and the float just
// below a half are rounded as they stand.
func TestQuantizeMatchesGeneric(t *testing.T) {
	x, ties := quantizerInput(6, 1e6) // large magnitudes
	want, got := make([]int8, len(x)), make([]int8, len(x))
	wantScales, gotScales := make([]float32, len(x)/GroupSize), make([]float32, len(x)/GroupSize)
	quantizeGeneric(want, wantScales, x)
	quantizeInto(got, gotScales, x)
	if wantScales[2] != 1 {
		t.Fatalf("tie block scale %v, want 1", wantScales[2])
	}
	for g := range wantScales {
		if math.Float32bits(gotScales[g]) != math.Float32bits(wantScales[g]) {
			t.Fatalf("group %d scale %v, want %v", g, gotScales[g], wantScales[g])
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("x[%d] = %v (scale %v): q %d, want %d", i, x[i], wantScales[i/GroupSize], got[i], want[i])
		}
	}
	if got[2*GroupSize+1] != 1 || got[2*GroupSize+7] != 0 || got[2*GroupSize+5] != 127 {
		t.Errorf("ties: %v", got[2*GroupSize:2*GroupSize+len(ties)])
	}
}

// TestActivationsQuantizeAsGGML holds the build's activation quantizer to
// the portable one bit for bit, and both to ggml's x86 rule: codes
// v·(127/max) rounded to even, the scale max/127 rounded to a half (tiny
// blocks' scales to subnormal halves).
func TestActivationsQuantizeAsGGML(t *testing.T) {
	x, ties := quantizerInput(7, 1e-3) // a scale below the smallest normal half
	want, got := make([]int8, len(x)), make([]int8, len(x))
	wantScales, gotScales := make([]float32, len(x)/GroupSize), make([]float32, len(x)/GroupSize)
	quantizeActivationsGeneric(want, wantScales, x)
	quantizeActivations(got, gotScales, x)
	if !slices.Equal(got, want) || !slices.Equal(gotScales, wantScales) {
		t.Fatal("the build's activation quantizer differs from the portable one")
	}
	for g, s := range wantScales {
		var amax float32
		for _, v := range x[g*GroupSize : (g+1)*GroupSize] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if half := f16ToF32(f32ToF16(amax / 127)); s != half {
			t.Fatalf("group %d scale %v, want the half %v", g, s, half)
		}
		for i, v := range x[g*GroupSize : (g+1)*GroupSize] {
			w := int8(0)
			if amax != 0 {
				w = int8(math.RoundToEven(float64(v * (127 / amax))))
			}
			if want[g*GroupSize+i] != w {
				t.Fatalf("x[%d] = %v: q %d, want %d", g*GroupSize+i, v, want[g*GroupSize+i], w)
			}
		}
	}
	if want[2*GroupSize+1] != 0 || want[2*GroupSize+3] != 2 || want[2*GroupSize+4] != -2 {
		t.Errorf("halves round to even: %v", want[2*GroupSize:2*GroupSize+len(ties)])
	}
	if wantScales[3] == 0 || f32ToF16(wantScales[3])&0x7c00 != 0 {
		t.Errorf("tiny block's scale %v is not a subnormal half", wantScales[3])
	}
}

// TestHalfRounding checks the conversion to halves against rounding to
// nearest even on every half's neighbours and midpoints.
func TestHalfRounding(t *testing.T) {
	for h := range uint16(0x7c00) { // every finite positive half
		f := float64(f16ToF32(h))
		if got := f32ToF16(float32(f)); got != h {
			t.Fatalf("%#x (%g) converts back as %#x", h, f, got)
		}
		next := float64(f16ToF32(h + 1))
		if h+1 == 0x7c00 {
			next = 65536 // the midpoint to infinity is 65520
		}
		mid := float32((f + next) / 2)
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		if got := f32ToF16(mid); got != want {
			t.Fatalf("midpoint %g after %#x: %#x, want %#x", mid, h, got, want)
		}
		if got := f32ToF16(-mid); got != want|0x8000 {
			t.Fatalf("midpoint %g: %#x, want %#x", -mid, got, want|0x8000)
		}
		if got, want := halfRoundedBits(math.Float32bits(mid)), math.Float32bits(f16ToF32(want)); got != want {
			t.Fatalf("halfRoundedBits(%g) = %#x, want %#x", mid, got, want)
		}
	}
}

func TestQuantizeRoundsHalfAwayFromZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	x := randomVec(rng, 4*GroupSize)
	x[3] = 0 // a zero and a whole block of zeros stay zero
	for i := GroupSize; i < 2*GroupSize; i++ {
		x[i] = 0
	}
	q := make([]int8, len(x))
	scales := make([]float32, len(x)/GroupSize)
	quantizeInto(q, scales, x)
	for i, v := range x {
		var amax float32
		for _, w := range x[i/GroupSize*GroupSize:][:GroupSize] {
			amax = max(amax, float32(math.Abs(float64(w))))
		}
		s := amax / 127 // the codes' scale; the block keeps it as a half
		if got := scales[i/GroupSize]; got != f16ToF32(f32ToF16(s)) {
			t.Fatalf("group %d: scale %v, want %v rounded to a half", i/GroupSize, got, s)
		}
		want := int8(0)
		if s != 0 {
			want = int8(math.Round(float64(v * (1 / s))))
		}
		if q[i] != want {
			t.Fatalf("x[%d] = %v (scale %v): q %d, want %d", i, v, s, q[i], want)
		}
	}
	if scales[1] != 0 {
		t.Errorf("zero block scale %v", scales[1])
	}
}

// The Q8_K quantizer follows ggml's rule (the first value of largest
// magnitude maps to −127, halves round to even), and the one the engine
// runs gives the portable one's codes, scales and sums of 16 bit for bit:
// on a block of zeros, a block with halves to round, and blocks of large
// magnitudes.
func TestQuantizeQ8KMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	x := randomVec(rng, 5*superBlock)
	clear(x[superBlock : 2*superBlock])
	halves := []float32{127, 0.5, -0.5, 1.5, -2.5, 126.5, -126.5, 0.49999997, -127}
	copy(x[2*superBlock:], halves)
	for i := 3 * superBlock; i < 4*superBlock; i++ {
		x[i] *= 1e6
	}
	want, got := newQuantized(len(x)), newQuantized(len(x))
	quantizeQ8KGeneric(want.kq, want.kscales, want.ksums, x)
	quantizeQ8K(got.kq, got.kscales, got.ksums, x)
	// 127 comes first, so the scale is 1/(−127/127) = −1: each code is
	// −v rounded to even.
	if want.kscales[2] != -1 || want.kscales[1] != 0 {
		t.Fatalf("block scales %v", want.kscales)
	}
	if codes, wantCodes := want.kq[2*superBlock:2*superBlock+len(halves)], []int8{-127, 0, 0, -2, 2, -126, 126, 0, 127}; !slices.Equal(codes, wantCodes) {
		t.Errorf("codes %v, ggml's rule gives %v", codes, wantCodes)
	}
	if !slices.Equal(got.kq, want.kq) || !slices.Equal(got.ksums, want.ksums) {
		t.Errorf("codes or sums differ from the portable quantizer's")
	}
	for b := range want.kscales {
		if math.Float32bits(got.kscales[b]) != math.Float32bits(want.kscales[b]) {
			t.Errorf("block %d scale %v, want %v", b, got.kscales[b], want.kscales[b])
		}
	}
}

// A matrix against several vectors at once (batched prefill, streams
// decoding together) gives each vector exactly the numbers it gets
// alone, in every shape the kernels are tested at, rows or tiles (where
// the build has them), and any number of vectors; rows outside the span
// asked for are left as they were.
func TestMatMatF32MatchesMatVecBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, shape := range kernelShapes {
		rows, cols := shape[0], shape[1]
		rowMajor := NewF32(rows, cols, randomVec(rng, rows*cols))
		for _, m := range []*Matrix{rowMajor, withTiles(rowMajor, nil, nil)} {
			for n := 1; n <= 13; n++ {
				xs, outs := make([][]float32, n), make([][]float32, n)
				for s := range n {
					xs[s], outs[s] = randomVec(rng, cols), make([]float32, rows)
				}
				lo, hi := rows/3, rows-rows/5
				matMatF32(outs, m, xs, lo, hi, rows) // reading ahead to the end
				for s := range n {
					want := make([]float32, rows)
					matVecF32(want, m, xs[s], lo, hi)
					if !slices.Equal(outs[s][lo:hi], want[lo:hi]) {
						t.Fatalf("%d×%d %s, vector %d of %d: batched %v, alone %v", rows, cols, layoutOf(m), s, n, outs[s][lo:min(lo+3, hi)], want[lo:min(lo+3, hi)])
					}
					if !slices.Equal(outs[s][:lo], want[:lo]) || !slices.Equal(outs[s][hi:], want[hi:]) {
						t.Fatalf("%d×%d %s, vector %d of %d: rows outside [%d, %d) written", rows, cols, layoutOf(m), s, n, lo, hi)
					}
				}
			}
		}
	}
}

// layoutOf names an f32 matrix's layout, for test messages.
func layoutOf(m *Matrix) string {
	if m.tiles != nil {
		return "tiles"
	}
	return "rows"
}

// A row's number does not depend on the span it was computed in (a
// thread's span starts and ends anywhere; the tile kernels take whole
// tiles, several at a time, and a tile an end cuts through alone): spans
// starting and ending at each of the first and last rows match the whole
// matrix's product bit for bit, rows or tiles.
func TestMatVecF32RowsDoNotDependOnTheSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 7))
	for _, shape := range kernelShapes {
		rows, cols := shape[0], shape[1]
		rowMajor := NewF32(rows, cols, randomVec(rng, rows*cols))
		x := randomVec(rng, cols)
		for _, m := range []*Matrix{rowMajor, withTiles(rowMajor, nil, nil)} {
			whole := make([]float32, rows)
			matVecF32(whole, m, x, 0, rows)
			for lo := 1; lo < min(rows, 9); lo++ {
				hi := max(lo+1, rows-lo+1) // ends inside a tile too
				part := make([]float32, rows)
				matVecF32(part, m, x, lo, hi)
				if !slices.Equal(part[lo:hi], whole[lo:hi]) {
					t.Fatalf("%d×%d %s, rows [%d, %d): %v, the whole matrix's %v", rows, cols, layoutOf(m), lo, hi, part[lo:min(lo+3, hi)], whole[lo:min(lo+3, hi)])
				}
			}
		}
	}
}

// The products a decode step or a prompt chunk runs allocate nothing:
// every format's (through its tiles where the build has them), one
// vector and four at once, as the pool's jobs dispatch them.
func TestMatrixProductsDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 8))
	rows, cols := 16, 512
	w := randomMatrix(rng, rows, cols)
	one, four := &matJob{n: 1}, &matJob{n: 1}
	for s := range 4 {
		x := newQuantized(cols)
		v := randomVec(rng, cols)
		x.quantize(v, allForms)
		four.x, four.xq, four.out[0] = append(four.x, v), append(four.xq, &x), append(four.out[0], make([]float32, rows))
		if s == 0 {
			one.x, one.xq, one.out[0] = four.x, four.xq, four.out[0]
		}
	}
	ms := []*Matrix{w, withTiles(w, nil, nil)}
	q8, err := w.Quantize()
	if err != nil {
		t.Fatal(err)
	}
	ms = append(ms, q8, withTiles(&Matrix{Rows: rows, Cols: cols, format: formatQ8_0, quant: q8.quant}, nil, nil))
	for f := range formats {
		if f := format(f); f.storedAsBlocks() {
			ms = append(ms, quantizeTo(t, formats[f].ggml, w))
		}
	}
	for _, m := range ms {
		one.m[0], four.m[0] = m, m
		product := func() { one.rows(0, 0, rows, rows); four.rows(0, 1, rows/2, rows) }
		if n := testing.AllocsPerRun(10, product); n != 0 {
			t.Errorf("%s: %v allocations a product", m.DType(), n)
		}
	}
}

// The same for a tiled matrix: batched, each vector gets its numbers
// alone, on a span that starts and ends inside tiles. (The portable
// build's only tiles are IQ4_NL's level rows.)
func TestMatMatTilesMatchesMatVecBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 6))
	tiled := 0
	for f := formatQ8_0; int(f) < len(formats); f++ { // every quantized format; those with tiles
		rows, cols := 27, 512
		m := quantizeTo(t, formats[f].ggml, randomMatrix(rng, rows, cols))
		if m.tiles == nil {
			continue
		}
		tiled++
		for n := 1; n <= 7; n++ {
			xs, outs := randomBatch(rng, n, rows, cols)
			lo, hi := 3, 26
			matMatTiles(outs, m, xs, lo, hi)
			for s := range n {
				want := make([]float32, rows)
				matVecBlocks(want, m, xs[s], lo, hi)
				if !slices.Equal(outs[s], want) {
					t.Fatalf("%s, vector %d of %d: batched %v, alone %v", f, s, n, outs[s][lo:lo+3], want[lo:lo+3])
				}
			}
		}
	}
	if tiled == 0 {
		t.Skip("no format has tiles in this build on this CPU")
	}
}

// activationForms lists its forms by hand in allForms and in with; a
// form added to the struct and missed in either would go unquantized.
func TestEveryActivationFormIsInAllFormsAndWith(t *testing.T) {
	all := reflect.ValueOf(allForms)
	for i := range all.NumField() {
		name := all.Type().Field(i).Name
		if !all.Field(i).Bool() {
			t.Errorf("allForms leaves out %s", name)
		}
		var one activationForms // the form alone (unexported: set through its offset)
		*(*bool)(unsafe.Add(unsafe.Pointer(&one), all.Type().Field(i).Offset)) = true
		if got := (activationForms{}).with(one); got != one {
			t.Errorf("with drops %s of its argument: %+v", name, got)
		}
		if got := one.with(activationForms{}); got != one {
			t.Errorf("with drops %s of its receiver: %+v", name, got)
		}
	}
}

// The f32 kernel for several vectors takes tiles in groups (of
// f32TileGroup), so every span a prefill hands it (the pool's chunks, the
// job's row blocks) must be whole groups, or it computes tiles it throws
// away: at the widths of the models people run, blocks were three tiles
// against a kernel of two, and one of four tiles computed was waste
// (BenchmarkGGUFFile on a Llama-3.2-1B-shaped file).
func TestF32SpansAreWholeTileGroups(t *testing.T) {
	j := &matJob{n: 1, x: make([][]float32, 64)}
	group := f32TileGroup * tileRows
	for _, cols := range []int{288, 768, 896, 1024, 1152, 1536, 2048, 3072, 4864, 6912, 8192, 20000} {
		m := &Matrix{Rows: 4096, Cols: cols, format: formatF32, tiles: []byte{0}}
		j.m[0] = m
		if b, g := j.block(m, m.Rows), j.grain(); b%group != 0 || g%group != 0 {
			t.Errorf("%d columns: rows taken in blocks of %d and chunks of %d, not whole groups of %d", cols, b, g, group)
		}
	}
}

// roundToBFloat16 rounds each value to the nearer of the two bfloat16s
// around it (a tie to the one whose last bit is 0), keeps infinities, a
// NaN a quiet NaN, and pairs the values two to a word, the even index's
// in the upper half, with a zero after an odd length's last value.
func TestRoundToBFloat16(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 16))
	x := []float32{1, 1 + 1.0/256, 1 + 3.0/256, -(1 + 1.0/256), 1 + 1.0/256 + 1.0/(1<<20), math.MaxFloat32, float32(math.Inf(-1)), float32(math.NaN()), 0, -0.0}
	for range 2000 {
		x = append(x, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(60)-30))))
	}
	x = append(x, 3) // an odd length
	rounded, pairs := make([]float32, len(x)), make([]uint32, (len(x)+1)/2)
	roundToBFloat16(rounded, pairs, x)
	for i, v := range x {
		got := math.Float32bits(rounded[i])
		if got&0xffff != 0 {
			t.Fatalf("%g rounded to %#x, not a bfloat16", v, got)
		}
		if v != v {
			if rounded[i] == rounded[i] || got&0x00400000 == 0 {
				t.Fatalf("NaN %#x rounded to %#x, not a quiet NaN", math.Float32bits(v), got)
			}
			continue
		}
		want := math.Float32bits(v)
		if !math.IsInf(float64(v), 0) {
			down := want &^ 0xffff // toward zero
			up := down + 0x10000   // away from it; past the largest, 2^128 (infinity)
			upValue := float64(math.Float32frombits(up))
			if math.IsInf(upValue, 0) {
				upValue = math.Copysign(math.Ldexp(1, 128), upValue)
			}
			dDown, dUp := math.Abs(float64(v)-float64(math.Float32frombits(down))), math.Abs(upValue-float64(v))
			want = down
			if dUp < dDown || dUp == dDown && down&0x10000 != 0 {
				want = up
			}
		}
		if got != want {
			t.Fatalf("%g (%#x) rounded to %#x, want %#x", v, math.Float32bits(v), got, want)
		}
	}
	for p, w := range pairs {
		lo := uint32(0)
		if 2*p+1 < len(x) {
			lo = math.Float32bits(rounded[2*p+1]) >> 16
		}
		if w != math.Float32bits(rounded[2*p])|lo {
			t.Fatalf("pair %d: %#x, from %#x and %#x", p, w, math.Float32bits(rounded[2*p]), lo)
		}
	}
}
