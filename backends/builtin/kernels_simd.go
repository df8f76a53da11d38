//go:build goexperiment.simd && amd64

package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"simd/archsimd"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The AVX2+FMA kernels, through Go's experimental simd/archsimd. Each ends
// with ClearAVXUpperBits: scalar float code compiles to SSE, which runs
// 3-30x slower while the upper halves of the vector registers are dirty.
// Inner loops load through pointers into rows whose bounds were checked
// once: slicing per load cost a bounds check and index masking on every
// vector and spilled the row slices to the stack.
//
// Sums leave the vector unit through a store to a local array; ragged tails
// (a row length that is not a multiple of 8) are finished in scalar code
// after the clear. archsimd's *SlicePart helpers are not used: they view a
// short slice as a full vector, which the race detector's checkptr rejects.

// haveAVX2 is whether the SIMD kernels run: AVX2 and FMA, and F16C, whose
// VCVTPH2PS turns the halves the tiles keep (their blocks' d) into floats
// (every CPU with AVX2 so far has it; archsimd does not report it).
var haveAVX2 = archsimd.X86.AVX2() && archsimd.X86.FMA() && cpu.X86.HasF16C

// haveVNNI is whether Q4_K's tiles are compact and every format's tile
// kernels take their VNNI twins (gemm_amd64.s), whose VPDPBUSD needs
// AVX512_VNNI and AVX512VL (with AVX-512's F, CD, BW and DQ, as archsimd
// bundles them); GODEBUG=cpu.avx512f=off turns it off with AVX-512.
var haveVNNI = haveAVX2 && archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI()

// f32TileGroup is how many f32 tiles matMatF32's kernel takes at once:
// four where AVX-512 gives it 32 vector registers (f32Tiles4x6), else two
// (f32Tiles2x6). Four ran a Llama-3.2-1B-shaped f32 pp64 4–6% faster on
// one thread than two, by turns (BenchmarkGGUFFile, Zen 4).
var f32TileGroup = func() int {
	if haveAVX2 && archsimd.X86.AVX512() {
		return 4
	}
	return 2
}()

// portableQ8 is whether Q8_0 products run the portable kernel.
var portableQ8 = !haveAVX2

// KernelName says which kernels this build computes with.
var KernelName = func() string {
	switch {
	case haveVNNI:
		return "AVX2+FMA and AVX-512 VNNI (simd/archsimd)"
	case haveAVX2:
		return "AVX2+FMA (simd/archsimd)"
	}
	return "portable Go (this CPU lacks AVX2/FMA)"
}()

// dotRows sets out[r] = w[r*stride : r*stride+cols]·x for rows [lo, hi):
// attention's scores over cached keys, whose rows (a head's width) are
// short. dotFloatRows takes them all in one call, in assembly: in Go, with
// a call for each row's loop and one for each four rows' horizontal sums,
// a layer's attention took a third longer (BenchmarkAttention, 39–45
// against 30–32 µs at position 255). A width that is not whole vectors
// (no model's head has one) goes the portable way.
func dotRows(out, w, x []float32, lo, hi, cols, stride int) {
	if !haveAVX2 || cols%8 != 0 || lo >= hi {
		dotRowsGeneric(out, w, x, lo, hi, cols, stride)
		return
	}
	_ = w[(hi-1)*stride+cols-1] // every row read below is in bounds
	_ = out[lo:hi]
	dotFloatRows(unsafe.Pointer(&out[lo]), unsafe.Pointer(&w[lo*stride]), 4*stride, hi-lo, cols, unsafe.Pointer(&x[:cols][0]))
}

// weightedSum adds Σ_t weights[t]·row t to out as weightedSumGeneric does,
// keeping out's lanes in registers across every t instead of an axpy call
// per cached position: eight chunks of eight lanes at a time, so each pass
// over the cached values reads 256 of every row's bytes in one stream,
// then four chunks, then single ones for what is left (weightedSumFloats,
// in assembly, as its twin over halves is).
func weightedSum(out, weights, v []float32, stride int) {
	n := len(out)
	if !haveAVX2 || n%8 != 0 || len(weights) == 0 {
		weightedSumGeneric(out, weights, v, stride)
		return
	}
	_ = v[(len(weights)-1)*stride+n-1] // every row read below is in bounds
	weightedSumFloats(unsafe.Pointer(&out[0]), unsafe.Pointer(&weights[0]), len(weights), unsafe.Pointer(&v[0]), n, 4*stride)
}

// dotRowsHalf is dotRows over rows of halves (a cache of halves' keys):
// dotHalfRows does dotFloatRows' arithmetic on each half widened as it
// is loaded, so the scores are dotRows' of the widened rows bit for bit.
// scratch (cols floats) serves the portable kernel, for a ragged width.
func dotRowsHalf(out []float32, w []uint16, x []float32, lo, hi, cols, stride int, scratch []float32) {
	if !haveAVX2 || cols%8 != 0 || lo >= hi {
		dotRowsHalfGeneric(out, w, x, lo, hi, cols, stride, scratch)
		return
	}
	_ = w[(hi-1)*stride+cols-1] // every row read below is in bounds
	_ = out[lo:hi]
	dotHalfRows(unsafe.Pointer(&out[lo]), unsafe.Pointer(&w[lo*stride]), 2*stride, hi-lo, cols, unsafe.Pointer(&x[:cols][0]))
}

// weightedSumHalf is weightedSum over rows of halves (a cache of halves'
// values), in weightedSum's order on each half widened as it is loaded:
// bit for bit weightedSum's over the widened rows.
func weightedSumHalf(out, weights []float32, v []uint16, stride int, scratch []float32) {
	n := len(out)
	if !haveAVX2 || n%8 != 0 || len(weights) == 0 {
		weightedSumHalfGeneric(out, weights, v, stride, scratch)
		return
	}
	_ = v[(len(weights)-1)*stride+n-1] // every row read below is in bounds
	weightedSumHalves(unsafe.Pointer(&out[0]), unsafe.Pointer(&weights[0]), len(weights), unsafe.Pointer(&v[0]), n, 2*stride)
}

// storeHalves sets dst[i] = src[i] rounded to a half, eight at a time by
// VCVTPS2PH (f32ToF16's rounding, to nearest even).
func storeHalves(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	whole := len(src) &^ 7
	if !haveAVX2 || whole == 0 {
		storeHalvesGeneric(dst, src)
		return
	}
	storeHalvesAVX2(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), whole)
	storeHalvesGeneric(dst[whole:], src[whole:])
}

