//go:build goexperiment.simd && amd64

package builtin

import (
	"simd/archsimd"
	"unsafe"
)

// The 512-bit kernels, for CPUs with AVX-512 (F, CD, BW, DQ and VL, as
// archsimd.X86.AVX512 defines it), chosen at run time; the AVX2 kernels
// stay for every other CPU and for GODEBUG=cpu.avx512f=off. archsimd has
// no VNNI (VPDPBUSD), so the int8 dot product is still VPMADDUBSW then
// VPMADDWD, two groups to a vector.
//
// They serve long rows only. Whole-model medians here (an AMD EPYC with
// AVX-512; BenchmarkDecodeStep, interleaved runs against
// GODEBUG=cpu.avx512f=off): stories110M f32 68.0 → 71.7 tok/s and Q8_0
// 183 → 196 on one thread, while sending stories15M's 288-wide f32 rows
// through the 512-bit loop too cost it 5% on one thread and 9% on two.
// BenchmarkMatVec, which runs each kernel set, shows the same on one
// matrix: at 2048×768 the 512-bit kernels win (f32 44 → 49 GFLOP/s, Q8_0
// 66 → 78), at 32000×288 they lose (f32 18.5 → 16.9; Q8_0 54 → 46.5
// against the paired AVX2 kernel). So f32 rows shorter than wideF32Cols
// keep AVX2, and so do Q8_0 rows short enough for the paired AVX2 kernel
// (shortQ8Groups).

var haveAVX512 = archsimd.X86.AVX512()

// wideF32Cols is the shortest f32 row the 512-bit loop takes.
const wideF32Cols = 512

// dotAVX512 is dotAVX2 with 16-lane vectors: four accumulators over 256
// bytes a step, then single vectors, then one 8-lane step for a row whose
// length is an odd multiple of 8.
func dotAVX512(w, x unsafe.Pointer, end uintptr) archsimd.Float32x8 {
	var a0, a1, a2, a3 archsimd.Float32x16
	off := uintptr(0)
	for ; off+256 <= end; off += 256 {
		a0 = f32x16(w, off).MulAdd(f32x16(x, off), a0)
		a1 = f32x16(w, off+64).MulAdd(f32x16(x, off+64), a1)
		a2 = f32x16(w, off+128).MulAdd(f32x16(x, off+128), a2)
		a3 = f32x16(w, off+192).MulAdd(f32x16(x, off+192), a3)
	}
	for ; off+64 <= end; off += 64 {
		a0 = f32x16(w, off).MulAdd(f32x16(x, off), a0)
	}
	sum := a0.Add(a1).Add(a2.Add(a3))
	lanes := sum.GetLo().Add(sum.GetHi())
	if off < end {
		lanes = f32x8(w, off).MulAdd(f32x8(x, off), lanes)
	}
	return lanes
}

// f32x16 loads the sixteen floats at p plus off bytes.
func f32x16(p unsafe.Pointer, off uintptr) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, off)))
}

// i8x64 loads the 64 int8 values (two groups) at p plus off bytes.
func i8x64(p unsafe.Pointer, off uintptr) archsimd.Int8x64 {
	return archsimd.LoadInt8x64((*[64]int8)(unsafe.Add(p, off)))
}

// pairIndex[j] puts lane 2j of a scale vector in lanes 0–7 and lane 2j+1
// in lanes 8–15: the scales of the two groups one 64-byte vector holds.
// It is made only on a CPU with AVX-512: the load is an AVX-512
// instruction, which killed the process at start on every other CPU.
var pairIndex = func() (idx [4]archsimd.Uint32x16) {
	if !haveAVX512 {
		return idx
	}
	for j := range idx {
		var lanes [16]uint32
		for i := range lanes {
			lanes[i] = uint32(2*j + i/8)
		}
		idx[j] = archsimd.LoadUint32x16(&lanes)
	}
	return idx
}()

// q8RowAVX512 is q8Row1 two groups to a vector: lanes 0–7 hold the first
// group's partial sums and lanes 8–15 the second's, each weighed by its
// own scale product; a group left over after the pairs (an odd count)
// goes through q8Dot into an 8-lane accumulator.
func q8RowAVX512(w, ws, x, xs unsafe.Pointer, groups int) archsimd.Float32x8 {
	ones := archsimd.BroadcastInt16x32(1)
	var even, odd archsimd.Float32x16
	var single archsimd.Float32x8
	for b := 0; b < groups; b += 8 {
		scales8 := f32x8(ws, uintptr(b)*4).Mul(f32x8(xs, uintptr(b)*4))
		scales := archsimd.Float32x16{}.SetLo(scales8)
		n := min(8, groups-b)
		k := 0
		for ; k+4 <= n; k += 4 {
			off := uintptr(b+k) * GroupSize
			even = q8Dot2(i8x64(w, off), i8x64(x, off), ones).MulAdd(scales.Permute(pairIndex[k/2]), even)
			odd = q8Dot2(i8x64(w, off+64), i8x64(x, off+64), ones).MulAdd(scales.Permute(pairIndex[k/2+1]), odd)
		}
		if k+2 <= n {
			off := uintptr(b+k) * GroupSize
			even = q8Dot2(i8x64(w, off), i8x64(x, off), ones).MulAdd(scales.Permute(pairIndex[k/2]), even)
			k += 2
		}
		if k < n {
			off := uintptr(b+k) * GroupSize
			single = q8Dot(i8x32(w, off), i8x32(x, off), archsimd.BroadcastInt16x16(1)).MulAdd(scales8.Permute(laneIndex[k]), single)
		}
	}
	sum := even.Add(odd)
	return sum.GetLo().Add(sum.GetHi()).Add(single)
}

// q8Dot2 is q8Dot for two groups. AVX-512 has no VPSIGNB: x takes w's
// sign by a subtraction from zero under the mask of w's negative bytes.
func q8Dot2(wv, xv archsimd.Int8x64, ones archsimd.Int16x32) archsimd.Float32x16 {
	var zero archsimd.Int8x64
	signed := zero.Sub(xv).Merge(xv, wv.Less(zero))
	return wv.Abs().AsUint8x64().DotProductPairsSaturated(signed).DotProductPairs(ones).ConvertToFloat32()
}
