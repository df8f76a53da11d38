package builtin

// ggml's K-quant super-blocks, which a Q4_K_M file holds (Q4_K for most
// matrices, Q6_K for some). The engine keeps them exactly as the GGUF
// stores them and decodes a block's scales as it multiplies.
//
// Q4_K, 144 bytes per 256 weights: d and dmin (f16), 12 bytes packing
// eight 6-bit scales and eight 6-bit mins, then 128 bytes of nibbles.
// Group j (32 weights) is d·scale_j·q − dmin·min_j; groups 2c and 2c+1
// are the low and high nibbles of bytes 32c…32c+31.
//
// Q6_K, 210 bytes per 256 weights: 128 bytes of low nibbles, 64 bytes of
// high 2-bit pairs, 16 int8 scales (one per 16 weights), then d (f16).
// A weight is d·scale·(q − 32), q six bits.
const (
	q4KBlockBytes = 144
	q6KBlockBytes = 210
)

// q4KScaleMin unpacks group j's 6-bit scale and min: groups 0–3 keep
// theirs in the low 6 bits of bytes j and j+4; groups 4–7 have 4 bits in
// byte j+4 and their top 2 bits in the spare bits of bytes j−4 and j.
func q4KScaleMin(j int, packed []byte) (scale, min uint8) {
	if j < 4 {
		return packed[j] & 63, packed[j+4] & 63
	}
	return packed[j+4]&0x0f | packed[j-4]>>6<<4, packed[j+4]>>4 | packed[j]>>6<<4
}

// q4KNibbles is group j's 32 packed bytes in a Q4_K block's values, and
// the shift that selects its nibble.
func q4KNibbles(qs []byte, j int) ([]byte, uint) {
	return qs[j/2*32 : j/2*32+32], uint(4 * (j & 1))
}

// dequantQ4K decodes one Q4_K block into 256 weights.
func dequantQ4K(out []float32, b []byte) {
	d, dmin := f16ToF32(le16(b)), f16ToF32(le16(b[2:]))
	for j := range superBlock / GroupSize {
		sc, mn := q4KScaleMin(j, b[4:16])
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
