//go:build goexperiment.simd && amd64

package builtin

import "simd/archsimd"

// The AVX2+FMA kernels, through Go's experimental simd/archsimd. Each ends
// with ClearAVXUpperBits: scalar float code compiles to SSE, which runs
// 3-30x slower while the upper halves of the vector registers are dirty.
// Sums leave the vector unit through a store to a local array; ragged tails
// (a row length that is not a multiple of 8) are finished in scalar code
// after the clear. archsimd's *SlicePart helpers are not used: they view a
// short slice as a full vector, which the race detector's checkptr rejects.

var haveAVX2 = archsimd.X86.AVX2() && archsimd.X86.FMA()

// KernelName says which kernels this build computes with.
var KernelName = func() string {
	if haveAVX2 {
		return "AVX2+FMA (simd/archsimd)"
	}
	return "portable Go (this CPU lacks AVX2/FMA)"
}()

func dot(a, b []float32) float32 {
	if !haveAVX2 || len(a) < 8 {
		return dotGeneric(a, b)
	}
	var out [1]float32
	dotRows1AVX2(out[:], a, b, 0, 1, len(a))
	return out[0]
}

func axpy(y []float32, a float32, x []float32) {
	if !haveAVX2 {
		axpyGeneric(y, a, x)
		return
	}
	x = x[:len(y)]
	av := archsimd.BroadcastFloat32x8(a)
	n := len(y) &^ 7
	for i := 0; i < n; i += 8 {
		archsimd.LoadFloat32x8Slice(x[i:]).MulAdd(av, archsimd.LoadFloat32x8Slice(y[i:])).StoreSlice(y[i:])
	}
	archsimd.ClearAVXUpperBits()
	for i := n; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

func matVecF32(out []float32, m *Matrix, x []float32, lo, hi int) {
	if !haveAVX2 {
		matVecF32Generic(out, m, x, lo, hi)
		return
	}
	if m.Bytes() > streamingBytes {
		dotRows1AVX2(out, m.F32, x, lo, hi, m.Cols)
	} else {
		dotRows4AVX2(out, m.F32, x, lo, hi, m.Cols)
	}
}

// streamingBytes is the matrix size above which rows are streamed one at
// a time. Measured here (BenchmarkMatVec, one thread): a 37 MB 32000×288
// matrix ran at 9.0 GFLOP/s one row at a time and 4.0 four at a time; a
// 6.3 MB 2048×768 one at 12.2 and 18.4.
const streamingBytes = 16 << 20

// Both row kernels sum a row in exactly the same order (one accumulator
// over eight lanes, the horizontal sum, then the ragged tail), so a row's
// result never depends on which kernel or which thread's span computed it:
// greedy output is the same for every thread count.

// dotRows1AVX2 sets out[r] = w[r]·x for rows [lo, hi) of a row-major matrix
// with cols columns, one row at a time, streaming each row straight through
// memory: what a matrix larger than the caches is limited by.
func dotRows1AVX2(out, w, x []float32, lo, hi, cols int) {
	x = x[:cols]
	full := cols &^ 7
	var zero archsimd.Float32x8
	var sums [4]float32
	for r := lo; r < hi; r++ {
		row := w[r*cols : (r+1)*cols]
		var a archsimd.Float32x8
		for j := 0; j < full; j += 8 {
			a = archsimd.LoadFloat32x8Slice(row[j:]).MulAdd(archsimd.LoadFloat32x8Slice(x[j:]), a)
		}
		sum4(a, zero, zero, zero).Store(&sums)
		if full < cols {
			archsimd.ClearAVXUpperBits()
			sums[0] += dotGeneric(row[full:], x[full:])
		}
		out[r] = sums[0]
	}
	archsimd.ClearAVXUpperBits()
}

// dotRows4AVX2 is dotRows1AVX2 four rows at a time, so each load of x
// feeds four FMAs: faster while the matrix sits in cache.
func dotRows4AVX2(out, w, x []float32, lo, hi, cols int) {
	x = x[:cols]
	full := cols &^ 7
	var sums [4]float32
	r := lo
	for ; r+4 <= hi; r += 4 {
		w0, w1, w2, w3 := w[r*cols:(r+1)*cols], w[(r+1)*cols:(r+2)*cols], w[(r+2)*cols:(r+3)*cols], w[(r+3)*cols:(r+4)*cols]
		var a0, a1, a2, a3 archsimd.Float32x8
		for j := 0; j < full; j += 8 {
			xv := archsimd.LoadFloat32x8Slice(x[j:])
			a0 = archsimd.LoadFloat32x8Slice(w0[j:]).MulAdd(xv, a0)
			a1 = archsimd.LoadFloat32x8Slice(w1[j:]).MulAdd(xv, a1)
			a2 = archsimd.LoadFloat32x8Slice(w2[j:]).MulAdd(xv, a2)
			a3 = archsimd.LoadFloat32x8Slice(w3[j:]).MulAdd(xv, a3)
		}
		sum4(a0, a1, a2, a3).Store(&sums)
		if full < cols {
			archsimd.ClearAVXUpperBits()
			sums[0] += dotGeneric(w0[full:], x[full:])
			sums[1] += dotGeneric(w1[full:], x[full:])
			sums[2] += dotGeneric(w2[full:], x[full:])
			sums[3] += dotGeneric(w3[full:], x[full:])
		}
		copy(out[r:r+4], sums[:])
	}
	archsimd.ClearAVXUpperBits()
	if r < hi {
		dotRows1AVX2(out, w, x, r, hi, cols)
	}
}

// sum4 returns the horizontal sums of four vectors as one 4-wide vector.
func sum4(a0, a1, a2, a3 archsimd.Float32x8) archsimd.Float32x4 {
	t := a0.AddPairsGrouped(a1).AddPairsGrouped(a2.AddPairsGrouped(a3))
	return t.GetLo().Add(t.GetHi())
}

// laneIndex[k] selects lane k of a vector in every lane (for VPERMPS).
var laneIndex = func() (idx [8]archsimd.Uint32x8) {
	for k := range idx {
		var lanes [8]uint32
		for i := range lanes {
			lanes[i] = uint32(k)
		}
		idx[k] = archsimd.LoadUint32x8Slice(lanes[:])
	}
	return idx
}()

// matVecQ8 is the int8 dot product without VNNI: |w| (unsigned) times x
// with w's sign (VPSIGNB) through VPMADDUBSW into int16 pairs, VPMADDWD
// against ones into int32, then one FMA per group with the product of the
// two group scales, computed eight groups at a time and broadcast by
// VPERMPS so no scalar float runs inside the loop. Scale slices have
// scalePad values of spare capacity, so those eight-wide loads stay inside
// their allocation even at a matrix's last row.
func matVecQ8(out []float32, m *Matrix, x *quantized, lo, hi int) {
	if !haveAVX2 {
		matVecQ8Generic(out, m, x, lo, hi)
		return
	}
	c := m.Cols
	groups := c / GroupSize
	ones := archsimd.BroadcastInt16x16(1)
	xq, xs := x.q[:c], x.scales[:groups+scalePad]
	var zero archsimd.Float32x8
	var sums [4]float32
	for r := lo; r < hi; r++ {
		w := m.Q8[r*c : (r+1)*c]
		ws := m.Scales[r*groups : (r+1)*groups+scalePad]
		var acc archsimd.Float32x8
		for b := 0; b < groups; b += 8 {
			scales := archsimd.LoadFloat32x8Slice(ws[b:]).Mul(archsimd.LoadFloat32x8Slice(xs[b:]))
			for k := range min(8, groups-b) {
				off := (b + k) * GroupSize
				wv := archsimd.LoadInt8x32Slice(w[off:])
				xv := archsimd.LoadInt8x32Slice(xq[off:])
				p := wv.Abs().AsUint8x32().DotProductPairsSaturated(xv.CopySign(wv)).DotProductPairs(ones)
				acc = p.ConvertToFloat32().MulAdd(scales.Permute(laneIndex[k]), acc)
			}
		}
		sum4(acc, zero, zero, zero).Store(&sums)
		out[r] = sums[0]
	}
	archsimd.ClearAVXUpperBits()
}
