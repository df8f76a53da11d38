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

// nibbleLayout is where a 32-weight format keeps its parts, and how its
// codes are read: d at 0, then m (withMin), the 32 fifth bits at high (0
// for none), the 16 bytes of nibbles at nib.
type nibbleLayout struct {
	bytes, nib, high int
	withMin          bool
	// bias is taken off every code so that lane 3 stays in bounds two
	// octets a read: codes within ±16 gain at most 8·16·127 an octet.
	// Codes of signed formats are less their offset anyway; unsigned
	// five-bit codes (Q5_1) get the bias·Σ y back (restore).
	bias    uint64
	restore bool
}

var (
	q4_0Layout = nibbleLayout{bytes: q4_0BlockBytes, nib: 2, bias: 8}
	q4_1Layout = nibbleLayout{bytes: q4_1BlockBytes, nib: 4, withMin: true}
	q5_0Layout = nibbleLayout{bytes: q5_0BlockBytes, nib: 6, high: 2, bias: 16}
	q5_1Layout = nibbleLayout{bytes: q5_1BlockBytes, nib: 8, high: 4, withMin: true, bias: 16, restore: true}
)

// nibbleBlocks is the dot of a 32-weight format: per block, d·scale_x·Σ
// q·q_x, plus m·(the group's sum of x) for a format with a min (w = d·q
// + m). Four-bit and five-bit formats have a loop each, every octet
// written out: a call per block (32 weights) cost a fifth of the time,
// and adding zero fifth bits to four-bit codes another.
func nibbleBlocks(l nibbleLayout) func([]byte, *quantized, int) float32 {
	if l.high == 0 {
		return func(blocks []byte, x *quantized, g0 int) float32 { return fourBitBlocksDot(blocks, x, g0, &l) }
	}
	return func(blocks []byte, x *quantized, g0 int) float32 { return fiveBitBlocksDot(blocks, x, g0, &l) }
}

func fourBitBlocksDot(blocks []byte, x *quantized, g0 int, l *nibbleLayout) float32 {
	bias := l.bias * everyLane
	var sum float32
	for g := g0; len(blocks) >= l.bytes; g++ {
		b := blocks[:l.bytes]
		nib := (*[16]byte)(b[l.nib:])
		lo, hi := word(nib[0:8]), word(nib[8:16])
		y := (*[8]uint64)(x.spread[8*g:])
		e, o := fields(lo, 0, nibbleMask)
		first := (e-bias)*y[0] + (o-bias)*y[1]
		e, o = fields(hi, 0, nibbleMask)
		first += (e-bias)*y[2] + (o-bias)*y[3]
		e, o = fields(lo, 4, nibbleMask)
		second := (e-bias)*y[4] + (o-bias)*y[5]
		e, o = fields(hi, 4, nibbleMask)
		second += (e-bias)*y[6] + (o-bias)*y[7]
		dot := lane3(first) + lane3(second)
		if l.restore {
			dot += int32(l.bias) * x.isums[g]
		}
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(dot)
		if l.withMin {
			sum += f16ToF32(le16(b[2:])) * x.sums[g]
		}
		blocks = blocks[l.bytes:]
	}
	return sum
}

func fiveBitBlocksDot(blocks []byte, x *quantized, g0 int, l *nibbleLayout) float32 {
	bias := l.bias * everyLane
	var sum float32
	for g := g0; len(blocks) >= l.bytes; g++ {
		b := blocks[:l.bytes]
		high := binary.LittleEndian.Uint32(b[l.high:])
		nib := (*[16]byte)(b[l.nib:])
		lo, hi := word(nib[0:8]), word(nib[8:16])
		y := (*[8]uint64)(x.spread[8*g:])
		f := &fifthBits[high&0xff]
		e, o := fields(lo, 0, nibbleMask)
		first := (e+f[0]-bias)*y[0] + (o+f[1]-bias)*y[1]
		f = &fifthBits[high>>8&0xff]
		e, o = fields(hi, 0, nibbleMask)
		first += (e+f[0]-bias)*y[2] + (o+f[1]-bias)*y[3]
		f = &fifthBits[high>>16&0xff]
		e, o = fields(lo, 4, nibbleMask)
		second := (e+f[0]-bias)*y[4] + (o+f[1]-bias)*y[5]
		f = &fifthBits[high>>24]
		e, o = fields(hi, 4, nibbleMask)
		second += (e+f[0]-bias)*y[6] + (o+f[1]-bias)*y[7]
		dot := lane3(first) + lane3(second)
		if l.restore {
			dot += int32(l.bias) * x.isums[g]
		}
		sum += f16ToF32(le16(b)) * x.scales[g] * float32(dot)
		if l.withMin {
			sum += f16ToF32(le16(b[2:])) * x.sums[g]
		}
		blocks = blocks[l.bytes:]
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
