package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// The tests' quantizers, which write the GGUFs the engine reads: Q4_0 by
// ggml's rule (encode_test.go), and Q4_K and Q6_K by a simpler rule than llama-quantize's
// search, chosen so that every weight is within half a step of the
// original (scales are rounded up, never down, so no weight clamps).

// quantizeTo returns m in ggml type typ.
func quantizeTo(t testing.TB, typ uint32, m *Matrix) *Matrix {
	t.Helper()
	var q *Matrix
	var err error
	switch typ {
	case ggmlQ8_0:
		q, err = m.Quantize()
	case ggmlQ4_K:
		q, err = quantizeK(m, formatQ4_K, encodeQ4K)
	case ggmlQ6_K:
		q, err = quantizeK(m, formatQ6_K, encodeQ6K)
	default:
		if f, ok := ggmlFormats[typ]; ok && testEncoders[f] != nil {
			q, err = quantizeK(m, f, testEncoders[f])
			break
		}
		err = fmt.Errorf("no quantizer for ggml type %d", typ)
	}
	if err != nil {
		t.Fatal(err)
	}
	return withTiles(q, nil, nil) // as the loader does, so the tests reach the kernels the engine runs
}

// testEncoders write one block of each format kept as the GGUF's blocks
// but Q4_K and Q6_K (encode_test.go).
var testEncoders = map[format]func(block []byte, x []float32){
	formatQ4_0: encodeQ4_0, formatQ4_1: encodeQ4_1, formatQ5_0: encodeQ5_0, formatQ5_1: encodeQ5_1, formatIQ4_NL: encodeIQ4NL,
	formatQ2_K: encodeQ2K, formatQ3_K: encodeQ3K, formatQ5_K: encodeQ5K,
}

// quantizeK encodes each row's blocks in format f.
func quantizeK(m *Matrix, f format, encode func(block []byte, x []float32)) (*Matrix, error) {
	n := f.block()
	if m.Cols%n != 0 {
		return nil, fmt.Errorf("cannot quantize a %d×%d matrix to %s: columns are not a multiple of %d", m.Rows, m.Cols, f, n)
	}
	q := newQuantMatrix(f, m.Rows, m.Cols)
	per := f.fileBlockBytes()
	for r := range m.Rows {
		raw := q.quantRow(r)
		for b := range m.Cols / n {
			encode(raw[b*per:(b+1)*per], m.F32[r*m.Cols+b*n:r*m.Cols+(b+1)*n])
		}
	}
	return q, nil
}

// encodeQ4K writes 256 weights as one Q4_K block.
func encodeQ4K(b []byte, x []float32) {
	encodeScaledMinBlock(b, x, 15, func(j, i, q int) {
		b[16+j/2*32+i] |= byte(q) << (4 * (j & 1))
	})
}

// encodeScaledMinBlock writes the d, dmin and packed scales and mins of
// a Q4_K or Q5_K block, and gives put each weight's code (0…steps). Group
// j spans [lo_j, hi_j] with lo_j ≤ 0: its min is the smallest multiple of
// dmin at or below lo_j, and its step d·scale_j the smallest multiple of
// d that covers the rest of the span in steps steps.
func encodeScaledMinBlock(b []byte, x []float32, steps int, put func(j, i, q int)) {
	const groups = superBlock / GroupSize
	var lo, hi [groups]float32
	var maxNegLo float32
	for j := range groups {
		for _, v := range x[j*GroupSize : (j+1)*GroupSize] {
			lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
		}
		maxNegLo = max(maxNegLo, -lo[j])
	}
	dminBits := f16Up(maxNegLo / 63)
	dmin := f16ToF32(dminBits)
	var mins, scales [groups]uint8
	var base, step [groups]float32
	var maxStep float32
	for j := range groups {
		if dmin > 0 {
			mins[j] = uint8(min(63, math.Ceil(float64(-lo[j]/dmin))))
		}
		base[j] = -dmin * float32(mins[j])
		step[j] = (hi[j] - base[j]) / float32(steps)
		maxStep = max(maxStep, step[j])
	}
	dBits := f16Up(maxStep / 63)
	d := f16ToF32(dBits)
	clear(b)
	binary.LittleEndian.PutUint16(b, dBits)
	binary.LittleEndian.PutUint16(b[2:], dminBits)
	packed := b[4:16]
	for j := range groups {
		if d > 0 {
			scales[j] = uint8(min(63, math.Ceil(float64(step[j]/d))))
		}
		if j < 4 {
			packed[j] |= scales[j]
			packed[j+4] |= mins[j]
		} else {
			packed[j+4] = scales[j]&0x0f | mins[j]&0x0f<<4
			packed[j-4] |= scales[j] >> 4 << 6
			packed[j] |= mins[j] >> 4 << 6
		}
		s := d * float32(scales[j])
		for i, v := range x[j*GroupSize : (j+1)*GroupSize] {
			var q float64
			if s > 0 {
				q = min(float64(steps), max(0, math.Round(float64((v-base[j])/s))))
			}
			put(j, i, int(q))
		}
	}
}

