package builtin

import (
	"math"
	"unsafe"
)

// The portable kernels: plain Go loops, unrolled by four so the compiler
// keeps independent accumulators. They serve builds without
// GOEXPERIMENT=simd and CPUs without AVX2. Every kernel is tested against a
// float64 reference.

// dotGeneric returns Σ a[i]·b[i] over len(a).
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyGeneric sets y += a·x.
func axpyGeneric(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// matVecF32Generic computes out[r] = m[r]·x for rows [lo, hi).
func matVecF32Generic(out []float32, m *Matrix, x []float32, lo, hi int) {
	dotRowsGeneric(out, m.F32, x, lo, hi, m.Cols, m.Cols)
}

// dotRowsGeneric sets out[r] = w[r*stride : r*stride+cols]·x for rows
// [lo, hi): a matrix product, or attention scores over cached keys.
func dotRowsGeneric(out, w, x []float32, lo, hi, cols, stride int) {
	for r := lo; r < hi; r++ {
		out[r] = dotGeneric(w[r*stride:r*stride+cols], x)
	}
}

// weightedSumGeneric sets out = Σ_t weights[t]·v[t*stride : t*stride+len(out)],
// attention's mix of cached values.
func weightedSumGeneric(out, weights, v []float32, stride int) {
	clear(out)
	for t, a := range weights {
		axpyGeneric(out, a, v[t*stride:t*stride+len(out)])
	}
}

// The portable integer kernels walk a group through re-sliced windows of
// four or eight values (one bounds check per window, and plain indexed
// loads), summing into two accumulators: an indexed loop over a fixed
// array compiled to six instructions a weight here.

// dot8s is Σ a[i]·b[i] over int8 values, eight at a time.
func dot8s(a, b []int8) int32 {
	var s0, s1 int32
	for len(a) >= 8 && len(b) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += int32(x[0])*int32(y[0]) + int32(x[1])*int32(y[1]) + int32(x[2])*int32(y[2]) + int32(x[3])*int32(y[3])
		s1 += int32(x[4])*int32(y[4]) + int32(x[5])*int32(y[5]) + int32(x[6])*int32(y[6]) + int32(x[7])*int32(y[7])
		a, b = a[8:], b[8:]
	}
	return s0 + s1
}

// group32 is group g of the int8 values v.
func group32(v []int8, g int) []int8 { return v[g*GroupSize : (g+1)*GroupSize] }

// matVecQ8Generic computes out[r] = Σ_groups scale_w·scale_x·Σ q_w·q_x for rows
// [lo, hi), with integer sums inside each group of 32.
func matVecQ8Generic(out []float32, m *Matrix, x *quantized, lo, hi int) {
	groups := m.Cols / GroupSize
	for r := lo; r < hi; r++ {
		ws, w := m.q8Row(r)
		var sum float32
		for g := range groups {
			sum += float32(dot8s(group32(w, g), group32(x.q, g))) * ws[g] * x.scales[g]
		}
		out[r] = sum
	}
}

// nibbleDot is Σ (n_i − 8)·y_i over a group of 32 weights stored as 16
// bytes of nibbles (weight i < 16 in byte i's low nibble, i + 16 in its
// high one), y the group's activations.
func nibbleDot(nib *[16]byte, y *[GroupSize]int8) int32 {
	var s0, s1, s2, s3 int32
	for i := 0; i < 16; i += 2 {
		s0 += (int32(nib[i]&0x0f) - 8) * int32(y[i])
		s1 += (int32(nib[i]>>4) - 8) * int32(y[i+16])
		s2 += (int32(nib[i+1]&0x0f) - 8) * int32(y[i+1])
		s3 += (int32(nib[i+1]>>4) - 8) * int32(y[i+17])
	}
	return (s0 + s1) + (s2 + s3)
}

