//go:build goexperiment.simd && amd64

package builtin

import (
	"simd/archsimd"
	"unsafe"
)

// The AVX2+FMA kernels, through Go's experimental simd/archsimd. Each ends
// with ClearAVXUpperBits: scalar float code compiles to SSE, which runs
// 3-30x slower while the upper halves of the vector registers are dirty.
// Inner loops load through pointers into rows whose bounds were checked
// once: slicing per load cost a bounds check and index masking on every
// vector and spilled the row slices to the stack.
//
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
	dotRowsAVX2(out[:], a, b, 0, 1, len(a))
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
	if n > 0 {
		px, py := unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0])
		for off := uintptr(0); off < uintptr(n)*4; off += 32 {
			f32x8(px, off).MulAdd(av, f32x8(py, off)).Store((*[8]float32)(unsafe.Add(py, off)))
		}
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
	dotRowsAVX2(out, m.F32, x, lo, hi, m.Cols)
}

// dotRowsAVX2 sets out[r] = w[r]·x for rows [lo, hi) of a row-major matrix
// with cols columns, one row at a time. A model's weights do not fit in
// cache, so every decode step streams them from memory, and one row at a
// time is the access pattern that streams fastest. Measured here
// (BenchmarkGenerate256, stories110M, one thread): 52.7 tok/s this way,
// 32.1 with four rows interleaved to share loads of x, although the
// four-row kernel won on a lone matrix small enough to stay in cache.
//
// One summation order for every row (four accumulators over eight lanes,
// the horizontal sum, then the ragged tail) means a row's result does not
// depend on which thread's span computed it.
func dotRowsAVX2(out, w, x []float32, lo, hi, cols int) {
	x = x[:cols]
	full := cols &^ 7
	px := unsafe.Pointer(unsafe.SliceData(x))
	end := uintptr(full) * 4
	var acc [4]archsimd.Float32x8
	var sums [4]float32
	for r0 := lo; r0 < hi; r0 += 4 {
		n := min(4, hi-r0)
		for i := range n {
			acc[i] = archsimd.Float32x8{}
			if full > 0 {
				acc[i] = dot1(unsafe.Pointer(&w[(r0+i)*cols : (r0+i+1)*cols][0]), px, end)
			}
		}
		for i := n; i < 4; i++ {
			acc[i] = archsimd.Float32x8{}
		}
		// Four rows per horizontal sum; each lane's arithmetic is the same
		// whichever slot its row takes.
		sum4(acc[0], acc[1], acc[2], acc[3]).Store(&sums)
		if full < cols {
			archsimd.ClearAVXUpperBits()
			for i := range n {
				sums[i] += dotGeneric(w[(r0+i)*cols+full:(r0+i+1)*cols], x[full:])
			}
		}
		copy(out[r0:r0+n], sums[:n])
	}
	archsimd.ClearAVXUpperBits()
}

// dot1 returns the lane-wise sums of w[i]·x[i] over end bytes: the inner
// loop, kept in a small function so that only pointers and offsets are
// live in it and nothing spills to the stack. Four accumulators keep four
// FMAs in flight: with one, each waits for the previous (4 cycles), which
// capped a row at about 8 bytes a cycle, below what memory delivers.
func dot1(w, x unsafe.Pointer, end uintptr) archsimd.Float32x8 {
	var a0, a1, a2, a3 archsimd.Float32x8
	off := uintptr(0)
	for ; off+128 <= end; off += 128 {
		a0 = f32x8(w, off).MulAdd(f32x8(x, off), a0)
		a1 = f32x8(w, off+32).MulAdd(f32x8(x, off+32), a1)
		a2 = f32x8(w, off+64).MulAdd(f32x8(x, off+64), a2)
		a3 = f32x8(w, off+96).MulAdd(f32x8(x, off+96), a3)
	}
	for ; off < end; off += 32 {
		a0 = f32x8(w, off).MulAdd(f32x8(x, off), a0)
	}
	return a0.Add(a1).Add(a2.Add(a3))
}

// f32x8 loads the eight floats at p plus off bytes.
func f32x8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

// i8x32 loads the 32 int8 values at p plus off bytes.
func i8x32(p unsafe.Pointer, off uintptr) archsimd.Int8x32 {
	return archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(p, off)))
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
	pxq := unsafe.Pointer(&x.q[:c][0])
	pxs := unsafe.Pointer(&x.scales[:groups+scalePad][0])
	var acc [4]archsimd.Float32x8
	var sums [4]float32
	for r0 := lo; r0 < hi; r0 += 4 {
		n := min(4, hi-r0)
		for i := range n {
			r := r0 + i
			acc[i] = q8Row(unsafe.Pointer(&m.Q8[r*c : (r+1)*c][0]), unsafe.Pointer(&m.Scales[r*groups : (r+1)*groups+scalePad][0]), pxq, pxs, groups)
		}
		for i := n; i < 4; i++ {
			acc[i] = archsimd.Float32x8{}
		}
		sum4(acc[0], acc[1], acc[2], acc[3]).Store(&sums)
		copy(out[r0:r0+n], sums[:n])
	}
	archsimd.ClearAVXUpperBits()
}

// q8Row is one row's lane-wise partial sums, two groups per step into two
// accumulators so consecutive groups' FMAs overlap.
func q8Row(w, ws, x, xs unsafe.Pointer, groups int) archsimd.Float32x8 {
	ones := archsimd.BroadcastInt16x16(1)
	var even, odd archsimd.Float32x8
	for b := 0; b < groups; b += 8 {
		scales := f32x8(ws, uintptr(b)*4).Mul(f32x8(xs, uintptr(b)*4))
		n := min(8, groups-b)
		k := 0
		for ; k+2 <= n; k += 2 {
			off := uintptr(b+k) * GroupSize
			even = q8Group(w, x, off, ones).MulAdd(scales.Permute(laneIndex[k]), even)
			odd = q8Group(w, x, off+GroupSize, ones).MulAdd(scales.Permute(laneIndex[k+1]), odd)
		}
		if k < n {
			even = q8Group(w, x, uintptr(b+k)*GroupSize, ones).MulAdd(scales.Permute(laneIndex[k]), even)
		}
	}
	return even.Add(odd)
}

// q8Group is one group's 32 int8 products, summed into eight float lanes.
func q8Group(w, x unsafe.Pointer, off uintptr, ones archsimd.Int16x16) archsimd.Float32x8 {
	wv, xv := i8x32(w, off), i8x32(x, off)
	return wv.Abs().AsUint8x32().DotProductPairsSaturated(xv.CopySign(wv)).DotProductPairs(ones).ConvertToFloat32()
}
