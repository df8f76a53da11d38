package builtin

import "encoding/binary"

// ggml's 32-weight blocks but Q8_0, which llama-quantize writes for its
// Q4_0, Q4_1, Q5_0 and Q5_1 presets and as fallbacks for rows that
// K-quants cannot hold (Q5_0 for Q4_K, Q5_1 for Q5_K, IQ4_NL for Q2_K and
// Q3_K). The engine keeps them as the GGUF stores them.
//
// Q4_0, 18 bytes: d (f16), 16 bytes of nibbles; w = d·(q − 8).
// Q4_1, 20 bytes: d and m (f16), 16 bytes of nibbles; w = d·q + m.
// Q5_0, 22 bytes: d (f16), 32 high bits (a little-endian uint32), 16
// bytes of nibbles; w = d·(q − 16), q five bits.
// Q5_1, 24 bytes: d and m (f16), the 32 high bits, 16 bytes of nibbles;
// w = d·q + m.
// IQ4_NL, 18 bytes: d (f16), 16 bytes of nibbles that index a fixed table
// of 16 levels; w = d·level[q].
// In each, weight i < 16 is byte i's low nibble, weight i + 16 its high
// one, and bit i of the high bits belongs to weight i.
const (
	q4_0BlockBytes  = 18
	q4_1BlockBytes  = 20
	q5_0BlockBytes  = 22
	q5_1BlockBytes  = 24
	iq4NLBlockBytes = 18
)

// iq4NLLevels is IQ4_NL's table, ggml's kvalues_iq4nl.
var iq4NLLevels = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// nibble is weight i (0…31) of a block's 16 bytes of nibbles.
func nibble(qs []byte, i int) int32 { return int32(qs[i&15] >> (4 * (i >> 4)) & 0x0f) }

// fifthBit is weight i's high bit, as 16 or 0.
func fifthBit(qh []byte, i int) int32 {
	return int32(binary.LittleEndian.Uint32(qh)>>i&1) << 4
}

func decodeQ4_0(out []float32, b []byte) {
	d := f16ToF32(le16(b))
	for i := range GroupSize {
		out[i] = d * float32(nibble(b[2:], i)-8)
	}
}

func decodeQ4_1(out []float32, b []byte) {
	d, m := f16ToF32(le16(b)), f16ToF32(le16(b[2:]))
	for i := range GroupSize {
		out[i] = d*float32(nibble(b[4:], i)) + m
	}
}

func decodeQ5_0(out []float32, b []byte) {
	d := f16ToF32(le16(b))
	for i := range GroupSize {
		out[i] = d * float32(nibble(b[6:], i)|fifthBit(b[2:], i)-16)
	}
}

func decodeQ5_1(out []float32, b []byte) {
	d, m := f16ToF32(le16(b)), f16ToF32(le16(b[2:]))
	for i := range GroupSize {
		out[i] = d*float32(nibble(b[8:], i)|fifthBit(b[4:], i)) + m
	}
}

func decodeIQ4NL(out []float32, b []byte) {
	d := f16ToF32(le16(b))
	for i := range GroupSize {
		out[i] = d * float32(iq4NLLevels[nibble(b[2:], i)])
	}
}

// The dots below put a group's codes into an int8 array with a plain
// loop and take dot8s of it: a code function called per weight cost
// several times the multiply-add.

// groupDot is Σ codes[i]·q_x over group g's 32 activations, in integers.
func groupDot(x *quantized, g int, codes *[GroupSize]int8) int32 {
	return dot8s(codes[:], group32(x.q, g))
}

// nibbleCodes is a block's 32 nibbles (low, then high) as codes, each
// with bit i of high as its fifth bit (high 0 for none), plus bias.
func nibbleCodes(qs []byte, high uint32, bias int8) *[GroupSize]int8 {
	var c [GroupSize]int8
	qs = qs[:16]
	for i, b := range qs {
		c[i] = int8(b&15|byte(high>>i&1)<<4) + bias
		c[i+16] = int8(b>>4|byte(high>>(i+16)&1)<<4) + bias
	}
	return &c
}

func q4_0Dot(b []byte, x *quantized, g int) float32 {
	return f16ToF32(le16(b)) * x.scales[g] * float32(nibbleDot((*[16]byte)(b[2:]), (*[GroupSize]int8)(group32(x.q, g))))
}

// q4_1Dot: a weight is d·q + m, so the group's product is
// d·scale_x·Σ q·q_x + m·(the group's sum of x).
func q4_1Dot(b []byte, x *quantized, g int) float32 {
	dot := groupDot(x, g, nibbleCodes(b[4:], 0, 0))
	return f16ToF32(le16(b))*x.scales[g]*float32(dot) + f16ToF32(le16(b[2:]))*x.sums[g]
}

func q5_0Dot(b []byte, x *quantized, g int) float32 {
	dot := groupDot(x, g, nibbleCodes(b[6:], binary.LittleEndian.Uint32(b[2:]), -16))
	return f16ToF32(le16(b)) * x.scales[g] * float32(dot)
}

func q5_1Dot(b []byte, x *quantized, g int) float32 {
	dot := groupDot(x, g, nibbleCodes(b[8:], binary.LittleEndian.Uint32(b[4:]), 0))
	return f16ToF32(le16(b))*x.scales[g]*float32(dot) + f16ToF32(le16(b[2:]))*x.sums[g]
}

func iq4NLDot(b []byte, x *quantized, g int) float32 {
	c := nibbleCodes(b[2:], 0, 0)
	for i, n := range c {
		c[i] = iq4NLLevels[n]
	}
	return f16ToF32(le16(b)) * x.scales[g] * float32(groupDot(x, g, c))
}
