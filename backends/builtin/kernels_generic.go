package builtin

import "math"

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

// weightedSumGeneric adds Σ_t weights[t]·v[t*stride : t*stride+len(out)]
// to out, attention's mix of cached values (a block of positions at a
// time: attendHeads).
func weightedSumGeneric(out, weights, v []float32, stride int) {
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

// matMatQ8 is matVecQ8Generic for every vector of xs: a Q8_0 matrix
// without tiles (the portable build, or a CPU without AVX2; with AVX2
// every Q8_0 matrix is tiles, see withTiles), and the portable build's
// IQ4_NL level rows.
func matMatQ8(outs [][]float32, m *Matrix, xs []*quantized, lo, hi int) {
	for s := range xs {
		matVecQ8Generic(outs[s], m, xs[s], lo, hi)
	}
}

// matVecQ8Generic computes out[r] = Σ_groups scale_w·scale_x·Σ q_w·q_x for rows
// [lo, hi), with integer sums inside each group of 32: word products
// (swar.go, q8Octets) of u = q_w + 128 against the activations split in
// two, Σ u·l + 16·Σ u·h, less 128·Σ q_x. No u·l is negative and two
// octets gain at most 16·255·15 < 2^16 in lane 3, so they are read
// unsigned; |u·h| ≤ 255·8, so two octets gain at most 16·255·8 < 2^15.
// Rows go in pairs, which share each load of the activations (an odd
// last row is paired with itself).
func matVecQ8Generic(out []float32, m *Matrix, x *quantized, lo, hi int) {
	groups := m.Cols / GroupSize
	for r := lo; r < hi; r += 2 {
		r2 := min(r+1, hi-1)
		scalesA, a := m.groupRow(r)
		scalesB, b := m.groupRow(r2)
		scalesA, scalesB = scalesA[:groups], scalesB[:groups]
		var sumA, sumB float32
		for g := range groups {
			va, vb := (*[GroupSize]byte)(a[g*GroupSize:]), (*[GroupSize]byte)(b[g*GroupSize:])
			y := (*[16]uint64)(x.split[16*g:])
			lowA, highA, lowB, highB := q8Octets(word(va[0:8]), word(vb[0:8]), (*[4]uint64)(y[0:4]))
			lowA2, highA2, lowB2, highB2 := q8Octets(word(va[8:16]), word(vb[8:16]), (*[4]uint64)(y[4:8]))
			dotA := unsignedLane3(lowA+lowA2) + 16*lane3(highA+highA2)
			dotB := unsignedLane3(lowB+lowB2) + 16*lane3(highB+highB2)
			lowA, highA, lowB, highB = q8Octets(word(va[16:24]), word(vb[16:24]), (*[4]uint64)(y[8:12]))
			lowA2, highA2, lowB2, highB2 = q8Octets(word(va[24:32]), word(vb[24:32]), (*[4]uint64)(y[12:16]))
			dotA += unsignedLane3(lowA+lowA2) + 16*lane3(highA+highA2)
			dotB += unsignedLane3(lowB+lowB2) + 16*lane3(highB+highB2)
			offset, scale := 128*x.isums[g], x.scales[g]
			sumA += float32(dotA-offset) * scalesA[g] * scale
			sumB += float32(dotB-offset) * scalesB[g] * scale
		}
		out[r], out[r2] = sumA, sumB
	}
}

// matVecBlocksGeneric computes rows [lo, hi) of a matrix stored as the
// GGUF's blocks against Q8_0 activations: its format's dot over each
// row's blocks.
func matVecBlocksGeneric(out []float32, m *Matrix, x *quantized, lo, hi int) {
	dot := formats[m.format].dot
	for r := lo; r < hi; r++ {
		out[r] = dot(m.quantRow(r), x, 0)
	}
}

// superBlocks sums a K-quant's block product over a row's blocks (from
// group g0 on): a call per 256 weights costs little.
func superBlocks(blockBytes int, dot func(b []byte, x *quantized, g0 int) float32) func([]byte, *quantized, int) float32 {
	return func(blocks []byte, x *quantized, g0 int) float32 {
		var sum float32
		for g := g0; len(blocks) >= blockBytes; g += superBlock / GroupSize {
			sum += dot(blocks[:blockBytes], x, g)
			blocks = blocks[blockBytes:]
		}
		return sum
	}
}

// q4KDot is one Q4_K block's product with Q8_K activations d_x·y
// (block sb). Group j is d·s_j·q − dmin·m_j, so the product is
// d_x·(d·Σ_j s_j·Σ q·y − dmin·Σ_j m_j·Σ y): integers until the last
// step, as ggml sums it. That step is written out in each kernel that
// takes it (Q2_K, Q4_K, Q5_K): as a function it is too big to inline
// (cost 112 of 80), and a call a block made no kernel faster in
// PortableAgainstF32 and left Q5_K, with the least margin over f32, at
// 0.94–1.03 by turns.
// Groups 2c and 2c+1 are the low and high nibbles of the same 32 bytes,
// so the two are unpacked together. A nibble octet gains at most
// 8·15·127 in lane 3, so two octets a read.
func q4KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	scales, mins := q4KScalesMins(b[4:16])
	ys, sums := kBlock(x, sb)
	var dot, minDot int32
	for c := range superBlock / GroupSize / 2 {
		nib := (*[32]byte)(b[16+32*c:])
		y, y2 := (*[8]uint64)(ys[16*c:]), (*[8]uint64)(ys[16*c+8:])
		w := word(nib[0:8])
		e, o := fields(w, 0, nibbleMask)
		e2, o2 := fields(w, 4, nibbleMask)
		first, first2 := e*y[0]+o*y[1], e2*y2[0]+o2*y2[1]
		w = word(nib[8:16])
		e, o = fields(w, 0, nibbleMask)
		e2, o2 = fields(w, 4, nibbleMask)
		first, first2 = first+e*y[2]+o*y[3], first2+e2*y2[2]+o2*y2[3]
		w = word(nib[16:24])
		e, o = fields(w, 0, nibbleMask)
		e2, o2 = fields(w, 4, nibbleMask)
		second, second2 := e*y[4]+o*y[5], e2*y2[4]+o2*y2[5]
		w = word(nib[24:32])
		e, o = fields(w, 0, nibbleMask)
		e2, o2 = fields(w, 4, nibbleMask)
		second, second2 = second+e*y[6]+o*y[7], second2+e2*y2[6]+o2*y2[7]
		dot += int32(scales[2*c])*(lane3(first)+lane3(second)) + int32(scales[2*c+1])*(lane3(first2)+lane3(second2))
		minDot += int32(mins[2*c])*groupSum(sums, 2*c) + int32(mins[2*c+1])*groupSum(sums, 2*c+1)
	}
	return x.kscales[sb] * (f16ToF32(le16(b))*float32(dot) - f16ToF32(le16(b[2:]))*float32(minDot))
}