// matVecBlocksGeneric computes rows [lo, hi) of a matrix stored as the
// GGUF's blocks against Q8_0 activations, summing its format's dot over
// each row's blocks (g0 is a block's first group of 32 activations).
func matVecBlocksGeneric(out []float32, m *Matrix, x *quantized, lo, hi int) {
	spec := formats[m.format]
	per, groups := spec.blockBytes, spec.block/GroupSize
	for r := lo; r < hi; r++ {
		row := m.quantRow(r)
		var sum float32
		for b := range m.Cols / spec.block {
			sum += spec.dot(row[b*per:(b+1)*per], x, b*groups)
		}
		out[r] = sum
	}
}

// q4KDot is one Q4_K block's product with Q8_K activations d_x·y
// (block sb). Group j is d·s_j·q − dmin·m_j, so the product is
// d_x·(d·Σ_j s_j·Σ q·y − dmin·Σ_j m_j·Σ y): integers until the last
// step, as ggml sums it.
func q4KDot(b []byte, x *quantized, g0 int) float32 {
	return scaledMinDot(b, x, g0, func(j int, y []int8) int32 {
		nib, shift := q4KNibbles(b[16:q4KBlockBytes], j)
		return shiftedNibbleDot(nib, shift, y)
	})
}

// scaledMinDot is a Q4_K or Q5_K block's product with Q8_K activations,
// group(j, y) giving group j's Σ q·y against its 32 activations y.
func scaledMinDot(b []byte, x *quantized, g0 int, group func(j int, y []int8) int32) float32 {
	sb := g0 / (superBlock / GroupSize)
	y := x.kq[sb*superBlock : (sb+1)*superBlock]
	var dot, mins int32
	for j := range superBlock / GroupSize {
		sc, mn := q4KScaleMin(j, b[4:16])
		dot += int32(sc) * group(j, y[j*GroupSize:(j+1)*GroupSize])
		mins += int32(mn) * int32(x.ksums[sb*16+2*j]+x.ksums[sb*16+2*j+1])
	}
	return x.kscales[sb] * (f16ToF32(le16(b))*float32(dot) - f16ToF32(le16(b[2:]))*float32(mins))
}

// shiftedNibbleDot is Σ (nib[i]>>shift & 15)·y[i] over 32 weights,
// eight at a time through re-sliced windows (a form the compiler checks
// once per window).
func shiftedNibbleDot(nib []byte, shift uint, y []int8) int32 {
	var s0, s1 int32
	for len(nib) >= 8 && len(y) >= 8 {
		n, v := nib[:8:8], y[:8:8]
		s0 += int32(n[0]>>shift&15)*int32(v[0]) + int32(n[1]>>shift&15)*int32(v[1]) + int32(n[2]>>shift&15)*int32(v[2]) + int32(n[3]>>shift&15)*int32(v[3])
		s1 += int32(n[4]>>shift&15)*int32(v[4]) + int32(n[5]>>shift&15)*int32(v[5]) + int32(n[6]>>shift&15)*int32(v[6]) + int32(n[7]>>shift&15)*int32(v[7])
		nib, y = nib[8:], y[8:]
	}
	return s0 + s1
}

// q6KDot is one Q6_K block's product with Q8_K activations: per run of
// 16, Σ (q−32)·y times the run's scale, summed in integers, then
// d·d_x.
func q6KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	y := x.kq[sb*superBlock : (sb+1)*superBlock]
	var dot int32
	for h := range 2 {
		for k := range 4 {
			// Group k of half h: low nibbles from ql (see q6KValue), bit
			// pairs from qh; each run of 16 has its scale.
			ql := b[h*64+(k&1)*32 : h*64+(k&1)*32+32]
			qh := b[128+h*32 : 160+h*32]
			lo, hi := uint(4*(k>>1)), uint(2*k)
			v := y[h*128+k*32 : h*128+k*32+32]
			s := 8*h + 2*k
			dot += int32(int8(b[192+s]))*q6Run(ql[:16], qh[:16], lo, hi, v[:16]) + int32(int8(b[193+s]))*q6Run(ql[16:], qh[16:], lo, hi, v[16:])
		}
	}
	return x.kscales[sb] * f16ToF32(le16(b[208:])) * float32(dot)
}

