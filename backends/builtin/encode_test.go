package builtin

import (
	"encoding/binary"
	"math"
)

// The tests' encoders for the formats beyond Q8_0, Q4_0, Q4_K and Q6_K
// (quantize_test.go), written from ggml's block layouts independently of
// the engine's decoders, so a decoder that reads a bit from the wrong
// place brings a weight back far from where it was. Like the other test
// quantizers they pick scales by a simple rule (rounded up, so no weight
// clamps) rather than llama-quantize's search.

// spanOf is the smallest and largest of x, with 0 inside the span.
func spanOf(x []float32) (lo, hi float32) {
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// codeOf is round(v/step) clamped to [lo, hi], 0 for a zero step.
func codeOf(v, step float32, lo, hi int) int {
	if step == 0 {
		return 0
	}
	return int(min(float64(hi), max(float64(lo), math.Round(float64(v/step)))))
}

// putNibbles stores 32 four-bit codes, weight i in byte i%16's low (i <
// 16) or high nibble, and their fifth bits (if qh is not nil) as a
// little-endian uint32.
func putNibbles(qs, qh []byte, codes [GroupSize]int) {
	var high uint32
	for i, c := range codes {
		qs[i%16] |= byte(c&0x0f) << (4 * (i / 16))
		high |= uint32(c>>4&1) << i
	}
	if qh != nil {
		binary.LittleEndian.PutUint32(qh, high)
	}
}

// encodeMinBlock writes a block with a min (Q4_1, Q5_1): m at or below
// the smallest weight, d covering the span in levels−1 steps.
func encodeMinBlock(b []byte, x []float32, levels int, qh, qs []byte) {
	lo, hi := spanOf(x)
	mBits := f16Up(-lo) | 0x8000 // the largest half at or below lo ≤ 0
	m := f16ToF32(mBits)
	dBits := f16Up((hi - m) / float32(levels-1))
	d := f16ToF32(dBits)
	binary.LittleEndian.PutUint16(b, dBits)
	binary.LittleEndian.PutUint16(b[2:], mBits)
	var codes [GroupSize]int
	for i, v := range x {
		codes[i] = codeOf(v-m, d, 0, levels-1)
	}
	putNibbles(qs, qh, codes)
}

func encodeQ4_1(b []byte, x []float32) { clear(b); encodeMinBlock(b, x, 16, nil, b[4:20]) }
func encodeQ5_1(b []byte, x []float32) { clear(b); encodeMinBlock(b, x, 32, b[4:8], b[8:24]) }

// encodeQ4_0 and encodeQ5_0 follow ggml's rule: the weight of largest
// magnitude maps to the most negative code, −8 or −16.
func encodeQ4_0(b []byte, x []float32) { encodeSymmetric(b, x, 8, nil, b[2:18]) }
func encodeQ5_0(b []byte, x []float32) { encodeSymmetric(b, x, 16, b[2:6], b[6:22]) }

func encodeSymmetric(b []byte, x []float32, half int, qh, qs []byte) {
	clear(b)
	var extreme float32
	for _, v := range x {
		if math.Abs(float64(v)) > math.Abs(float64(extreme)) {
			extreme = v
		}
	}
	dBits := f32ToF16(extreme / float32(-half))
	d := f16ToF32(dBits)
	binary.LittleEndian.PutUint16(b, dBits)
	var codes [GroupSize]int
	for i, v := range x {
		codes[i] = codeOf(v, d, -half, half-1) + half
	}
	putNibbles(qs, qh, codes)
}

// encodeIQ4NL scales the block so that its largest magnitude meets the
// table's end of the same sign, and takes each weight's nearest level.
func encodeIQ4NL(b []byte, x []float32) {
	clear(b)
	var extreme float32
	for _, v := range x {
		if math.Abs(float64(v)) > math.Abs(float64(extreme)) {
			extreme = v
		}
	}
	end := float32(iq4NLLevels[15])
	if extreme < 0 {
		end = float32(iq4NLLevels[0])
	}
	dBits := f32ToF16(extreme / end)
	d := f16ToF32(dBits)
	binary.LittleEndian.PutUint16(b, dBits)
	var codes [GroupSize]int
	for i, v := range x {
		best := math.Inf(1)
		for c, level := range iq4NLLevels {
			if e := math.Abs(float64(v - d*float32(level))); e < best {
				best, codes[i] = e, c
			}
		}
	}
	putNibbles(b[2:18], nil, codes)
}

// putTwoBits stores 256 two-bit codes in 64 bytes: weight i at bits 2j of
// byte 32n + l (n = i/128, j = i%128/32, l = i%32), as ggml's Q2_K and
// Q3_K lay them out.
func putTwoBits(qs []byte, codes []int) {
	for i, c := range codes {
		qs[i/128*32+i%32] |= byte(c&3) << (2 * (i % 128 / 32))
	}
}

// encodeQ2K gives each run of 16 a min at or below its smallest weight
// (a multiple of dmin) and a scale (a multiple of d) covering the rest of
// its span in 3 steps.
func encodeQ2K(b []byte, x []float32) {
	clear(b)
	const runs = superBlock / 16
	var lo, hi [runs]float32
	var maxNegLo float32
	for s := range runs {
		lo[s], hi[s] = spanOf(x[s*16 : (s+1)*16])
		maxNegLo = max(maxNegLo, -lo[s])
	}
	dminBits := f16Up(maxNegLo / 15)
	dmin := f16ToF32(dminBits)
	var mins [runs]int
	var step [runs]float32
	var maxStep float32
	for s := range runs {
		if dmin > 0 {
			mins[s] = int(min(15, math.Ceil(float64(-lo[s]/dmin))))
		}
		step[s] = (hi[s] + dmin*float32(mins[s])) / 3
		maxStep = max(maxStep, step[s])
	}
	dBits := f16Up(maxStep / 15)
	d := f16ToF32(dBits)
	binary.LittleEndian.PutUint16(b[80:], dBits)
	binary.LittleEndian.PutUint16(b[82:], dminBits)
	codes := make([]int, superBlock)
	for s := range runs {
		var sc int
		if d > 0 {
			sc = int(min(15, math.Ceil(float64(step[s]/d))))
		}
		b[s] = byte(sc | mins[s]<<4)
		for i, v := range x[s*16 : (s+1)*16] {
			codes[s*16+i] = codeOf(v+dmin*float32(mins[s]), d*float32(sc), 0, 3)
		}
	}
	putTwoBits(b[16:80], codes)
}

// encodeQ3K gives each run of 16 the smallest scale, rounded up to a
// multiple of d (stored as scale + 32 in six bits), that puts its codes
// in −4…3.
func encodeQ3K(b []byte, x []float32) {
	clear(b)
	const runs = superBlock / 16
	var step [runs]float32
	var maxStep float32
	for s := range runs {
		for _, v := range x[s*16 : (s+1)*16] {
			step[s] = max(step[s], v/3, -v/4)
		}
		maxStep = max(maxStep, step[s])
	}
	dBits := f16Up(maxStep / 31)
	d := f16ToF32(dBits)
	binary.LittleEndian.PutUint16(b[108:], dBits)
	codes := make([]int, superBlock)
	packed := b[96:108]
	for s := range runs {
		var sc int
		if d > 0 {
			sc = int(min(31, math.Ceil(float64(step[s]/d))))
		}
		stored := sc + 32
		packed[s%8] |= byte(stored&0x0f) << (4 * (s / 8))
		packed[8+s%4] |= byte(stored>>4) << (2 * (s / 4))
		for i, v := range x[s*16 : (s+1)*16] {
			u := codeOf(v, d*float32(sc), -4, 3) + 4
			codes[s*16+i] = u
			if u >= 4 { // the high bit set means no −4
				b[i+s%2*16] |= 1 << (4*(s/8) + s%8/2)
			}
		}
	}
	putTwoBits(b[32:96], codes)
}

// encodeQ5K is encodeQ4K's rule with 31 steps, the fifth bits in bytes
// 16–47.
func encodeQ5K(b []byte, x []float32) {
	encodeScaledMinBlock(b, x, 31, func(j, i, q int) {
		b[48+j/2*32+i] |= byte(q&0x0f) << (4 * (j & 1))
		b[16+i] |= byte(q>>4) << j
	})
}