// q5KDot is q4KDot with each weight's fifth bit (bit j of byte l of the
// block's high bits, for group j's weight l). Groups 2c and 2c+1 share
// their bytes of nibbles (low and high) and of high bits (bits 2c and
// 2c+1), so the two are unpacked together, each word into one code a
// byte. Codes less 16 gain at most 8·16·127 in lane 3 an octet, two
// octets a read, and the 16·Σ y taken off comes back from the group's sum.
func q5KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	scales, mins := q4KScalesMins(b[4:16])
	high := (*[32]byte)(b[16:48])
	h0, h1, h2, h3 := word(high[0:8]), word(high[8:16]), word(high[16:24]), word(high[24:32])
	ys, sums := kBlock(x, sb)
	var dot, minDot int32
	for c := range superBlock / GroupSize / 2 {
		nib := (*[32]byte)(b[48+32*c:])
		shift := uint(2 * c)
		y, y2 := (*[8]uint64)(ys[16*c:]), (*[8]uint64)(ys[16*c+8:])
		a, a2 := q5KCodes(word(nib[0:8]), h0>>shift)
		first, first2 := byteCodes(a, 16, y[0:2]), byteCodes(a2, 16, y2[0:2])
		a, a2 = q5KCodes(word(nib[8:16]), h1>>shift)
		first, first2 = first+byteCodes(a, 16, y[2:4]), first2+byteCodes(a2, 16, y2[2:4])
		a, a2 = q5KCodes(word(nib[16:24]), h2>>shift)
		second, second2 := byteCodes(a, 16, y[4:6]), byteCodes(a2, 16, y2[4:6])
		a, a2 = q5KCodes(word(nib[24:32]), h3>>shift)
		second, second2 = second+byteCodes(a, 16, y[6:8]), second2+byteCodes(a2, 16, y2[6:8])
		sum, sum2 := groupSum(sums, 2*c), groupSum(sums, 2*c+1)
		dot += int32(scales[2*c])*(lane3(first)+lane3(second)+16*sum) +
			int32(scales[2*c+1])*(lane3(first2)+lane3(second2)+16*sum2)
		minDot += int32(mins[2*c])*sum + int32(mins[2*c+1])*sum2
	}
	return x.kscales[sb] * (f16ToF32(le16(b))*float32(dot) - f16ToF32(le16(b[2:]))*float32(minDot))
}

