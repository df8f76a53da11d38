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

// Each dot reads its block's codes a word at a time (swar.go).

// fifthBits[v] is the fifth bits of 8 weights (bit k of v is weight k's)
// as 16 or 0 in 16-bit lanes: the even weights', then the odd weights'.
var fifthBits = func() (t [256][2]uint64) {
	for v := range t {
		for k := range 4 {
			t[v][0] |= uint64(v>>(2*k)&1) << (16*k + 4)
			t[v][1] |= uint64(v>>(2*k+1)&1) << (16*k + 4)
		}
	}
	return t
}()

// blockOctets is the products of a 32-weight block's codes (its 16 bytes
// of nibbles, bit i of high the fifth bit of weight i), less bias, with
// their activations spread as s: one sum per octet of weights.
func blockOctets(nib []byte, high uint32, bias uint64, s []uint64) (p0, p1, p2, p3 uint64) {
	s = s[:8]
	lo, hi := word(nib), word(nib[8:16])
	f0, f1, f2, f3 := &fifthBits[high&0xff], &fifthBits[high>>8&0xff], &fifthBits[high>>16&0xff], &fifthBits[high>>24]
	e, o := fields(lo, 0, nibbleMask, 0)
	p0 = octet(e+f0[0]-bias, o+f0[1]-bias, s[0:2])
	e, o = fields(hi, 0, nibbleMask, 0)
	p1 = octet(e+f1[0]-bias, o+f1[1]-bias, s[2:4])
	e, o = fields(lo, 4, nibbleMask, 0)
	p2 = octet(e+f2[0]-bias, o+f2[1]-bias, s[4:6])
	e, o = fields(hi, 4, nibbleMask, 0)
	p3 = octet(e+f3[0]-bias, o+f3[1]-bias, s[6:8])
	return
}

// Each dot below is the product of a row's consecutive blocks (from
// group g0 on), one loop per format: a call per 32 weights cost a fifth
// of the time.

// q4_0Dot: codes less 8 gain at most 8·8·127 in lane 3 an octet, so one
// read serves a block.
func q4_0Dot(blocks []byte, x *quantized, g0 int) float32 {
	bias := lanes16(8)
	var sum float32
	for g := g0; len(blocks) >= q4_0BlockBytes; g++ {
		b := blocks[:q4_0BlockBytes]
		p0, p1, p2, p3 := blockOctets(b[2:18], 0, bias, x.spread[8*g:])
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(lane3(p0+p1+p2+p3))
		blocks = blocks[q4_0BlockBytes:]
	}
	return sum
}

// q4_1Dot: a weight is d·q + m, so the group's product is
// d·scale_x·Σ q·q_x + m·(the group's sum of x). Codes to 15 gain at most
// 8·15·127 an octet: two octets a read.
func q4_1Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q4_1BlockBytes; g++ {
		b := blocks[:q4_1BlockBytes]
		p0, p1, p2, p3 := blockOctets(b[4:20], 0, 0, x.spread[8*g:])
		sum += f16ToF32(le16(b))*x.scales[g]*float32(lane3(p0+p1)+lane3(p2+p3)) + f16ToF32(le16(b[2:]))*x.sums[g]
		blocks = blocks[q4_1BlockBytes:]
	}
	return sum
}

// q5_0Dot: codes less 16, two octets a read as Q4_1's.
func q5_0Dot(blocks []byte, x *quantized, g0 int) float32 {
	bias := lanes16(16)
	var sum float32
	for g := g0; len(blocks) >= q5_0BlockBytes; g++ {
		b := blocks[:q5_0BlockBytes]
		p0, p1, p2, p3 := blockOctets(b[6:22], binary.LittleEndian.Uint32(b[2:]), bias, x.spread[8*g:])
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(lane3(p0+p1)+lane3(p2+p3))
		blocks = blocks[q5_0BlockBytes:]
	}
	return sum
}

// q5_1Dot: codes to 31 gain up to 8·31·127 an octet: one octet a read.
func q5_1Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q5_1BlockBytes; g++ {
		b := blocks[:q5_1BlockBytes]
		p0, p1, p2, p3 := blockOctets(b[8:24], binary.LittleEndian.Uint32(b[4:]), 0, x.spread[8*g:])
		dot := lane3(p0) + lane3(p1) + lane3(p2) + lane3(p3)
		sum += f16ToF32(le16(b))*x.scales[g]*float32(dot) + f16ToF32(le16(b[2:]))*x.sums[g]
		blocks = blocks[q5_1BlockBytes:]
	}
	return sum
}

// iq4NLDot looks each nibble's level up and takes a plain integer dot.
func iq4NLDot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= iq4NLBlockBytes; g++ {
		b := blocks[:iq4NLBlockBytes]
		var c [GroupSize]int8
		for i, v := range b[2:18] {
			c[i], c[i+16] = iq4NLLevels[v&15], iq4NLLevels[v>>4]
		}
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(dot8s(c[:], group32(x.q, g)))
		blocks = blocks[iq4NLBlockBytes:]
	}
	return sum
}
