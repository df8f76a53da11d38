package builtin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Every format kept as the GGUF's blocks, written by the tests' encoders
// (laid out from ggml's structs, apart from the engine's decoders): its
// weights come back within the format's own error of the originals, its
// matrix-vector product against quantized activations is within 1%
// (relative L2) of the float product of the same decoded weights, the
// engine's kernel agrees with the portable one, over the whole matrix
// and over ranges that cut the AVX2 kernels' 8-row tiles (27 rows: the
// last tile is padded), and a row of zeros gives zero.
func TestEveryBlockFormatRoundTripsAndMultiplies(t *testing.T) {
	// Relative L2 of the decoded weights from standard normal ones: about
	// a step/√12 for the tests' encoders, with room above.
	worst := map[format]float64{
		formatQ2_K: 0.40, formatQ3_K: 0.20, formatIQ4_NL: 0.12, formatQ4_0: 0.11, formatQ4_1: 0.10, formatQ4_K: 0.10,
		formatQ5_0: 0.06, formatQ5_1: 0.05, formatQ5_K: 0.05, formatQ6_K: 0.03,
	}
	for f := range formats {
		f := format(f)
		if !f.storedAsBlocks() {
			continue
		}
		t.Run(f.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(f)))
			rows, cols := 27, 512
			w := randomMatrix(rng, rows, cols)
			clear(w.F32[3*cols : 4*cols])
			q := quantizeTo(t, formats[f].ggml, w)
			if q.DType() != f.String() || len(q.quant) != rows*cols/f.block()*f.fileBlockBytes() {
				t.Fatalf("%s, %d bytes", q.DType(), len(q.quant))
			}
			back := q.Dequantize()
			rel := relativeL2(back.F32, w.F32)
			t.Logf("%s: decoded weights off by %.4f", f, rel)
			if !(rel <= worst[f]) {
				t.Errorf("decoded weights off by %.4f (relative L2), over the format's %.2f", rel, worst[f])
			}
			x := randomMatrix(rng, 1, cols).F32
			xq := newQuantized(cols)
			xq.quantize(x, allForms)
			got, generic, want := make([]float32, rows), make([]float32, rows), make([]float32, rows)
			matVecBlocks(got, q, &xq, 0, rows)
			matVecBlocksGeneric(generic, q, &xq, 0, rows)
			matVecF32Generic(want, back, x, 0, rows)
			if rel := relativeL2(got, want); !(rel <= 0.01) {
				t.Errorf("matvec off by %.4f (relative L2) from the f32 product of the same weights", rel)
			}
			if rel := relativeL2(got, generic); !(rel <= 1e-5) {
				t.Errorf("the engine's kernel is off by %.2g from the portable one", rel)
			}
			pieces := make([]float32, rows)
			for _, span := range [][2]int{{0, 5}, {5, 13}, {13, 16}, {16, 27}} {
				matVecBlocks(pieces, q, &xq, span[0], span[1])
			}
			if !slices.Equal(pieces, got) {
				t.Errorf("rows computed in pieces differ from the whole: %v against %v", pieces, got)
			}
			if got[3] != 0 {
				t.Errorf("a row of zeros gives %g", got[3])
			}
		})
	}
}

// quantizedDot is w times x as quantized (Q8_K's codes and scales, or
// Q8_0's), in float64, and the size of the sum's terms (Σ|w·x|).
func quantizedDot(w []float32, x *quantized, q8K bool) (sum, scale float64) {
	for i, wi := range w {
		y := float64(x.q[i]) * float64(x.scales[i/GroupSize])
		if q8K {
			y = float64(x.kq[i]) * float64(x.kscales[i/superBlock])
		}
		sum += float64(wi) * y
		scale += math.Abs(float64(wi) * y)
	}
	return sum, scale
}