// q5KCodes is the codes of groups 2c and 2c+1 in a word of their nibbles
// and a word of their high bits (shifted down by 2c), a byte each.
func q5KCodes(nibbles, high uint64) (codes, codes2 uint64) {
	const lows, fifths = 0x0f0f_0f0f_0f0f_0f0f, 0x1010_1010_1010_1010
	return nibbles&lows | high<<4&fifths, nibbles>>4&lows | high<<3&fifths
}

// kBlock is Q8_K block sb of x: its codes spread (64 words) and the sums
// of each 16.
func kBlock(x *quantized, sb int) (*[64]uint64, *[16]int16) {
	return (*[64]uint64)(x.kspread[64*sb:]), (*[16]int16)(x.ksums[16*sb:])
}

// groupSum is Σ y over group j (32 activations) of a Q8_K block.
func groupSum(sums *[16]int16, j int) int32 {
	return int32(sums[2*j]) + int32(sums[2*j+1])
}

// q6KDot is one Q6_K block's product with Q8_K activations: per run of
// 16, Σ (q−32)·y times the run's scale, summed in integers, then
// d·d_x. Groups k and k+2 of a half share their bytes of low nibbles
// (low and high) and of bit pairs (bits 2k and 2k+4), so the two are
// unpacked together, each word into its codes a byte apiece before the
// bytes are spread into lanes. Codes within ±32 gain up to 8·32·127 in
// lane 3 an octet, so each octet is read on its own.
func q6KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	scales := (*[16]byte)(b[192:208])
	ys, _ := kBlock(x, sb)
	var dot int32
	for h := range 2 {
		qh := (*[32]byte)(b[128+h*32:])
		for k := range 2 {
			ql := (*[32]byte)(b[h*64+k*32:])
			highShift := uint(2 * k)
			y, y2 := (*[8]uint64)(ys[32*h+8*k:]), (*[8]uint64)(ys[32*h+8*k+16:])
			c, c2 := q6KCodes(word(ql[0:8]), word(qh[0:8])>>highShift)
			run0, run2 := lane3(byteCodes(c, 32, y[0:2])), lane3(byteCodes(c2, 32, y2[0:2]))
			c, c2 = q6KCodes(word(ql[8:16]), word(qh[8:16])>>highShift)
			run0, run2 = run0+lane3(byteCodes(c, 32, y[2:4])), run2+lane3(byteCodes(c2, 32, y2[2:4]))
			c, c2 = q6KCodes(word(ql[16:24]), word(qh[16:24])>>highShift)
			run1, run3 := lane3(byteCodes(c, 32, y[4:6])), lane3(byteCodes(c2, 32, y2[4:6]))
			c, c2 = q6KCodes(word(ql[24:32]), word(qh[24:32])>>highShift)
			run1, run3 = run1+lane3(byteCodes(c, 32, y[6:8])), run3+lane3(byteCodes(c2, 32, y2[6:8]))
			s := 8*h + 2*k
			dot += int32(int8(scales[s]))*run0 + int32(int8(scales[s+1]))*run1 +
				int32(int8(scales[s+4]))*run2 + int32(int8(scales[s+5]))*run3
		}
	}
	return x.kscales[sb] * f16ToF32(le16(b[208:])) * float32(dot)
}