// encodeQ6K writes 256 weights as one Q6_K block: each run of 16 gets the
// scale max|w|/31 rounded up to a multiple of d, so values map into
// −31…31 of the 6-bit range −32…31.
func encodeQ6K(b []byte, x []float32) {
	var scale [16]float32
	var maxScale float32
	for s := range scale {
		for _, v := range x[s*16 : (s+1)*16] {
			scale[s] = max(scale[s], float32(math.Abs(float64(v)))/31)
		}
		maxScale = max(maxScale, scale[s])
	}
	dBits := f16Up(maxScale / 127)
	d := f16ToF32(dBits)
	clear(b)
	binary.LittleEndian.PutUint16(b[208:], dBits)
	for s := range scale {
		var sc float64
		if d > 0 {
			sc = min(127, math.Ceil(float64(scale[s]/d)))
		}
		b[192+s] = byte(int8(sc))
		step := float64(d) * sc
		for i := range 16 {
			var q float64
			if step > 0 {
				q = min(31, max(-32, math.Round(float64(x[s*16+i])/step)))
			}
			// Weight s·16+i is weight i' of group k of half h (see q6KValue).
			h, k, in := s/8, s%8/2, s%2*16+i
			u := byte(int(q) + 32)
			b[h*64+(k&1)*32+in] |= u & 0x0f << (4 * (k >> 1))
			b[128+h*32+in] |= u >> 4 << (2 * k)
		}
	}
}

// f16Up is the smallest half at or above f ≥ 0, so that a block scale
// rounded to f16 never shrinks and every weight stays in range.
func f16Up(f float32) uint16 {
	h := f32ToF16(f)
	if f16ToF32(h) < f {
		h++
	}
	return h
}

// --dtype q8_0 makes what llama-quantize makes: each matrix of each
// architecture's f32 test file, quantized by the engine, holds the scales
// and codes of the Q8_0 file llama-quantize made from it
// (testdata/archs), bit for bit.
func TestQ8_0IsLlamaQuantizes(t *testing.T) {
	dir := filepath.Join("testdata", "archs")
	for _, arch := range []string{"llama", "qwen2", "qwen3", "gemma3"} {
		ours, err := Load(filepath.Join(dir, arch+"-f32.gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := Load(filepath.Join(dir, arch+"-q8_0.gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for i, m := range ours.Weights.matrices() {
			b := (*theirs.Weights.matrices()[i]).withRows()
			if b.format != formatQ8_0 {
				continue
			}
			a, err := (*m).Quantize()
			if err != nil {
				t.Fatal(err)
			}
			for r := range a.Rows {
				sa, qa := a.q8Row(r)
				sb, qb := b.q8Row(r)
				if !slices.Equal(sa, sb) || !slices.Equal(qa, qb) {
					t.Fatalf("%s, matrix %d, row %d: scales %v codes %v, llama-quantize's %v %v", arch, i, r, sa[:2], qa[:4], sb[:2], qb[:4])
				}
			}
			compared++
		}
		if compared == 0 {
			t.Fatalf("%s: no matrix is Q8_0 in both", arch)
		}
	}
}