// roundToBFloat16 is roundToBFloat16Generic, eight values at a time by
// AVX2 where the CPU has it: scalar, it was a sixth of a one-thread BF16
// prompt's time against VDPBF16PS's products (stories110M pp64, profile).
func roundToBFloat16(rounded []float32, pairs []uint32, x []float32) {
	whole := len(x) &^ 7
	if !haveAVX2 || whole == 0 {
		roundToBFloat16Generic(rounded, pairs, x)
		return
	}
	roundToBFloat16AVX2(unsafe.Pointer(&rounded[:len(x)][0]), unsafe.Pointer(&pairs[:whole/2][0]), unsafe.Pointer(&x[0]), whole)
	roundToBFloat16Generic(rounded[whole:len(x)], pairs[whole/2:], x[whole:])
}

// roundToHalves rounds each of x to a half, in place.
func roundToHalves(x []float32) {
	whole := len(x) &^ 7
	if !haveAVX2 || whole == 0 {
		roundToHalvesGeneric(x)
		return
	}
	roundToHalvesAVX2(unsafe.Pointer(&x[0]), whole)
	roundToHalvesGeneric(x[whole:])
}

//go:noescape
func roundToHalvesAVX2(x unsafe.Pointer, n int)

//go:noescape
func dotFloatRows(out, rows unsafe.Pointer, stride, n, cols int, x unsafe.Pointer)

//go:noescape
func dotHalfRows(out, rows unsafe.Pointer, stride, n, cols int, x unsafe.Pointer)

//go:noescape
func weightedSumFloats(out, weights unsafe.Pointer, n int, values unsafe.Pointer, cols, stride int)

//go:noescape
func weightedSumHalves(out, weights unsafe.Pointer, n int, values unsafe.Pointer, cols, stride int)

//go:noescape
func storeHalvesAVX2(dst, src unsafe.Pointer, n int)

//go:noescape
func roundToBFloat16AVX2(rounded, pairs, x unsafe.Pointer, n int)

// matVecF32 sets out[r] = row r · x for rows [lo, hi): through the tiles
// the loader lays every f32 matrix out as where the CPU has AVX2
// (f32tiles.go; tilesVec), else with the portable loop. The tiles (or
// groups of half tiles) wholly in [lo, hi) go in one call, straight into
// out, and one an end of the span cuts through alone.
func matVecF32(out []float32, m *Matrix, x []float32, lo, hi int) {
	if m.tiles == nil {
		matVecF32Generic(out, m, x, lo, hi)
		return
	}
	height := m.unitRows()                        // the rows of one of tilesVec's units
	first, end := (lo+height-1)/height, hi/height // the tiles (groups) inside
	if first < end {
		m.tilesVec(first, end-first, unsafe.Pointer(&x[:m.Cols][0]), unsafe.Pointer(&out[first*height : end*height][0]))
	}
	for t := lo / height; t*height < hi; t++ {
		if t == first && first < end {
			t = end - 1
			continue
		}
		var sums [halfGroupRows]float32
		m.tilesVec(t, 1, unsafe.Pointer(&x[:m.Cols][0]), unsafe.Pointer(&sums))
		a, b := max(lo, t*height), min(hi, (t+1)*height)
		copy(out[a:b], sums[a-t*height:b-t*height])
	}
}

// matMatF32 is matVecF32 for every vector of xs (a prompt chunk's tokens,
// or the streams of a decode step): f32TileGroup tiles against six
// vectors at a time (f32Tiles4x6 with AVX-512's 32 registers, else
// f32Tiles2x6), so each column of a tile is loaded once for six products
// and each value of a vector broadcast once for all the group's rows. A
// last group of two to four vectors runs the group's tiles against four
// (f32Tiles4x4, f32Tiles2x4: tilesX6), one of five the six-vector kernel;
// either is filled with repeats of its last vector, whose sums are
// dropped. A vector left alone goes through matVecF32. Every kernel
// sums a row as matVecF32's does, so a token's numbers do not depend on
// what it was batched with.
//
// Rows [hi, ahead) are the block the caller takes next (none where ahead
// <= hi): each kernel call asks an equal share of their tiles into the
// cache as it goes, so that block's first pass finds them there. Without
// it a block's first pass waited on memory: on the Zen 5 VM, 6.3 MB of
// f32 tiles against 6 tokens (no read ahead) took 248–319 µs from memory
// and 112 from cache, and against 64 tokens the product ran at 146–159
// GFLOP/s from memory before the read ahead and 163–179 after, 184–190
// from cache (BenchmarkPrefillProductFromMemory's tokens=N/from=…).
//
// In archsimd a kernel of this kind compiled to an address computation
// per load and a register copy per FMA, and ran no faster than a row at
// a time (BenchmarkPrefillProduct, f32: 15 GFLOP/s either way).
func matMatF32(outs [][]float32, m *Matrix, xs [][]float32, lo, hi, ahead int) {
	matMatFloatTiles(outs, m, xs, nil, lo, hi, ahead)
}

// haveBF16Dot is whether this core can run bf16Tiles4x6Dot, whose
// VDPBF16PS needs AVX512_BF16 (and VPERMW, AVX512BW).
var haveBF16Dot = haveAVX2 && archsimd.X86.AVX512() && cpu.X86.HasAVX512BF16

// matMatBF16 is matMatF32 for a BF16 file's matrix, on xs rounded to
// bfloat16 (each xq's bf16 form, which rounded holds as floats): through
// bf16Tiles4x6Dot where the core has VDPBF16PS, the timing chose it
// (bf16Dot), the tiles hold bfloat16s and the columns pair up, else
// through the kernels that widen each weight, which give the same sums
// (roundToBFloat16).
func matMatBF16(outs [][]float32, m *Matrix, rounded [][]float32, xq []*quantized, lo, hi, ahead int) {
	if !haveBF16Dot || m.half != bfloat16 || m.tiles == nil || m.Cols%2 != 0 || !bf16Dot().useDot {
		xq = nil
	}
	matMatFloatTiles(outs, m, rounded, xq, lo, hi, ahead)
}

