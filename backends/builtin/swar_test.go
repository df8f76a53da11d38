package builtin

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// f16Fields is where each block format keeps its f16 scales: the tests
// set them to finite values, so that any other bytes make a valid block.
var f16Fields = map[format][]int{
	formatQ4_0: {0}, formatQ4_1: {0, 2}, formatQ5_0: {0}, formatQ5_1: {0, 2}, formatIQ4_NL: {0},
	formatQ2_K: {80, 82}, formatQ3_K: {108}, formatQ4_K: {0, 2}, formatQ5_K: {0, 2}, formatQ6_K: {208},
}

// checkBlockDot holds format f's dot of one block (its bytes raw, f16
// fields set to 1 and 0.5), and the dispatched kernel's, against the
// decoded weights times the activations as quantized, in float64.
func checkBlockDot(t *testing.T, f format, raw []byte, v []float32) {
	t.Helper()
	spec := formats[f]
	b := make([]byte, spec.blockBytes)
	copy(b, raw)
	for i, at := range f16Fields[f] {
		binary.LittleEndian.PutUint16(b[at:], []uint16{0x3c00, 0x3800}[i])
	}
	x := newQuantized(spec.block)
	x.quantize(v[:spec.block], allForms)
	weights := make([]float32, spec.block)
	spec.decode(weights, b)
	want, scale := quantizedDot(weights, &x, spec.q8K)
	got := float64(spec.dot(b, &x, 0))
	if math.Abs(got-want) > 1e-5*scale+1e-6 {
		t.Errorf("%s, block % x, activations %v…: dot %g, want %g", f, b[:min(len(b), 24)], v[:4], got, want)
	}
	// The kernel the build dispatches to (the tiles, in assembly where
	// the SIMD build has them) on the same block, as a one-row matrix.
	m := withTiles(&Matrix{Rows: 1, Cols: spec.block, format: f, quant: b}, nil, nil)
	var row [1]float32
	matVecBlocks(row[:], m, &x, 0, 1)
	if math.Abs(float64(row[0])-want) > 1e-5*scale+1e-6 {
		t.Errorf("%s, block % x, activations %v…: dispatched kernel %g, want %g", f, b[:min(len(b), 24)], v[:4], row[0], want)
	}
}

// The word products (swar.go) stay exact at their bounds: every block
// format's dot against blocks of all-zero, all-one and alternating bytes
// (the extreme codes, scales and mins) and activations all at +127, all
// at −127, or alternating.
func TestBlockDotsAtExtremeCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for f := range formats {
		f := format(f)
		if !f.storedAsBlocks() {
			continue
		}
		n := formats[f].block
		acts := map[string][]float32{"+": make([]float32, n), "-": make([]float32, n), "±": make([]float32, n), "random": randomVec(rng, n)}
		for i := range n {
			acts["+"][i], acts["-"][i], acts["±"][i] = 1, -1, float32(1-2*(i%2))
		}
		for _, fill := range []byte{0x00, 0xff, 0xaa, 0x55} {
			raw := make([]byte, formats[f].blockBytes)
			for i := range raw {
				raw[i] = fill
			}
			for _, v := range acts {
				checkBlockDot(t, f, raw, v)
			}
		}
	}
}

// Any bytes are a block a GGUF may hold: the dots agree with decoding.
func FuzzBlockDots(f *testing.F) {
	f.Add(uint8(formatQ4_0), []byte{0xff, 0x00, 0x12}, int64(1))
	f.Add(uint8(formatQ6_K), []byte{0x80, 0x7f}, int64(2))
	f.Add(uint8(formatQ5_K), []byte{0xff}, int64(3))
	f.Add(uint8(formatQ3_K), []byte{0x00, 0xff}, int64(4))
	f.Fuzz(func(t *testing.T, which uint8, raw []byte, seed int64) {
		fm := format(int(which) % len(formats))
		if !fm.storedAsBlocks() {
			return
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		b := make([]byte, formats[fm].blockBytes)
		for i := range b {
			if len(raw) > 0 {
				b[i] = raw[i%len(raw)]
			}
			b[i] ^= byte(rng.IntN(2) * 0xff)
		}
		v := randomVec(rng, formats[fm].block)
		if seed%3 == 0 { // the extremes, alternating
			for i := range v {
				v[i] = float32(1 - 2*(i%2))
			}
		}
		checkBlockDot(t, fm, b, v)
	})
}

// The portable Q8_0 kernel's word products stay exact at their bounds: a
// GGUF's Q8_0 weights may be −128, which the engine's own quantizer never
// writes, against activations all at ±127. Each row of codes is both the
// first and the second of a pair of rows, and a span of odd length pairs
// its last row with itself.
func TestQ8WordProductsAtExtremeCodes(t *testing.T) {
	const cols = 2 * GroupSize
	kinds := [][]int8{make([]int8, cols), make([]int8, cols), make([]int8, cols)}
	for i := range cols {
		kinds[0][i], kinds[1][i], kinds[2][i] = -128, 127, int8(-128+255*(i%2))
	}
	rowCodes := append(append([][]int8{}, kinds...), kinds...)
	m := newQuantMatrix(formatQ8_0, len(rowCodes), cols)
	for r, codes := range rowCodes {
		scales, payload := m.groupRow(r)
		for g := range scales {
			scales[g] = 0.5
		}
		for i, c := range codes {
			payload[i] = byte(c)
		}
	}
	for _, fill := range []float32{1, -1, 0} {
		v := make([]float32, cols)
		for i := range v {
			v[i] = fill
			if fill == 0 {
				v[i] = float32(1 - 2*(i%2))
			}
		}
		x := newQuantized(cols)
		x.quantize(v, allForms)
		for _, lo := range []int{0, 1} {
			got := make([]float32, len(rowCodes))
			matVecQ8Generic(got, m, &x, lo, len(rowCodes))
			for r := lo; r < len(rowCodes); r++ {
				var want float64
				for i, c := range rowCodes[r] {
					want += 0.5 * float64(c) * float64(x.q[i]) * float64(x.scales[i/GroupSize])
				}
				if math.Abs(float64(got[r])-want) > 1e-5*math.Abs(want)+1e-6 {
					t.Errorf("row %d of [%d, %d) against %v: %g, want %g", r, lo, len(rowCodes), fill, got[r], want)
				}
			}
		}
	}
}
