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

// The dots of the 32-weight formats: per block, d·scale_x·Σ q·q_x, plus
// m·(the group's sum of x) for a format with a min (w = d·q + m). Each
// format has a loop of its own, its block a fixed-size array, so that
// offsets are constants and bounds are checked once a block (one loop
// over a layout's offsets ran 12% slower in a scratch benchmark). Q4_0's
// and Q5_0's codes are less their offset, so lane 3 stays in bounds two
// octets a read: codes within ±16 gain at most 8·16·127 an octet.

func q4_0Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q4_0BlockBytes; g++ {
		b := (*[q4_0BlockBytes]byte)(blocks)
		lo, hi, y := word(b[2:10]), word(b[10:18]), group(x.spread, g)
		first := nibbleOctet(lo, 0, 8, y[0:2]) + nibbleOctet(hi, 0, 8, y[2:4])
		second := nibbleOctet(lo, 4, 8, y[4:6]) + nibbleOctet(hi, 4, 8, y[6:8])
		sum += f16ToF32(le16(b[0:2])) * x.scales[g] * float32(lane3(first)+lane3(second))
		blocks = blocks[q4_0BlockBytes:]
	}
	return sum
}

// q4_1Dot: codes 0…15 gain at most 16·15·127 in two octets unbiased.
func q4_1Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q4_1BlockBytes; g++ {
		b := (*[q4_1BlockBytes]byte)(blocks)
		lo, hi, y := word(b[4:12]), word(b[12:20]), group(x.spread, g)
		first := nibbleOctet(lo, 0, 0, y[0:2]) + nibbleOctet(hi, 0, 0, y[2:4])
		second := nibbleOctet(lo, 4, 0, y[4:6]) + nibbleOctet(hi, 4, 0, y[6:8])
		sum += f16ToF32(le16(b[0:2]))*x.scales[g]*float32(lane3(first)+lane3(second)) + f16ToF32(le16(b[2:4]))*x.sums[g]
		blocks = blocks[q4_1BlockBytes:]
	}
	return sum
}

func q5_0Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q5_0BlockBytes; g++ {
		b := (*[q5_0BlockBytes]byte)(blocks)
		high, y := binary.LittleEndian.Uint32(b[2:6]), group(x.spread, g)
		lo, hi := word(b[6:14]), word(b[14:22])
		first := fiveBitOctet(lo, 0, high, 16, y[0:2]) + fiveBitOctet(hi, 0, high>>8, 16, y[2:4])
		second := fiveBitOctet(lo, 4, high>>16, 16, y[4:6]) + fiveBitOctet(hi, 4, high>>24, 16, y[6:8])
		sum += f16ToF32(le16(b[0:2])) * x.scales[g] * float32(lane3(first)+lane3(second))
		blocks = blocks[q5_0BlockBytes:]
	}
	return sum
}

// q5_1Dot: codes 0…31 gain at most 8·31·127 an octet unbiased, so each
// octet is read on its own.
func q5_1Dot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= q5_1BlockBytes; g++ {
		b := (*[q5_1BlockBytes]byte)(blocks)
		high, y := binary.LittleEndian.Uint32(b[4:8]), group(x.spread, g)
		lo, hi := word(b[8:16]), word(b[16:24])
		dot := lane3(fiveBitOctet(lo, 0, high, 0, y[0:2])) + lane3(fiveBitOctet(hi, 0, high>>8, 0, y[2:4])) +
			lane3(fiveBitOctet(lo, 4, high>>16, 0, y[4:6])) + lane3(fiveBitOctet(hi, 4, high>>24, 0, y[6:8]))
		sum += f16ToF32(le16(b[0:2]))*x.scales[g]*float32(dot) + f16ToF32(le16(b[2:4]))*x.sums[g]
		blocks = blocks[q5_1BlockBytes:]
	}
	return sum
}

// nibbleOctet is the products of an octet's nibbles (those at shift in
// each byte of w), less bias each, with its two spread words.
func nibbleOctet(w uint64, shift uint, bias uint64, y []uint64) uint64 {
	e, o := fields(w, shift, nibbleMask)
	return (e-bias*everyLane)*y[0] + (o-bias*everyLane)*y[1]
}

// fiveBitOctet is nibbleOctet with each code's fifth bit (the low byte
// of high, bit k for code k).
func fiveBitOctet(w uint64, shift uint, high uint32, bias uint64, y []uint64) uint64 {
	f := &fifthBits[high&0xff]
	e, o := fields(w, shift, nibbleMask)
	return (e+f[0]-bias*everyLane)*y[0] + (o+f[1]-bias*everyLane)*y[1]
}

// iq4NLLevelsOf is an IQ4_NL block's 32 codes looked up in the table of
// levels.
func iq4NLLevelsOf(b []byte) (levels [GroupSize]int8) {
	for i, v := range b[2:iq4NLBlockBytes] {
		levels[i], levels[i+16] = iq4NLLevels[v&15], iq4NLLevels[v>>4]
	}
	return levels
}

// iq4NLDot looks each nibble's level up and takes a plain integer dot.
func iq4NLDot(blocks []byte, x *quantized, g0 int) float32 {
	var sum float32
	for g := g0; len(blocks) >= iq4NLBlockBytes; g++ {
		b := blocks[:iq4NLBlockBytes]
		c := iq4NLLevelsOf(b)
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(dot8s(c[:], group32(x.q, g)))
		blocks = blocks[iq4NLBlockBytes:]
	}
	return sum
}

// iq4NLLevelRows is IQ4_NL matrix m as a Q8_0 matrix of the same
// weights: each block's d as its group's scale, its codes' levels as the
// group's values.
func iq4NLLevelRows(m *Matrix) *Matrix {
	q8 := newQuantMatrix(formatQ8_0, m.Rows, m.Cols)
	for r := range m.Rows {
		blocks := m.quantRow(r)
		scales, values := q8.q8Row(r)
		for g := range scales {
			b := blocks[g*iq4NLBlockBytes : (g+1)*iq4NLBlockBytes]
			scales[g] = f16ToF32(le16(b))
			levels := iq4NLLevelsOf(b)
			copy(values[g*GroupSize:], levels[:])
		}
	}
	return q8
}