// matMatFloatTiles is matMatF32, and where xq is not nil matMatBF16
// through the VDPBF16PS kernels on the pairs of xq's bfloat16s, twelve
// vectors a group while twelve are left (bf16Tiles4x12Dot).
func matMatFloatTiles(outs [][]float32, m *Matrix, xs [][]float32, xq []*quantized, lo, hi, ahead int) {
	s := 0
	if m.tiles != nil {
		wide := f32TileGroup == 4 && f32Wide().use512
		dot := xq != nil
		tiles := m.tilesACall(dot)
		group := tiles * tileRows
		next := m.readAhead(lo, hi, ahead, tiles, vectorGroups(len(xs), dot))
		// Groups start at multiples of their tiles, as the padding does
		// (and a kernel's tiles must not straddle halves' groups of
		// halfTileGroup). A group of tiles wholly in [lo, hi) is stored
		// straight into the outputs; one an end cuts through, and the
		// repeats' sums, into spare, whose rows are copied from.
		var spare [12][halfGroupRows]float32
		var spareRows [12]unsafe.Pointer
		for j := range spareRows {
			spareRows[j] = unsafe.Pointer(&spare[j])
		}
		for len(xs)-s >= 2 {
			n := vectorGroup(len(xs)-s, dot)
			var x, out [12]unsafe.Pointer
			for j := range max(n, 6) {
				if dot {
					x[j] = unsafe.Pointer(&xq[s+min(j, n-1)].bf16Pairs[:m.Cols/2][0])
				} else {
					x[j] = unsafe.Pointer(&xs[s+min(j, n-1)][:m.Cols][0])
				}
			}
			for t := lo / group * tiles; t*tileRows < hi; t += tiles {
				a, b := max(lo, t*tileRows), min(hi, t*tileRows+group)
				whole := b-a == group
				for j := range out {
					out[j] = spareRows[j]
					if whole && j < n {
						out[j] = unsafe.Pointer(&outs[s+j][a:b][0])
					}
				}
				ahead, step := next.share()
				switch {
				case n == 12 && m.groupedHalves:
					bf16Groups4x12Dot(m.f32Tile(t), m.tileStride(), m.Cols, &x, &out, ahead, step)
				case n == 12:
					bf16Tiles4x12Dot(m.f32Tile(t), m.tileStride(), m.Cols, &x, &out, ahead, step)
				default:
					m.tilesX6(t, n, wide, dot, (*[6]unsafe.Pointer)(x[:6]), (*[6]unsafe.Pointer)(out[:6]), ahead, step)
				}
				if !whole {
					for j := range n {
						copy(outs[s+j][a:b], spare[j][a-t*tileRows:b-t*tileRows])
					}
				}
			}
			s += n
		}
	}
	for ; s < len(xs); s++ {
		matVecF32(outs[s], m, xs[s], lo, hi)
	}
}

// tilesACall is how many tiles matMatF32's kernel calls take at once:
// a group of half tiles (groupHalfTiles) through the widening kernels
// where AVX-512 gives f16Groups8x6Z its 32 registers, else f32TileGroup.
// (The groups are laid out only on Zen 4, which has AVX-512; the tests
// lay them out on any core.)
func (m *Matrix) tilesACall(dot bool) int {
	if m.groupedHalves && !dot && f32TileGroup == 4 {
		return halfTileGroup
	}
	return f32TileGroup
}

// vectorGroup is how many of the left vectors (two or more) matMatF32's
// next kernel call takes: twelve through VDPBF16PS (dot) while twelve are
// left, else up to six.
func vectorGroup(left int, dot bool) int {
	if dot && left >= 12 {
		return 12
	}
	return min(6, left)
}

// vectorGroups is how many groups matMatF32 makes of n vectors (a last
// one alone goes through matVecF32).
func vectorGroups(n int, dot bool) int {
	groups := 0
	for ; n >= 2; n -= vectorGroup(n, dot) {
		groups++
	}
	return groups
}

// readAhead is how matMatF32 spreads the read of its next block over the
// kernel calls of the current one: the tiles of rows [hi, ahead), in
// shares of whole cache lines, one share a call.
type readAhead struct {
	from  unsafe.Pointer // the next block's first tile
	asked int            // bytes asked for so far
	left  int            // bytes not yet asked for
	each  int            // bytes a call asks for
	cols  int            // column steps a call takes
	idle  unsafe.Pointer // where a call with nothing left to ask reads ahead: a line of the block itself
}

// readAhead plans the read of rows [hi, ahead)'s tiles over the calls
// matMatF32 makes on rows [lo, hi) for its groups of vectors, each call
// on tiles tiles. With one group there is none: that pass reads its own
// block from memory, and the next block's read beside it only competed
// (6 vectors: 46–50 GFLOP/s against 67–74 without).
func (m *Matrix) readAhead(lo, hi, ahead, tiles, groups int) readAhead {
	r := readAhead{cols: m.Cols, idle: m.f32Tile(lo / tileRows)}
	first := (hi + tileRows - 1) / tileRows
	last := min((ahead+tileRows-1)/tileRows, len(m.tiles)/m.tileBytes())
	if groups < 2 || last <= first || hi <= lo {
		return r
	}
	group := tiles * tileRows
	calls := groups * ((hi - lo/group*group + group - 1) / group)
	r.from, r.left = m.f32Tile(first), (last-first)*m.tileBytes()
	r.each = ((r.left+calls-1)/calls + 63) &^ 63 // rounded up twice: calls·each covers the block
	return r
}

// share is the next call's read ahead: where it starts and how far each
// column step moves it. (A pointer is made only to a byte inside the
// tiles: one past their end would be invalid to Go's checks.)
func (r *readAhead) share() (unsafe.Pointer, int) {
	if r.left <= 0 {
		return r.idle, 0
	}
	start, n := unsafe.Add(r.from, r.asked), min(r.each, r.left)
	r.asked, r.left = r.asked+n, r.left-n
	return start, (n + r.cols - 1) / r.cols
}

// tilesVec runs f32TilesVec on n of m's tiles from tile first, or its
// unasked twin on a core whose hardware prefetch reads faster alone
// (askAhead); on halves f16TilesVec or bf16TilesVec (or their unasked
// twins), or where they lie in groups f16GroupsVec or bf16GroupsVec on n
// groups from group first.
// (Called as a func value, the kernel's arguments would escape, and each
// product allocate.)
func (m *Matrix) tilesVec(first, n int, x, out unsafe.Pointer) {
	tile := m.f32Tile(first * m.unitRows() / tileRows)
	switch {
	case m.half == ieeeHalf && m.groupedHalves:
		f16GroupsVec(tile, n, m.Cols, x, out)
	case m.half == ieeeHalf && askAhead:
		f16TilesVec(tile, n, m.Cols, x, out)
	case m.half == ieeeHalf:
		f16TilesVecUnasked(tile, n, m.Cols, x, out)
	case m.half == bfloat16 && m.groupedHalves:
		bf16GroupsVec(tile, n, m.Cols, x, out)
	case m.half == bfloat16 && askAhead:
		bf16TilesVec(tile, n, m.Cols, x, out)
	case m.half == bfloat16:
		bf16TilesVecUnasked(tile, n, m.Cols, x, out)
	case askAhead:
		f32TilesVec(tile, n, m.Cols, x, out)
	default:
		f32TilesVecUnasked(tile, n, m.Cols, x, out)
	}
}

