package builtin

import "encoding/binary"

// ggml's K-quant super-blocks, which llama-quantize's K presets write
// (a Q4_K_M file: Q4_K for most matrices, Q6_K for some). The engine
// keeps them exactly as the GGUF stores them and decodes a block's scales
// as it multiplies.
//
// Q2_K, 84 bytes per 256 weights: 16 bytes each packing a run of 16's
// 4-bit scale (low) and 4-bit min (high), 64 bytes of 2-bit codes, then d
// and dmin (f16). A weight is d·scale·q − dmin·min.
//
// Q3_K, 110 bytes per 256 weights: 32 bytes of high bits, 64 bytes of
// 2-bit codes, 12 bytes packing sixteen 6-bit scales, then d (f16). A
// weight is d·(scale − 32)·(q − 4), q three bits.
//
// In both, weight i's two low bits are bits 2j of byte 32n + l of the
// codes, for n = i/128, j = i%128/32, l = i%32; Q3_K's high bit is bit
// 4n + j of byte l of the high bits; each run of 16 has its own scale.
//
// Q4_K, 144 bytes per 256 weights: d and dmin (f16), 12 bytes packing
// eight 6-bit scales and eight 6-bit mins, then 128 bytes of nibbles.
// Group j (32 weights) is d·scale_j·q − dmin·min_j; groups 2c and 2c+1
// are the low and high nibbles of bytes 32c…32c+31.
//
// Q5_K, 176 bytes per 256 weights: as Q4_K, with 32 bytes of fifth bits
// before the nibbles: group j's weight l has its high bit in bit j of
// byte l.
//
// Q6_K, 210 bytes per 256 weights: 128 bytes of low nibbles, 64 bytes of
// high 2-bit pairs, 16 int8 scales (one per 16 weights), then d (f16).
// A weight is d·scale·(q − 32), q six bits.
const (
	q2KBlockBytes = 84
	q3KBlockBytes = 110
	q4KBlockBytes = 144
	q5KBlockBytes = 176
	q6KBlockBytes = 210
)

// twoBits is weight i's two low bits in 64 bytes of 2-bit codes (Q2_K,
// Q3_K).
func twoBits(qs []byte, i int) int32 {
	return int32(qs[i/128*32+i%32] >> (2 * (i % 128 / 32)) & 3)
}

// q2KCode is weight i of a Q2_K block, and its run's scale and min.
func q2KCode(b []byte, i int) (q int32, scale, min int32) {
	packed := b[i/16]
	return twoBits(b[16:80], i), int32(packed & 0x0f), int32(packed >> 4)
}

func dequantQ2K(out []float32, b []byte) {
	d, dmin := f16ToF32(le16(b[80:])), f16ToF32(le16(b[82:]))
	for i := range superBlock {
		q, sc, mn := q2KCode(b, i)
		out[i] = d*float32(sc*q) - dmin*float32(mn)
	}
}

// q3KValue is weight i of a Q3_K block: q − 4, the high bit set meaning
// no −4.
func q3KValue(b []byte, i int) int32 {
	high := int32(b[i%32] >> (4*(i/128) + i%128/32) & 1)
	return twoBits(b[32:96], i) - 4 + 4*high
}

// q3KScales unpacks a Q3_K block's sixteen 6-bit run scales, eight to a
// word: run s's low four bits are a nibble of byte s%8 (low for s < 8,
// high after), its top two the bit pair 2(s/4) of byte 8+s%4; each less
// 32, int8s as bytes.
func q3KScales(packed *[12]byte) (scales [16]byte) {
	const nibbles, pairs = 0x0f0f_0f0f_0f0f_0f0f, 0x0303_0303
	low, high := word(packed[0:8]), uint64(binary.LittleEndian.Uint32(packed[8:12]))
	first := low&nibbles | (high&pairs|high>>2&pairs<<32)<<4
	second := low>>4&nibbles | (high>>4&pairs|high>>6&pairs<<32)<<4
	// Each byte less 32 without a borrow between bytes: its top bit set
	// first, and flipped back after.
	const top, bias = 0x8080_8080_8080_8080, 0x2020_2020_2020_2020
	binary.LittleEndian.PutUint64(scales[0:8], (first|top)-bias^top)
	binary.LittleEndian.PutUint64(scales[8:16], (second|top)-bias^top)
	return scales
}

