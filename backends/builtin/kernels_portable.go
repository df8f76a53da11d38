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

// f32TileGroup is how many f32 tiles the AVX2 build's kernel takes at
// once; this build has no f32 tiles.
const f32TileGroup = 1

// groupHalfTiles is whether half tiles lie in interleaved groups; this
// build reads none (its tests lay out both).
var groupHalfTiles = false

// F32PromptKernel says which vector width f32 prompts run at; this build
// has one.
func F32PromptKernel() string { return "" }

// BF16PromptKernel says which kernel BF16 prompts run: this build has one.
func BF16PromptKernel() string { return "" }

// Q4_0PromptKernel says which vector width Q4_0 prompts run at; this
// build has one.
func Q4_0PromptKernel() string { return "" }

// IQ4_NLPromptKernel is Q4_0PromptKernel for IQ4_NL matrices: none here.
func IQ4_NLPromptKernel() string { return "" }

// portableQ8 is whether Q8_0 products run the portable kernel.
const portableQ8 = true

// matMatF32's ahead (the rows its caller takes next) is for the tile
// kernels' read ahead; the rows here have none.
func matMatF32(outs [][]float32, m *Matrix, xs [][]float32, lo, hi, _ int) {
	for s := range xs {
		matVecF32Generic(outs[s], m, xs[s], lo, hi)
	}
}

// matMatBF16 is matMatF32 on xs rounded to bfloat16 (rounded), as every
// build multiplies a BF16 file's matrices (roundToBFloat16).
func matMatBF16(outs [][]float32, m *Matrix, rounded [][]float32, _ []*quantized, lo, hi, ahead int) {
	matMatF32(outs, m, rounded, lo, hi, ahead)
}

func matVecBlocks(out []float32, m *Matrix, x *quantized, lo, hi int) {
	if m.tiles != nil {
		levels := m.levelRows()
		matVecQ8Generic(out, &levels, x, lo, hi)
		return
	}
	matVecBlocksGeneric(out, m, x, lo, hi)
}
func dotRows(out, w, x []float32, lo, hi, cols, stride int) {
	dotRowsGeneric(out, w, x, lo, hi, cols, stride)
}
func weightedSum(out, weights, v []float32, stride int) { weightedSumGeneric(out, weights, v, stride) }
func dotRowsHalf(out []float32, w []uint16, x []float32, lo, hi, cols, stride int, scratch []float32) {
	dotRowsHalfGeneric(out, w, x, lo, hi, cols, stride, scratch)
}
func weightedSumHalf(out, weights []float32, v []uint16, stride int, scratch []float32) {
	weightedSumHalfGeneric(out, weights, v, stride, scratch)
}
func storeHalves(dst []uint16, src []float32) { storeHalvesGeneric(dst, src) }
func roundToHalves(x []float32)               { roundToHalvesGeneric(x) }
func roundToBFloat16(rounded []float32, pairs []uint32, x []float32) {
	roundToBFloat16Generic(rounded, pairs, x)
}
func quantizeInto(q []int8, scales []float32, x []float32) { quantizeGeneric(q, scales, x) }
func quantizeActivations(q []int8, scales []float32, x []float32) {
	quantizeActivationsGeneric(q, scales, x)
}
func quantizeQ8K(q []int8, scales []float32, sums []int16, x []float32) {
	quantizeQ8KGeneric(q, scales, sums, x)
}
func softmax(x []float32, scale float32) { softmaxGeneric(x, scale) }
func swiGLU(hb, hb2 []float32)           { swiGLUGeneric(hb, hb2) }
func geGLU(hb, hb2 []float32)            { geGLUGeneric(hb, hb2) }

// withTiles gives an IQ4_NL matrix its levels as Q8_0 rows (levelRows):
// IQ4_NL's codes index a table of 16 levels, which no word product
// unpacks, and the portable Q8_0 kernel runs three times as fast as a
// loop over the table, for twice IQ4_NL's bytes. Other formats' kernels
// read their rows as stored (f32 ones too: no tile memory is taken and
// copied is never called).
func withTiles(m *Matrix, _ *tileMemory, copied func(stored []byte)) *Matrix {
	if m.format == formatIQ4_NL {
		m.tiles = iq4NLLevelRows(m).quant
	}
	return m
}

// q8_0TilesOfFile is nil: this build runs Q8_0 from its rows.
func q8_0TilesOfFile([]byte, int, int) []byte { return nil }

// levelRows views an IQ4_NL matrix's level rows as a Q8_0 matrix.
func (m *Matrix) levelRows() Matrix {
	return Matrix{Rows: m.Rows, Cols: m.Cols, format: formatQ8_0, quant: m.tiles}
}

// matMatTiles multiplies an IQ4_NL matrix's level rows, the only tiles
// of this build.
func matMatTiles(outs [][]float32, m *Matrix, xs []*quantized, lo, hi int) {
	levels := m.levelRows()
	matMatQ8(outs, &levels, xs, lo, hi)
}

// tileForms is the activations an IQ4_NL matrix's level rows read: the
// portable Q8_0 kernel's.
func tileForms(m *Matrix) activationForms {
	if m.tiles == nil {
		return activationForms{}
	}
	return activationForms{q8_0: true, split: true}
}