// q6Run is Σ (q−32)·y over a run of 16 Q6_K weights, q put together from
// ql's nibbles (shifted by lo) and qh's bit pairs (shifted by hi).
func q6Run(ql, qh []byte, lo, hi uint, y []int8) int32 {
	var s0, s1 int32
	for len(ql) >= 4 && len(qh) >= 4 && len(y) >= 4 {
		l, h, v := ql[:4:4], qh[:4:4], y[:4:4]
		s0 += (int32(l[0]>>lo&15|(h[0]>>hi&3)<<4)-32)*int32(v[0]) + (int32(l[1]>>lo&15|(h[1]>>hi&3)<<4)-32)*int32(v[1])
		s1 += (int32(l[2]>>lo&15|(h[2]>>hi&3)<<4)-32)*int32(v[2]) + (int32(l[3]>>lo&15|(h[3]>>hi&3)<<4)-32)*int32(v[3])
		ql, qh, y = ql[4:], qh[4:], y[4:]
	}
	return s0 + s1
}

// runDot is Σ codes[l]·q_x over run s (16 weights) of the block whose
// activations start at group g0, and Σ q_x over the run, in integers.
func runDot(x *quantized, g0, s int, codes *[16]int8) (dot, sum int32) {
	y := x.q[g0*GroupSize+s*16 : g0*GroupSize+s*16+16]
	for _, v := range y {
		sum += int32(v)
	}
	return dot8s(codes[:], y), sum
}

// runCodes is run s's 16 two-bit codes of a Q2_K or Q3_K block (qs, 64
// bytes; see twoBits), and the bit of hmask that is each weight's third
// (Q3_K) at position 4n + j.
func runCodes(qs []byte, s int) (c [16]int8, hmaskAt int, bit uint) {
	n, j := s/8, s%8/2
	base := qs[32*n+16*(s%2) : 32*n+16*(s%2)+16]
	for l, v := range base {
		c[l] = int8(v >> (2 * j) & 3)
	}
	return c, 16 * (s % 2), uint(4*n + j)
}

// q2KDot: run s is d·scale_s·q − dmin·min_s, so its product is
// scale_x·(d·scale_s·Σ q·q_x − dmin·min_s·Σ q_x).
func q2KDot(b []byte, x *quantized, g0 int) float32 {
	d, dmin := f16ToF32(le16(b[80:])), f16ToF32(le16(b[82:]))
	var total float32
	for s := range superBlock / 16 {
		codes, _, _ := runCodes(b[16:80], s)
		dot, sum := runDot(x, g0, s, &codes)
		sc, mn := int32(b[s]&0x0f), int32(b[s]>>4)
		total += x.scales[g0+s/2] * (d*float32(sc*dot) - dmin*float32(mn*sum))
	}
	return total
}

func q3KDot(b []byte, x *quantized, g0 int) float32 {
	d := f16ToF32(le16(b[108:]))
	var total float32
	for s := range superBlock / 16 {
		codes, at, bit := runCodes(b[32:96], s)
		for l, h := range b[at : at+16] { // no high bit: −4
			codes[l] += int8(h>>bit&1)*4 - 4
		}
		dot, _ := runDot(x, g0, s, &codes)
		total += x.scales[g0+s/2] * d * float32(q3KScale(b, s)*dot)
	}
	return total
}

// q5KDot is q4KDot with each weight's fifth bit.
func q5KDot(b []byte, x *quantized, g0 int) float32 {
	return scaledMinDot(b, x, g0, func(j int, y []int8) int32 {
		nib, shift := q4KNibbles(b[48:q5KBlockBytes], j)
		var codes [GroupSize]int8
		for l, v := range nib {
			codes[l] = int8(v>>shift&15 | (b[16+l]>>j&1)<<4)
		}
		return dot8s(codes[:], y)
	})
}