func dequantQ3K(out []float32, b []byte) {
	d, scales := f16ToF32(le16(b[108:])), q3KScales((*[12]byte)(b[96:108]))
	for i := range superBlock {
		out[i] = d * float32(int32(int8(scales[i/16]))*q3KValue(b, i))
	}
}

// q5KValue is weight l of group j of a Q5_K block: its nibble and fifth
// bit.
func q5KValue(b []byte, j, l int) int32 {
	nib, shift := q4KNibbles(b[48:q5KBlockBytes], j)
	return int32(nib[l]>>shift&0x0f) | int32(b[16+l]>>j&1)<<4
}

func dequantQ5K(out []float32, b []byte) {
	d, dmin := f16ToF32(le16(b)), f16ToF32(le16(b[2:]))
	scales, mins := q4KScalesMins(b[4:16])
	for j, sc := range scales {
		mn := mins[j]
		for l := range GroupSize {
			out[j*GroupSize+l] = d*float32(sc)*float32(q5KValue(b, j, l)) - dmin*float32(mn)
		}
	}
}

// q4KScalesMins unpacks a Q4_K or Q5_K block's eight 6-bit group scales
// and mins, four to a word: groups 0–3 keep theirs in the low 6 bits of
// bytes j and j+4; groups 4–7 have 4 bits in byte j+4 (scale low, min
// high) and their top 2 bits in the spare bits of bytes j−4 and j.
func q4KScalesMins(packed []byte) (scales, mins [8]uint8) {
	p := (*[12]byte)(packed)
	s, m, lowHigh := binary.LittleEndian.Uint32(p[0:4]), binary.LittleEndian.Uint32(p[4:8]), binary.LittleEndian.Uint32(p[8:12])
	const six, four, two = 0x3f3f_3f3f, 0x0f0f_0f0f, 0x0303_0303
	binary.LittleEndian.PutUint32(scales[0:4], s&six)
	binary.LittleEndian.PutUint32(scales[4:8], lowHigh&four|s>>6&two<<4)
	binary.LittleEndian.PutUint32(mins[0:4], m&six)
	binary.LittleEndian.PutUint32(mins[4:8], lowHigh>>4&four|m>>6&two<<4)
	return scales, mins
}

// q4KNibbles is group j's 32 packed bytes in a Q4_K block's values, and
// the shift that selects its nibble.
func q4KNibbles(qs []byte, j int) ([]byte, uint) {
	return qs[j/2*32 : j/2*32+32], uint(4 * (j & 1))
}

// dequantQ4K decodes one Q4_K block into 256 weights.
func dequantQ4K(out []float32, b []byte) {
	d, dmin := f16ToF32(le16(b)), f16ToF32(le16(b[2:]))
	scales, mins := q4KScalesMins(b[4:16])
	for j, sc := range scales {
		mn := mins[j]
		nib, shift := q4KNibbles(b[16:q4KBlockBytes], j)
		scale, offset := d*float32(sc), dmin*float32(mn)
		for i, v := range nib {
			out[j*GroupSize+i] = scale*float32(v>>shift&0x0f) - offset
		}
	}
}

// q6KValue is weight i of group k (32 weights) of 128-weight half h of a
// Q6_K block, minus 32: the group's low nibbles come from ql (the first
// or second 32 bytes of the half, low or high nibble) and its top two bits
// from qh (bit pair k of the half's 32 bytes).
func q6KValue(b []byte, h, k, i int) int32 {
	lo := b[h*64+(k&1)*32+i] >> (4 * (k >> 1)) & 0x0f
	hi := b[128+h*32+i] >> (2 * k) & 3
	return int32(lo|hi<<4) - 32
}

// q6KScale is the int8 scale of weights 16s…16s+15 of a Q6_K block, in
// the order q6KValue walks them: half h, group k, weight i has s =
// 8h + 2k + i/16.
func q6KScale(b []byte, s int) float32 { return float32(int8(b[192+s])) }

// dequantQ6K decodes one Q6_K block into 256 weights.
func dequantQ6K(out []float32, b []byte) {
	d := f16ToF32(le16(b[208:]))
	for h := range 2 {
		for k := range 4 {
			for i := range GroupSize {
				out[h*128+k*32+i] = d * q6KScale(b, 8*h+2*k+i/16) * float32(q6KValue(b, h, k, i))
			}
		}
	}
}