// q6KCodes is the codes of groups k and k+2 in a word of their low
// nibbles and a word of their bit pairs (shifted down by 2k), a byte
// each.
func q6KCodes(low, high uint64) (codes, codes2 uint64) {
	const nibbles, pairs = 0x0f0f_0f0f_0f0f_0f0f, 0x3030_3030_3030_3030
	return low&nibbles | high<<4&pairs, low>>4&nibbles | high&pairs
}

// Q2_K and Q3_K keep a run's two-bit codes (see twoBits) in bits 2j of
// 16 bytes of half n of qs: run s = 8n + 2j + 0 in bytes 0–15, run s + 1
// in bytes 16–31.

// q2KDot is one Q2_K block's product with Q8_K activations, as llama.cpp
// pairs them: run s is d·scale_s·q − dmin·min_s, so the product is
// d_x·(d·Σ_s scale_s·Σ q·y − dmin·Σ_s min_s·Σ y), integers until the
// last step, Σ y being Q8_K's sum of each 16. Two-bit codes gain at most
// 16·3·127 in lane 3 a run.
func q2KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	packed := (*[16]byte)(b[0:16])
	ys, sums := kBlock(x, sb)
	var dot, minDot int32
	for n := range 2 {
		qs := (*[32]byte)(b[16+32*n:])
		q0, q1, q2, q3 := word(qs[0:8]), word(qs[8:16]), word(qs[16:24]), word(qs[24:32])
		for j := range 4 {
			shift, s := uint(2*j), 8*n+2*j
			y := (*[8]uint64)(ys[4*s:])
			e0, o0 := fields(q0, shift, pairMask)
			e1, o1 := fields(q1, shift, pairMask)
			e2, o2 := fields(q2, shift, pairMask)
			e3, o3 := fields(q3, shift, pairMask)
			run0, run1 := lane3(e0*y[0]+o0*y[1]+e1*y[2]+o1*y[3]), lane3(e2*y[4]+o2*y[5]+e3*y[6]+o3*y[7])
			dot += int32(packed[s]&0x0f)*run0 + int32(packed[s+1]&0x0f)*run1
			minDot += int32(packed[s]>>4)*int32(sums[s]) + int32(packed[s+1]>>4)*int32(sums[s+1])
		}
	}
	return x.kscales[sb] * (f16ToF32(le16(b[80:]))*float32(dot) - f16ToF32(le16(b[82:]))*float32(minDot))
}