// quantizeQ8KGeneric fills q, scales and sums with ggml's Q8_K form of
// x, by ggml's own rule (quantize_row_q8_K), so that K-quant products
// round as llama.cpp's do: per block of 256, the value of largest
// magnitude (the first, on a tie) maps to −127, q = round(v·(−127/max))
// with halves to even, at most 127, and the scale is 1/(−127/max);
// sums holds each 16 codes' sum. A block of zeros has scale 0.
func quantizeQ8KGeneric(q []int8, scales []float32, sums []int16, x []float32) {
	for b := range scales {
		block := x[b*superBlock : (b+1)*superBlock]
		out := q[b*superBlock : (b+1)*superBlock]
		extreme := signedMax(block)
		if extreme == 0 {
			scales[b] = 0
			clear(out)
		} else {
			iscale := -127 / extreme
			scales[b] = 1 / iscale
			for i, v := range block {
				out[i] = int8(min(127, math.RoundToEven(float64(iscale*v))))
			}
		}
		for r := range superBlock / 16 {
			var s int16
			for _, v := range out[r*16 : (r+1)*16] {
				s += int16(v)
			}
			sums[b*16+r] = s
		}
	}
}

// signedMax is the first value of largest magnitude in x, with its sign.
// Magnitudes compare as their bits without the sign (in integer
// registers, which order finite floats as their values do).
func signedMax(x []float32) float32 {
	var amax uint32
	var extreme float32
	for _, v := range x {
		if a := math.Float32bits(v) &^ (1 << 31); a > amax {
			amax, extreme = a, v
		}
	}
	return extreme
}

// quantizeGeneric fills q and scales with the Q8_0 form of x: per group
// of 32, scale = max|v|/127 and q = v·(1/scale) rounded halves away from
// zero, like C's round. y±0.5 truncated in float64 is exactly that
// rounding for these magnitudes.
func quantizeGeneric(q []int8, scales []float32, x []float32) {
	for g := range scales {
		block := x[g*GroupSize : (g+1)*GroupSize]
		var amax float32
		for _, v := range block {
			if v < 0 {
				v = -v
			}
			amax = max(amax, v)
		}
		scale := amax / 127
		scales[g] = scale
		inv := float32(0)
		if scale != 0 {
			inv = 1 / scale
		}
		out := q[g*GroupSize : (g+1)*GroupSize]
		for i, v := range block {
			y := float64(v * inv)
			if y >= 0 {
				out[i] = int8(y + 0.5)
			} else {
				out[i] = int8(y - 0.5)
			}
		}
	}
}

// softmaxGeneric sets x to softmax(scale·x), subtracting the max for
// stability.
func softmaxGeneric(x []float32, scale float32) {
	for i := range x {
		x[i] *= scale
	}
	maxVal := x[0]
	for _, v := range x[1:] {
		maxVal = max(maxVal, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - maxVal)))
		x[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
}

// swiGLUGeneric sets hb = silu(hb) ⊙ hb2.
func swiGLUGeneric(hb, hb2 []float32) {
	hb2 = hb2[:len(hb)]
	for i, v := range hb {
		hb[i] = v / (1 + float32(math.Exp(float64(-v)))) * hb2[i]
	}
}

// broadcastCodes sets dst to codes, each four repeated eight times (32
// bytes per four), so a tile kernel (tiles_simd.go) loads the four it
// needs in every row's lanes with one load.
func broadcastCodes(dst, codes []int8) {
	for u := range len(codes) / 4 {
		four := *(*uint32)(unsafe.Pointer(&codes[4*u]))
		words := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[32*u])), 8)
		for i := range words {
			words[i] = four
		}
	}
}