// askAhead is whether the decode kernels ask for their tiles' lines 2 KiB
// ahead (f32TilesVec), which on Zen 5 fed one thread's stream faster than
// the hardware's prefetch alone (stories110M F32 decode 53.7–62.3 →
// 64.9–68.0 tok/s), and on Zen 4 and Zen 3 (AMD family 25, with AVX-512
// and without) slowed it: on Zen 4 44.2–47.3 → 33.0–34.3 tok/s (the VM of
// 2 December); on Zen 3, by ABBA turns of two builds (3 December),
// stories110M F32 decode on one thread ran 1.10–1.16× as fast without
// them, the Qwen2.5-0.5B shape's 1.15×, and stories110M F16 (the 16-bit
// kernels' twins) 1.03–1.08×. Cores not measured (Intel's) keep the asks.
var askAhead = amdFamily() != 0x19

// groupHalfTiles is whether F16 and BF16 matrices' tiles are laid out in
// interleaved groups (f32tiles.go), read by the decode kernels as one
// stream without asks: on Zen 4 (AMD family 25 with AVX-512), where the
// hardware's prefetch fed one stream faster than the tiles side by side.
// On the Zen 4 VM of 3 December, a pass over 48 MiB of F16 tiles on one
// thread (BenchmarkDecodeKernels) read 25.9–27.1 GB/s as one stream and
// 21.7–23.9 as eight tiles side by side (the kernel before); BF16
// 25.0–27.1 and 21.1–22.0; and the Qwen2.5-0.5B shape's F16 decode went
// from 0.85× llama.cpp's speed on one thread to 1.37×. On Zen 5 the
// groups read slower than the tiles with their asks (the VM of 3
// December: F16 32.7–45.1 GB/s against 35.5–50.0, BF16 28.1–44.2 against
// 37.3–47.6, twelve runs), and on the Zen 3 VM of 3 December (AVX2: no
// 512-bit widening) F16 groups read 15.7–16.4 GB/s against the four tiles'
// 16.5–18.9 with their asks: elsewhere the tiles lie one after another.
var groupHalfTiles = amdFamily() == 0x19 && archsimd.X86.AVX512()

// amdFamily is the CPU's family as AMD numbers it (CPUID leaf 1: the base
// family, plus the extended family where the base is 15), or 0 on
// another vendor's CPU.
func amdFamily() uint32 {
	if !cpuIsAMD() {
		return 0
	}
	signature := cpuSignature()
	family := signature >> 8 & 0xf
	if family == 0xf {
		family += signature >> 20 & 0xff
	}
	return family
}

// cpuSignature is CPUID leaf 1's EAX: stepping, model and family.
func cpuSignature() uint32

// cpuIsAMD is whether CPUID leaf 0 names AuthenticAMD.
func cpuIsAMD() bool

