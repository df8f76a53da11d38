package builtin

import "encoding/binary"

// The portable kernels' integer dot products, four multiply-adds in one
// 64-bit multiply (SIMD within a register). Weights w0…w3 sit in the four
// 16-bit lanes of one word, W = Σ w_k·2^(16k); four activations sit in
// another, reversed, X = Σ y_k·2^(16(3−k)). In W·X the terms of 2^48 are
// exactly Σ w_k·y_k: lane 3 of the product holds the dot product, the
// lanes below it partial sums, and everything from 2^64 up falls away.
// Signed values compose the same way (each word is its lanes' sum as an
// integer), so lane3 reads lane 3 with rounding, exact while it stays
// within ±2^15 and each lane below it too: the bound each caller states
// for its codes, which limits how many products it sums before a read.
//
// Weights come out of packed bytes a word at a time: from 8 bytes, the
// fields of the even bytes land in the lanes with one shift and one mask,
// the odd bytes' with another (fields). So activations are spread to
// match: per 8 codes, one word of the even ones and one of the odd ones
// (spreadOctets), once per activation vector.
//
// Plain loops spend a load, an extension, a multiply and an add on every
// weight; this spends a multiply and an add on four, plus the unpacking.

// lanes16 is m in every 16-bit lane.
func lanes16(m uint64) uint64 { return m * 0x0001_0001_0001_0001 }

var (
	nibbleMask = lanes16(0x0f)
	pairMask   = lanes16(0x03)
	bitMask    = lanes16(0x01)
)

// spreadOctets sets s to codes q as the products read them: for each 8
// codes, the even ones, then the odd ones, each word four codes reversed
// into signed 16-bit lanes (the first in lane 3).
func spreadOctets(s []uint64, q []int8) {
	s = s[:len(q)/4]
	for o := range len(q) / 8 {
		c := q[8*o : 8*o+8 : 8*o+8]
		s[2*o] = uint64(int64(c[0])<<48 + int64(c[2])<<32 + int64(c[4])<<16 + int64(c[6]))
		s[2*o+1] = uint64(int64(c[1])<<48 + int64(c[3])<<32 + int64(c[5])<<16 + int64(c[7]))
	}
}

// lane3 is the dot product in lane 3 of a sum of products, rounded so
// that negative partial sums below it do not borrow from it.
func lane3(acc uint64) int32 { return int32(int64(acc+1<<47) >> 48) }

// word is 8 bytes of b, little-endian: byte i in bits 8i…8i+7.
func word(b []byte) uint64 { return binary.LittleEndian.Uint64(b[:8]) }

// fields is 8 bytes' fields (v >> shift & mask in each byte, mask one of
// the lanes16 masks), each less bias: the even bytes', then the odd
// bytes', as weights in 16-bit lanes.
func fields(v uint64, shift uint, mask, bias uint64) (even, odd uint64) {
	return v>>shift&mask - bias, v>>(shift+8)&mask - bias
}

// octet is the sum of the products of even and odd weights (fields) with
// an octet of spread activations s. Lane 3 gains at most 8·f·127 for
// weights within ±f.
func octet(even, odd uint64, s []uint64) uint64 {
	s = s[:2]
	return even*s[0] + odd*s[1]
}

// nibbleOctets is the products of 32 nibbles, 16 bytes of ggml's 32-weight
// blocks (weight i < 16 in byte i's low nibble, i + 16 in its high one),
// less bias, with their activations spread as s (four octets).
func nibbleOctets(nib []byte, bias uint64, s []uint64) (low, high uint64) {
	s = s[:8]
	lo, hi := word(nib), word(nib[8:16])
	e0, o0 := fields(lo, 0, nibbleMask, bias)
	e1, o1 := fields(hi, 0, nibbleMask, bias)
	e2, o2 := fields(lo, 4, nibbleMask, bias)
	e3, o3 := fields(hi, 4, nibbleMask, bias)
	return octet(e0, o0, s[0:2]) + octet(e1, o1, s[2:4]), octet(e2, o2, s[4:6]) + octet(e3, o3, s[6:8])
}

// groupOctets is the products of 32 weights whose fields sit in 32
// consecutive bytes (weight i in byte i, v >> shift & mask) with their
// activations spread as s, in two sums of 16.
func groupOctets(b []byte, shift uint, mask, bias uint64, s []uint64) (first, second uint64) {
	s = s[:8]
	e0, o0 := fields(word(b[0:8]), shift, mask, bias)
	e1, o1 := fields(word(b[8:16]), shift, mask, bias)
	e2, o2 := fields(word(b[16:24]), shift, mask, bias)
	e3, o3 := fields(word(b[24:32]), shift, mask, bias)
	return octet(e0, o0, s[0:2]) + octet(e1, o1, s[2:4]), octet(e2, o2, s[4:6]) + octet(e3, o3, s[6:8])
}
