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

// The masks of a field in every lane, constants so that they stay
// immediates in the kernels.
const (
	everyLane  = 0x0001_0001_0001_0001
	nibbleMask = 0x0f * everyLane
	pairMask   = 0x03 * everyLane
)

// spreadOctets sets s to codes q as the products read them: for each 8
// codes, the even ones, then the odd ones, each word four codes reversed
// into signed 16-bit lanes (the first in lane 3).
func spreadOctets(s []uint64, q []int8) {
	s = s[:len(q)/4]
	for o := range len(q) / 8 {
		c := q[8*o : 8*o+8 : 8*o+8]
		s[2*o] = reversedLanes(int64(c[0]), int64(c[2]), int64(c[4]), int64(c[6]))
		s[2*o+1] = reversedLanes(int64(c[1]), int64(c[3]), int64(c[5]), int64(c[7]))
	}
}

// reversedLanes is a, b, c, d in signed 16-bit lanes 3, 2, 1, 0: their
// sum as an integer, a·2^48 + b·2^32 + c·2^16 + d.
func reversedLanes(a, b, c, d int64) uint64 { return uint64(a<<48 + b<<32 + c<<16 + d) }

// spreadSplit sets s to codes q split as q = 16·h + l (l of 0…15, h of
// −8…7), each half spread as spreadOctets spreads codes, four words an
// octet: the even codes' l and h, then the odd codes'. The portable Q8_0
// kernel's products read them, where a whole int8 times an int8 could
// reach past lane 3's bound.
func spreadSplit(s []uint64, q []int8) {
	s = s[:len(q)/2]
	for o := range len(q) / 8 {
		c := q[8*o : 8*o+8 : 8*o+8]
		var l, h [8]int64
		for i, v := range c {
			l[i], h[i] = int64(v&15), int64(v>>4)
		}
		s[4*o], s[4*o+1] = reversedLanes(l[0], l[2], l[4], l[6]), reversedLanes(h[0], h[2], h[4], h[6])
		s[4*o+2], s[4*o+3] = reversedLanes(l[1], l[3], l[5], l[7]), reversedLanes(h[1], h[3], h[5], h[7])
	}
}

// q8Octets is two rows' word products over an octet of Q8_0 weights
// (words a and b) and its split activations y: per row, Σ u·l and Σ u·h
// for u = w + 128, the weight's byte with its sign bit flipped, which
// unpacks with a mask and a shift where a signed byte also takes a
// sign extension.
func q8Octets(a, b uint64, y *[4]uint64) (lowA, highA, lowB, highB uint64) {
	const signBits, byteMask = 0x80 * 0x0101_0101_0101_0101, 0xff * everyLane
	a, b = a^signBits, b^signBits
	evenA, oddA, evenB, oddB := a&byteMask, a>>8&byteMask, b&byteMask, b>>8&byteMask
	return evenA*y[0] + oddA*y[2], evenA*y[1] + oddA*y[3], evenB*y[0] + oddB*y[2], evenB*y[1] + oddB*y[3]
}

// lane3 is the dot product in lane 3 of a sum of products, rounded so
// that negative partial sums below it do not borrow from it.
func lane3(acc uint64) int32 { return int32(int64(acc+1<<47) >> 48) }

// unsignedLane3 is lane3 for a sum of products none of which is
// negative: exact while every lane stays below 2^16, twice lane3's bound,
// and one instruction.
func unsignedLane3(acc uint64) int32 { return int32(acc >> 48) }

// word is 8 bytes of b, little-endian: byte i in bits 8i…8i+7.
func word(b []byte) uint64 { return binary.LittleEndian.Uint64(b[:8]) }

// byteCodes is the products of 8 codes c, one a byte, less bias each,
// with an octet's two spread words: the sum lane3 reads.
func byteCodes(c, bias uint64, y []uint64) uint64 {
	const byteMask = 0xff * everyLane
	return (c&byteMask-bias*everyLane)*y[0] + (c>>8&byteMask-bias*everyLane)*y[1]
}

// fields is 8 bytes' fields (v >> shift & mask in each byte, mask one
// of the lane masks): the even bytes', then the odd bytes', as weights in
// 16-bit lanes. Callers multiply them by an octet's two spread words.
func fields(v uint64, shift uint, mask uint64) (even, odd uint64) {
	return v >> shift & mask, v >> (shift + 8) & mask
}

// group is the spread activations of group g (32 weights): four octets.
func group(spread []uint64, g int) *[8]uint64 {
	return (*[8]uint64)(spread[8*g : 8*g+8])
}
