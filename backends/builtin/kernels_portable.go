//go:build !(goexperiment.simd && amd64)

package builtin

import "runtime"

// KernelName says which kernels this build computes with, and what would
// be faster on this architecture.
var KernelName = portableKernelName(runtime.GOARCH)

func portableKernelName(goarch string) string {
	if goarch == "amd64" {
		return "portable Go (build with GOEXPERIMENT=simd for AVX2)"
	}
	return "portable Go (tokentop has SIMD kernels for amd64 only, none yet for " + goarch + ")"
}

func matVecF32(out []float32, m *Matrix, x []float32, lo, hi int) {
	matVecF32Generic(out, m, x, lo, hi)
}

// portableQ8 is whether Q8_0 products run the portable kernel.
const portableQ8 = true

func matMatF32(outs [][]float32, m *Matrix, xs [][]float32, lo, hi int) {
	for s := range xs {
		matVecF32Generic(outs[s], m, xs[s], lo, hi)
	}
}
func matVecQ8(out []float32, m *Matrix, x *quantized, lo, hi int) { matVecQ8Generic(out, m, x, lo, hi) }
func matMatQ8(outs [][]float32, m *Matrix, xs []*quantized, lo, hi int) {
	for s := range xs {
		matVecQ8Generic(outs[s], m, xs[s], lo, hi)
	}
}
func matVecBlocks(out []float32, m *Matrix, x *quantized, lo, hi int) {
	matVecBlocksGeneric(out, m, x, lo, hi)
}
func dotRows(out, w, x []float32, lo, hi, cols, stride int) {
	dotRowsGeneric(out, w, x, lo, hi, cols, stride)
}
func weightedSum(out, weights, v []float32, stride int)    { weightedSumGeneric(out, weights, v, stride) }
func quantizeInto(q []int8, scales []float32, x []float32) { quantizeGeneric(q, scales, x) }
func quantizeQ8K(q []int8, scales []float32, sums []int16, x []float32) {
	quantizeQ8KGeneric(q, scales, sums, x)
}
func softmax(x []float32, scale float32) { softmaxGeneric(x, scale) }
func swiGLU(hb, hb2 []float32)           { swiGLUGeneric(hb, hb2) }

// withTiles returns m as it is: the portable kernels read rows.
func withTiles(m *Matrix) *Matrix { return m }

// matMatTiles is never reached: no matrix has tiles in this build.
func matMatTiles(outs [][]float32, m *Matrix, xs []*quantized, lo, hi int) {
	for s := range xs {
		matVecBlocks(outs[s], m, xs[s], lo, hi)
	}
}

// tilesRead reports that no activations are read as tiles.
func tilesRead(*Matrix) (q8_0, q8K bool) { return false, false }