// tilesX6 runs matMatF32's kernel for m's tiles (of floats or halves) on
// the tilesACall tiles from tile t against six vectors, of which the
// first n are the group's own: a group of eight half tiles through
// 512-bit vectors, four tiles through VDPBF16PS on bfloat16 pairs (dot),
// through 512-bit vectors (wide) or 256-bit ones, else two;
// each against the first four vectors only where n <= 4 (64 tokens are
// ten groups of six and one of four, whose two repeats cost 2/66 of the
// product; a decode step of two to four streams is one such group). It
// reads ahead from ahead, aheadStep bytes a column.
func (m *Matrix) tilesX6(t, n int, wide, dot bool, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int) {
	tile, size, step := m.f32Tile(t), m.tileStride(), m.columnStep()
	four, six := f32TileGroup == 4, n > 4
	groups := m.tilesACall(dot) == halfTileGroup
	switch {
	case groups && six && m.half == ieeeHalf:
		f16Groups8x6Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case groups && six:
		bf16Groups8x6Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case groups && m.half == ieeeHalf:
		f16Groups8x4Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case groups:
		bf16Groups8x4Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case dot && six && m.groupedHalves:
		bf16Groups4x6Dot(tile, size, m.Cols, x, out, ahead, aheadStep)
	case dot && six:
		bf16Tiles4x6Dot(tile, size, m.Cols, x, out, ahead, aheadStep)
	case dot && m.groupedHalves:
		bf16Groups4x4Dot(tile, size, m.Cols, x, out, ahead, aheadStep)
	case dot:
		bf16Tiles4x4Dot(tile, size, m.Cols, x, out, ahead, aheadStep)
	case wide && six && m.half == ieeeHalf:
		f16Tiles4x6Z(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case wide && six && m.half == bfloat16:
		bf16Tiles4x6Z(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case wide && six:
		f32Tiles4x6Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case wide && m.half == ieeeHalf:
		f16Tiles4x4Z(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case wide && m.half == bfloat16:
		bf16Tiles4x4Z(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case wide:
		f32Tiles4x4Z(tile, size, m.Cols, x, out, ahead, aheadStep)
	case four && six && m.half == ieeeHalf:
		f16Tiles4x6(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case four && six && m.half == bfloat16:
		bf16Tiles4x6(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case four && six:
		f32Tiles4x6(tile, size, m.Cols, x, out, ahead, aheadStep)
	case four && m.half == ieeeHalf:
		f16Tiles4x4(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case four && m.half == bfloat16:
		bf16Tiles4x4(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case four:
		f32Tiles4x4(tile, size, m.Cols, x, out, ahead, aheadStep)
	case six && m.half == ieeeHalf:
		f16Tiles2x6(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case six && m.half == bfloat16:
		bf16Tiles2x6(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case six:
		f32Tiles2x6(tile, size, m.Cols, x, out, ahead, aheadStep)
	case m.half == ieeeHalf:
		f16Tiles2x4(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	case m.half == bfloat16:
		bf16Tiles2x4(tile, size, m.Cols, x, out, ahead, aheadStep, step)
	default:
		f32Tiles2x4(tile, size, m.Cols, x, out, ahead, aheadStep)
	}
}

// rowsOf points a multi-vector kernel's six outputs at sums' six rows.
func rowsOf[Row [2 * tileRows]float32 | [4 * tileRows]float32 | [halfGroupRows]float32](sums *[6]Row) *[6]unsafe.Pointer {
	var out [6]unsafe.Pointer
	for j := range sums {
		out[j] = unsafe.Pointer(&sums[j])
	}
	return &out
}

// f32Tile is where tile t of a tiled f32 matrix starts: in a group of
// half tiles, its first column, in the group's first 128 bytes.
func (m *Matrix) f32Tile(t int) unsafe.Pointer {
	if m.groupedHalves {
		return unsafe.Pointer(&m.tiles[t/halfTileGroup*halfTileGroup*m.tileBytes()+t%halfTileGroup*m.tileStride()])
	}
	return unsafe.Pointer(&m.tiles[t*m.tileBytes()])
}

//go:noescape
func f32TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func f32TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func f32Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f32Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f32Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f32Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f32Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f32Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

// The same kernels for tiles of halves (an F16 file's), and for
// tiles of bfloat16s (a BF16 file's), each column widened as it loads;
// the sums are the f32 kernels' on the widened tiles, bit for bit.

//go:noescape
func f16TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func f16TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func f16GroupsVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func f16Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func f16Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func f16Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func f16Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func f16Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func f16Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func bf16TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func bf16GroupsVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

//go:noescape
func bf16Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

//go:noescape
func bf16Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

// bf16Tiles4x6Dot is f32Tiles4x6Z for four tiles of bfloat16s against
// six vectors given as pairs of bfloat16s (roundToBFloat16's): a VDPBF16PS
// a pair of columns does two multiply-adds in each of 16 lanes, the
// column of each lane's pair first; cols must be even. Its sums are
// bf16Tiles4x6Z's on the same values as floats, bit for bit, as Intel
// defines VDPBF16PS (each product exact, each sum rounded in turn) and as
// the Zen 5 VM runs it (TestBFloat16DotKernelMatchesWidened).
//
//go:noescape
func bf16Tiles4x6Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Tiles4x12Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[12]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Tiles4x4Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

// The widening kernels for a group of half tiles (groupHalfTiles), eight
// tiles a call, whose layout fixes where each tile's columns lie:
// tileBytes (16) is not read.

//go:noescape
func f16Groups8x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func f16Groups8x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Groups8x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Groups8x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

// The dot kernels for four tiles of a group of bfloat16 tiles
// (groupHalfTiles), whose layout fixes where each tile's columns lie:
// tileBytes (16) is not read.

//go:noescape
func bf16Groups4x6Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Groups4x12Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[12]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

//go:noescape
func bf16Groups4x4Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)

// f32Wide is whether matMatF32 runs f32Tiles4x6Z (512-bit vectors) rather
// than f32Tiles4x6, timed once on this core when the first f32 matrix is
// tiled (withTiles). The two give the same sums, so the choice is speed
// alone. Whether 512 bits pay is a property of the core, not of a
// feature bit: an Intel server core with two 512-bit FMA units does
// nearly twice the arithmetic it does with 256-bit vectors (223 against
// 122 GFLOP/s, a plain FMA loop on a Xeon), and so does a Zen 5 core
// (BenchmarkF32PromptWidths: 161–185 against 93–95 on the development
// VM's), while Zen 4 splits each 512-bit FMA in two and runs both widths
// at one rate.
var f32Wide = sync.OnceValue(timeF32Widths)

// bf16Dot is whether matMatBF16 runs bf16Tiles4x6Dot on a core with
// VDPBF16PS, timed once when the first BF16 matrix is tiled against the
// kernel that widens each weight (the width f32Wide chose), on the same
// products, and taken by prefer512's rule: an eighth faster. A VDPBF16PS
// does two multiply-adds a lane where an FMA does one; at what rate is
// the core's (on the Zen 5 VM, BenchmarkBF16PromptKernels: 310 against
// 154 GFLOP/s). The two give the same sums, so the choice is speed alone.
var bf16Dot = sync.OnceValue(timeBF16Kernels)

// bf16Kernels is the timing behind bf16Dot.
type bf16Kernels struct {
	widening, dot time.Duration // each kernel's best time for the same products
	useDot        bool
}

// timeBF16Kernels times a BF16 matrix's products through VDPBF16PS
// against those through the kernels that widen each weight, as
// timeWidths times two widths: eight tiles of 256 columns (32 KiB) laid
// out as the loader lays them on this core, against six vectors, through
// matMatFloatTiles as a prompt runs them, so each side is the kernel that
// layout and choice would run.
func timeBF16Kernels() bf16Kernels {
	if !haveBF16Dot {
		return bf16Kernels{}
	}
	const cols = 256
	halves := make([]byte, 2*halfGroupRows*cols)
	for i := range halfGroupRows * cols {
		binary.LittleEndian.PutUint16(halves[2*i:], bfloat16Bits(float32(i%7+1)/8))
	}
	m := makeF32Tiles(&Matrix{Rows: halfGroupRows, Cols: cols, halves: halves, half: bfloat16, bf16Products: true}, nil, nil)
	xq, rounded, outs := make([]*quantized, 6), make([][]float32, 6), make([][]float32, 6)
	for j := range xq {
		q := newQuantized(cols)
		v := make([]float32, cols)
		for i := range v {
			v[i] = float32((i+j)%5+1) / 16
		}
		q.quantize(v, activationForms{bf16: true})
		xq[j], rounded[j], outs[j] = &q, q.bf16, make([]float32, m.Rows)
	}
	w := timeWidths(
		func() { matMatFloatTiles(outs, m, rounded, nil, 0, m.Rows, m.Rows) },
		func() { matMatFloatTiles(outs, m, rounded, xq, 0, m.Rows, m.Rows) })
	return bf16Kernels{widening: w.narrow, dot: w.wide, useDot: w.use512}
}

// BF16PromptKernel says which kernel BF16 prompts run on this CPU and the
// timing that chose it; empty where there is no choice (no VDPBF16PS).
// The first call times the kernels, if no load did.
func BF16PromptKernel() string {
	if !haveBF16Dot {
		return ""
	}
	k := bf16Dot()
	speed := float64(k.widening) / float64(k.dot)
	if k.useDot {
		return fmt.Sprintf("VDPBF16PS (%.2f× the widening kernel's speed, timed on this core)", speed)
	}
	return fmt.Sprintf("widening each weight (VDPBF16PS ran at %.2f× its speed, timed on this core)", speed)
}

// q4_0Wide is f32Wide for Q4_0's prompts: whether matMatTiles runs
// q4_0Tile4x2Z (two tiles through 512-bit vectors) rather than
// q4_0Tile4VNNI on each, timed once on this core when the first Q4_0
// matrix is tiled. Integer and float units need not match, so it is
// timed on its own kernels.
var q4_0Wide = sync.OnceValue(timeQ4_0Widths)

// iq4NLWide is q4_0Wide for IQ4_NL's prompts (iq4NLTile4x2Z against
// iq4NLTile4VNNI), timed on its own kernels: its lookups add work a
// column that Q4_0's do not.
var iq4NLWide = sync.OnceValue(timeIQ4_NLWidths)

// kernelWidths is the timing behind f32Wide, q4_0Wide and iq4NLWide.
type kernelWidths struct {
	narrow, wide time.Duration // each kernel's best time for the same products
	use512       bool
}

// timeWidths times a 256-bit kernel (narrow) and its 512-bit twin (wide)
// on the same products, by turns, each one's best of seven rounds of 64
// calls. It takes the 512-bit kernel only when that is faster by an
// eighth: on a core that runs both widths at one rate the timing is a
// tie, and noise should not pick the kernel whose inserts cost a little
// more. Each caller keeps its products in cache (tens of KiB), so the
// timing is the arithmetic's: about a millisecond, once a process.
func timeWidths(narrow, wide func()) kernelWidths {
	run := func(kernel func()) time.Duration {
		start := time.Now()
		for range 64 {
			kernel()
		}
		return time.Since(start)
	}
	w := kernelWidths{narrow: time.Hour, wide: time.Hour}
	for range 7 {
		w.narrow = min(w.narrow, run(narrow))
		w.wide = min(w.wide, run(wide))
	}
	w.use512 = prefer512(w.narrow, w.wide)
	return w
}

// timeF32Widths times the two four-tile f32 kernels on four tiles of 256
// columns (32 KiB) against six vectors.
func timeF32Widths() kernelWidths {
	if f32TileGroup != 4 {
		return kernelWidths{}
	}
	const cols = 256
	tiles := make([]float32, 4*tileRows*cols)
	for i := range tiles {
		tiles[i] = float32(i%7+1) / 8
	}
	vecs := make([]float32, 6*cols)
	for i := range vecs {
		vecs[i] = float32(i%5+1) / 16
	}
	var x [6]unsafe.Pointer
	for j := range x {
		x[j] = unsafe.Pointer(&vecs[j*cols])
	}
	var sums [6][4 * tileRows]float32
	out := rowsOf(&sums)
	return timeWidths(
		func() {
			f32Tiles4x6(unsafe.Pointer(&tiles[0]), f32TileBytes(cols), cols, &x, out, unsafe.Pointer(&tiles[0]), 0)
		},
		func() {
			f32Tiles4x6Z(unsafe.Pointer(&tiles[0]), f32TileBytes(cols), cols, &x, out, unsafe.Pointer(&tiles[0]), 0)
		})
}

// prefer512 is the rule timeWidths decides by: the 512-bit kernel when
// its time is under 7/8 of the 256-bit kernel's.
func prefer512(narrow, wide time.Duration) bool { return 8*wide < 7*narrow }

// F32PromptKernel says which vector width f32 prompts run at on this CPU
// and the timing that chose it; empty where there is no choice (no
// AVX-512). The first call times the kernels, if no load did.
func F32PromptKernel() string {
	if f32TileGroup != 4 {
		return ""
	}
	return f32Wide().String()
}

// String says which width w chose, and the speed ratio it chose by.
func (w kernelWidths) String() string {
	speed := float64(w.narrow) / float64(w.wide)
	if w.use512 {
		return fmt.Sprintf("512-bit (%.2f× the 256-bit kernel's speed, timed on this core)", speed)
	}
	return fmt.Sprintf("256-bit (the 512-bit kernel ran at %.2f× its speed, timed on this core)", speed)
}

// f32x8 loads the eight floats at p plus off bytes.
func f32x8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

// i8x32 loads the 32 int8 values at p plus off bytes.
func i8x32(p unsafe.Pointer, off uintptr) archsimd.Int8x32 {
	return archsimd.LoadInt8x32((*[32]int8)(unsafe.Add(p, off)))
}

// matVecBlocks multiplies a matrix stored as the GGUF's blocks: every
// format through its tiles (tiles_simd.go), built when the matrix was
// loaded; a matrix without tiles (a CPU without AVX2) with the portable
// kernels.
func matVecBlocks(out []float32, m *Matrix, x *quantized, lo, hi int) {
	if m.tiles == nil {
		matVecBlocksGeneric(out, m, x, lo, hi)
		return
	}
	matVecTiles(out, m, x, lo, hi)
}

// quantizeInto is quantizeGeneric in vectors, with identical results. It
// quantizes weights for a dtype; quantizeActivations quantizes a product's
// input.
func quantizeInto(q []int8, scales []float32, x []float32) {
	if !haveAVX2 || len(scales) == 0 {
		quantizeGeneric(q, scales, x)
		return
	}
	quantizeGroups(q, scales, x, false)
}

// quantizeActivations is quantizeActivationsGeneric in vectors, with
// identical results. It runs before every product with a matrix whose
// kernels read Q8_0 input, on the calling thread alone, where the scalar
// loop (a float64 conversion and an unpredictable sign branch per value)
// was a tenth of a two-thread decode step on stories42M, with the other
// thread idle. BenchmarkQuantize: 3-6 ns a value scalar, 0.27 in vectors.
func quantizeActivations(q []int8, scales []float32, x []float32) {
	if !haveAVX2 || len(scales) == 0 {
		quantizeActivationsGeneric(q, scales, x)
		return
	}
	quantizeGroups(q, scales, x, true)
}

// quantizeGroups quantizes x by groups of 32: as ggml's x86 kernel does
// (multiplied by 127/max, rounded to even) where asGGML, else as
// quantizeGeneric; the scale rounded to a half either way.
func quantizeGroups(q []int8, scales []float32, x []float32, asGGML bool) {
	groups := len(scales)
	_ = x[groups*GroupSize-1]
	_ = q[groups*GroupSize-1]
	px, pq := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(q))
	// Declared before any vector is made: Go zeroes them with SSE moves,
	// which after an AVX instruction slow everything until the registers'
	// upper halves are cleared (see gemm_amd64.s).
	var scale [8]uint32
	var c quantConsts
	c.init()
	for g := range groups {
		off := uintptr(g) * GroupSize * 4
		v0, v1, v2, v3 := f32x8(px, off), f32x8(px, off+32), f32x8(px, off+64), f32x8(px, off+96)
		amax := c.amax(v0, v1, v2, v3)
		s := amax.Div(c.maxQ)
		s.AsUint32x8().Store(&scale)
		dst := (*[32]int8)(unsafe.Add(pq, uintptr(g)*GroupSize))
		// Stored as bits: a float32 move would be an SSE instruction here.
		*(*uint32)(unsafe.Pointer(&scales[g])) = halfRoundedBits(scale[0])
		if asGGML {
			inv := c.maxQ.Div(amax).Masked(amax.NotEqual(c.zero))
			packInt8(v0.Mul(inv).RoundToEven().ConvertToInt32(), v1.Mul(inv).RoundToEven().ConvertToInt32(),
				v2.Mul(inv).RoundToEven().ConvertToInt32(), v3.Mul(inv).RoundToEven().ConvertToInt32()).Store(dst)
			continue
		}
		c.round(v0, v1, v2, v3, c.one.Div(s).Masked(s.NotEqual(c.zero))).Store(dst)
	}
	archsimd.ClearAVXUpperBits()
}

// quantizeQ8K is quantizeQ8KGeneric's rule in vectors: each block's
// signed extreme is found in scalar code (between vector passes, after
// ClearAVXUpperBits), and the products round to nearest even (VROUNDPS;
// the conversion itself truncates).
func quantizeQ8K(q []int8, scales []float32, sums []int16, x []float32) {
	blocks := len(scales)
	if !haveAVX2 || blocks == 0 {
		quantizeQ8KGeneric(q, scales, sums, x)
		return
	}
	_ = x[blocks*superBlock-1]
	_ = q[blocks*superBlock-1]
	for b := range blocks {
		// The scale's bits are stored through an integer: a float32 move
		// would be an SSE instruction among the vector ones.
		extreme := signedMax(x[b*superBlock : (b+1)*superBlock])
		var iscale float32
		if extreme != 0 {
			iscale = -127 / extreme
			scales[b] = 1 / iscale
		} else {
			scales[b] = 0
		}
		roundBlockQ8K(q[b*superBlock:(b+1)*superBlock], x[b*superBlock:(b+1)*superBlock], math.Float32bits(iscale))
	}
	for r := range blocks * superBlock / 16 {
		var sum int16
		for _, v := range q[r*16 : (r+1)*16] {
			sum += int16(v)
		}
		sums[r] = sum
	}
}

// roundBlockQ8K sets q to x times the float32 whose bits are iscale,
// rounded to nearest even (within ±127, as iscale was chosen).
func roundBlockQ8K(q []int8, x []float32, iscale uint32) {
	px, pq := unsafe.Pointer(unsafe.SliceData(x)), unsafe.Pointer(unsafe.SliceData(q))
	inv := archsimd.BroadcastUint32x8(iscale).AsFloat32x8()
	for g := range uintptr(superBlock / GroupSize) {
		off := g * GroupSize * 4
		r0 := f32x8(px, off).Mul(inv).RoundToEven().ConvertToInt32()
		r1 := f32x8(px, off+32).Mul(inv).RoundToEven().ConvertToInt32()
		r2 := f32x8(px, off+64).Mul(inv).RoundToEven().ConvertToInt32()
		r3 := f32x8(px, off+96).Mul(inv).RoundToEven().ConvertToInt32()
		packInt8(r0, r1, r2, r3).Store((*[32]int8)(unsafe.Add(pq, g*GroupSize)))
	}
	archsimd.ClearAVXUpperBits()
}

// quantConsts are the vectors the quantizers use.
type quantConsts struct {
	absMask, signMask, justBelowHalf archsimd.Uint32x8
	maxQ, one, zero                  archsimd.Float32x8
}

func (c *quantConsts) init() {
	c.absMask = archsimd.BroadcastUint32x8(0x7fffffff)
	c.signMask = archsimd.BroadcastUint32x8(0x80000000)
	// Adding the float just below ½, with v's sign, then truncating
	// rounds halves away from zero exactly in float32 (a plain +½ would
	// round 0.49999997 up).
	c.justBelowHalf = archsimd.BroadcastUint32x8(0x3effffff)
	c.maxQ = archsimd.BroadcastFloat32x8(127)
	c.one = archsimd.BroadcastFloat32x8(1)
}

// amax is the largest magnitude of 32 values, in every lane.
func (c *quantConsts) amax(v0, v1, v2, v3 archsimd.Float32x8) archsimd.Float32x8 {
	m := abs32(v0, c.absMask).Max(abs32(v1, c.absMask)).Max(abs32(v2, c.absMask).Max(abs32(v3, c.absMask)))
	m = m.Max(m.Permute(laneSwap[0]))
	m = m.Max(m.Permute(laneSwap[1]))
	return m.Max(m.Permute(laneSwap[2]))
}

// round is 32 values times inv, rounded halves away from zero, as int8 in
// order.
func (c *quantConsts) round(v0, v1, v2, v3, inv archsimd.Float32x8) archsimd.Int8x32 {
	return packInt8(
		roundHalfAway(v0.Mul(inv), c.signMask, c.justBelowHalf),
		roundHalfAway(v1.Mul(inv), c.signMask, c.justBelowHalf),
		roundHalfAway(v2.Mul(inv), c.signMask, c.justBelowHalf),
		roundHalfAway(v3.Mul(inv), c.signMask, c.justBelowHalf))
}

// packInt8 is 32 int32 values within ±127 as int8, in order.
func packInt8(r0, r1, r2, r3 archsimd.Int32x8) archsimd.Int8x32 {
	// Packing works within 128-bit halves: the bytes come out as
	// r0[0:4] r1[0:4] r2[0:4] r3[0:4] | r0[4:8] r1[4:8] r2[4:8] r3[4:8],
	// which one dword permute puts in order.
	lo := r0.SaturateToInt16ConcatGrouped(r1).AsInt8x32().PermuteOrZeroGrouped(quantShuffle[0])
	hi := r2.SaturateToInt16ConcatGrouped(r3).AsInt8x32().PermuteOrZeroGrouped(quantShuffle[1])
	return lo.Or(hi).AsInt32x8().Permute(dwordOrder).AsInt8x32()
}

func abs32(v archsimd.Float32x8, absMask archsimd.Uint32x8) archsimd.Float32x8 {
	return v.AsUint32x8().And(absMask).AsFloat32x8()
}

// roundHalfAway rounds y to the nearest int32, halves away from zero.
func roundHalfAway(y archsimd.Float32x8, signMask, justBelowHalf archsimd.Uint32x8) archsimd.Int32x8 {
	return y.Add(y.AsUint32x8().And(signMask).Or(justBelowHalf).AsFloat32x8()).ConvertToInt32()
}

var (
	// laneSwap exchanges halves, then pairs, then neighbours: three
	// max steps leave a vector's maximum in every lane.
	laneSwap = [3]archsimd.Uint32x8{
		archsimd.LoadUint32x8(&[8]uint32{4, 5, 6, 7, 0, 1, 2, 3}),
		archsimd.LoadUint32x8(&[8]uint32{2, 3, 0, 1, 6, 7, 4, 5}),
		archsimd.LoadUint32x8(&[8]uint32{1, 0, 3, 2, 5, 4, 7, 6}),
	}
	// quantShuffle takes the low byte of each int16 of a 128-bit half into
	// its first (lowBytes) or last (highBytes) eight bytes, zeroing the rest.
	quantShuffle = func() (idx [2]archsimd.Int8x32) {
		for h := range idx {
			var b [32]int8
			for i := range b {
				b[i] = -1
			}
			for half := 0; half < 32; half += 16 {
				for k := range 8 {
					b[half+8*h+k] = int8(2 * k)
				}
			}
			idx[h] = archsimd.LoadInt8x32(&b)
		}
		return idx
	}()
	dwordOrder = archsimd.LoadUint32x8(&[8]uint32{0, 4, 1, 5, 2, 6, 3, 7})
)

// softmax sets x to softmax(scale·x). Lengths that are not a multiple of
// 8 take the portable path; attention pads its scores so they never do.
func softmax(x []float32, scale float32) {
	if !haveAVX2 || len(x)%8 != 0 || len(x) == 0 {
		softmaxGeneric(x, scale)
		return
	}
	p, end := unsafe.Pointer(&x[0]), uintptr(len(x))*4
	sv := archsimd.BroadcastFloat32x8(scale)
	top := archsimd.BroadcastFloat32x8(float32(math.Inf(-1)))
	for off := uintptr(0); off < end; off += 32 {
		v := f32x8(p, off).Mul(sv)
		v.Store((*[8]float32)(unsafe.Add(p, off)))
		top = top.Max(v)
	}
	top = top.Max(top.Permute(laneSwap[0]))
	top = top.Max(top.Permute(laneSwap[1]))
	top = top.Max(top.Permute(laneSwap[2]))
	var sum archsimd.Float32x8
	for off := uintptr(0); off < end; off += 32 {
		e := exp8(f32x8(p, off).Sub(top))
		e.Store((*[8]float32)(unsafe.Add(p, off)))
		sum = sum.Add(e)
	}
	sum = sum.Add(sum.Permute(laneSwap[0]))
	sum = sum.Add(sum.Permute(laneSwap[1]))
	sum = sum.Add(sum.Permute(laneSwap[2]))
	inv := archsimd.BroadcastFloat32x8(1).Div(sum)
	for off := uintptr(0); off < end; off += 32 {
		f32x8(p, off).Mul(inv).Store((*[8]float32)(unsafe.Add(p, off)))
	}
	archsimd.ClearAVXUpperBits()
}

// swiGLU sets hb = silu(hb) ⊙ hb2. A ragged tail goes through the same
// vector code from a padded copy: threads split hb at arbitrary points, and
// every element must come out the same whichever span holds it.
func swiGLU(hb, hb2 []float32) {
	if !haveAVX2 {
		swiGLUGeneric(hb, hb2)
		return
	}
	hb2 = hb2[:len(hb)]
	full := len(hb) &^ 7
	for i := 0; i < full; i += 8 {
		h := (*[8]float32)(hb[i : i+8])
		swiGLU8(archsimd.LoadFloat32x8(h), archsimd.LoadFloat32x8((*[8]float32)(hb2[i:i+8]))).Store(h)
	}
	archsimd.ClearAVXUpperBits()
	if full < len(hb) {
		var h, g [8]float32
		copy(h[:], hb[full:])
		copy(g[:], hb2[full:])
		swiGLU8(archsimd.LoadFloat32x8(&h), archsimd.LoadFloat32x8(&g)).Store(&h)
		archsimd.ClearAVXUpperBits()
		copy(hb[full:], h[:])
	}
}

// geGLU is geGLUGeneric eight at a time: VCVTPS2PH rounds each input to
// the half that indexes geluTable (to nearest even, as f32ToF16 does) and
// a gather reads the table. In Gemma 3 prompts the scalar lookup (its
// rounding in Go, then the load) was a sixth of an F32 file's prefill.
// A ragged tail takes the scalar path: a lookup gives the same number
// either way.
func geGLU(hb, hb2 []float32) {
	hb2 = hb2[:len(hb)]
	whole := len(hb) &^ 7
	if !haveAVX2 || whole == 0 {
		geGLUGeneric(hb, hb2)
		return
	}
	geGLUAVX2(unsafe.Pointer(&hb[0]), unsafe.Pointer(&hb2[0]), whole, unsafe.Pointer(geluTable()))
	geGLUGeneric(hb[whole:], hb2[whole:])
}

//go:noescape
func geGLUAVX2(hb, hb2 unsafe.Pointer, n int, table unsafe.Pointer)

// swiGLU8 is h / (1 + e^-h) · g, in swiGLUGeneric's order of operations.
func swiGLU8(h, g archsimd.Float32x8) archsimd.Float32x8 {
	var zero archsimd.Float32x8
	return h.Div(archsimd.BroadcastFloat32x8(1).Add(exp8(zero.Sub(h)))).Mul(g)
}

// exp8 is e^x in each lane, Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2
// (ln 2 in two parts, the first with few bits so n times it is exact), a
// degree-5 polynomial for e^r, and 2^n built in the exponent bits. Its
// error is a few ulp; below -87.3 (where e^x leaves float32's normal range)
// it gives 0, -Inf included, and above 88 it gives e^88. It serves softmax
// (x ≤ 0) and SiLU, where math.Exp per element, in float64, was half of
// attention's time.
func exp8(x archsimd.Float32x8) archsimd.Float32x8 {
	normal := x.GreaterEqual(archsimd.BroadcastFloat32x8(expMin))
	x = x.Max(archsimd.BroadcastFloat32x8(expMin)).Min(archsimd.BroadcastFloat32x8(expMax))
	n := x.MulAdd(archsimd.BroadcastFloat32x8(math.Log2E), archsimd.BroadcastFloat32x8(0.5)).Floor()
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-ln2Hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x8(-ln2Lo), r)
	y := archsimd.BroadcastFloat32x8(1.9875691500e-4)
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(1.3981999507e-3))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(8.3334519073e-3))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(4.1665795894e-2))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(1.6666665459e-1))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(5.0000001201e-1))
	y = y.MulAdd(r.Mul(r), r.Add(archsimd.BroadcastFloat32x8(1)))
	pow2n := n.ConvertToInt32().Add(archsimd.BroadcastInt32x8(127)).ShiftAllLeft(23).AsFloat32x8()
	return y.Mul(pow2n).Masked(normal)
}

const (
	expMin = -87.33654 // e^x below this is not a normal float32
	expMax = 88
	ln2Hi  = 0.693359375 // ln 2 = ln2Hi + ln2Lo, ln2Hi with few mantissa bits
	ln2Lo  = -2.12194440e-4
)