// q3KDot is one Q3_K block's product with Q8_K activations, as
// llama.cpp pairs them: a weight is its two low bits, plus 4 with its
// high bit, less 4 (the high bit of run s's weight l is bit 4n + j of
// hmask byte l, or 16 + l for the second run of the pair); per run of 16,
// Σ q·y times the run's scale, summed in integers, then d·d_x. Each word
// is unpacked into one code a byte before the bytes are spread into
// lanes; codes within ±4 gain at most 16·4·127 in lane 3 a run.
func q3KDot(b []byte, x *quantized, g0 int) float32 {
	sb := g0 / (superBlock / GroupSize)
	scales := q3KScales((*[12]byte)(b[96:108]))
	hmask := (*[32]byte)(b[0:32])
	m0, m1, m2, m3 := word(hmask[0:8]), word(hmask[8:16]), word(hmask[16:24]), word(hmask[24:32])
	const pairs, highs = 0x0303_0303_0303_0303, 0x0404_0404_0404_0404
	ys, _ := kBlock(x, sb)
	var dot int32
	for n := range 2 {
		qs := (*[32]byte)(b[32+32*n:])
		q0, q1, q2, q3 := word(qs[0:8]), word(qs[8:16]), word(qs[16:24]), word(qs[24:32])
		for j := range 4 {
			shift, bit, s := uint(2*j), uint(4*n+j), 8*n+2*j
			y := (*[8]uint64)(ys[4*s:])
			run0 := byteCodes(q0>>shift&pairs|m0>>bit<<2&highs, 4, y[0:2]) +
				byteCodes(q1>>shift&pairs|m1>>bit<<2&highs, 4, y[2:4])
			run1 := byteCodes(q2>>shift&pairs|m2>>bit<<2&highs, 4, y[4:6]) +
				byteCodes(q3>>shift&pairs|m3>>bit<<2&highs, 4, y[6:8])
			dot += int32(int8(scales[s]))*lane3(run0) + int32(int8(scales[s+1]))*lane3(run1)
		}
	}
	return x.kscales[sb] * f16ToF32(le16(b[108:])) * float32(dot)
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

// quantizeGeneric fills q and scales with the Q8_0 form of x as
// llama-quantize makes it (ggml's quantize_row_q8_0_ref): per group of
// 32, scale = max|v|/127, kept rounded to a half as a block keeps it, and
// q = v·(1/scale) rounded halves away from zero, like C's round, with the
// scale before its rounding. y±0.5 truncated in float64 is exactly that
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
		scales[g] = f16ToF32(f32ToF16(scale))
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

// quantizeActivationsGeneric fills q and scales with the Q8_0 form of a
// matrix product's input as ggml makes it on x86 (quantize_row_q8_0):
// q = v·(127/max|v|) rounded to nearest even, and the scale max|v|/127
// rounded to a half, as ggml stores it. llama.cpp's Q8_0 logits differed
// from the engine's by 0.2–0.4 where the scale stayed float32.
func quantizeActivationsGeneric(q []int8, scales []float32, x []float32) {
	for g := range scales {
		block := x[g*GroupSize : (g+1)*GroupSize]
		var amax float32
		for _, v := range block {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		scales[g] = math.Float32frombits(halfRoundedBits(math.Float32bits(amax / 127)))
		inv := float32(0)
		if amax != 0 {
			inv = 127 / amax
		}
		out := q[g*GroupSize : (g+1)*GroupSize]
		for i, v := range block {
			out[i] = int8(math.RoundToEven(float64(v * inv)))
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

// dotRowsHalfGeneric is dotRowsGeneric over rows of halves, each widened
// into scratch (cols floats) first.
func dotRowsHalfGeneric(out []float32, w []uint16, x []float32, lo, hi, cols, stride int, scratch []float32) {
	row := scratch[:cols]
	for r := lo; r < hi; r++ {
		widenHalves(row, w[r*stride:r*stride+cols])
		out[r] = dotGeneric(row, x)
	}
}

// weightedSumHalfGeneric is weightedSumGeneric over rows of halves, each
// widened into scratch (len(out) floats) first.
func weightedSumHalfGeneric(out, weights []float32, v []uint16, stride int, scratch []float32) {
	row := scratch[:len(out)]
	for t, a := range weights {
		widenHalves(row, v[t*stride:t*stride+len(out)])
		axpyGeneric(out, a, row)
	}
}

// roundToBFloat16Generic sets rounded to x rounded to bfloat16 (as
// floats) and pairs to the same values two to a word, the even column's
// in the upper half: VDPBF16PS adds a word's upper product first, so a kernel through
// it sums each row's columns in order, as every other kernel does. A BF16
// file's products read their activations so rounded on every CPU, as
// llama.cpp's do (its BF16 products take bfloat16 activations), and the
// weight's and the value's product is then exact in a float: the sums are
// the same with VDPBF16PS or without it. An odd length's last pair holds
// a zero in its lower half.
func roundToBFloat16Generic(rounded []float32, pairs []uint32, x []float32) {
	for i, v := range x {
		rounded[i] = math.Float32frombits(uint32(bfloat16Bits(v)) << 16)
	}
	for p := range pairs {
		pairs[p] = math.Float32bits(rounded[2*p])
		if 2*p+1 < len(x) {
			pairs[p] |= math.Float32bits(rounded[2*p+1]) >> 16
		}
	}
}

// storeHalvesGeneric sets dst[i] = src[i] rounded to a half.
func storeHalvesGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f32ToF16(v)
	}
}

// widenHalves sets dst[i] = the half src[i] as a float.
func widenHalves(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = f16ToF32(h)
	}
}

// roundToHalvesGeneric rounds each of x to a half, in place.
func roundToHalvesGeneric(x []float32) {
	for i, v := range x {
		x[i] = f16ToF32(f32ToF16(v))
	}
}
