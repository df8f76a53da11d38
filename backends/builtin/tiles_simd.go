//go:build goexperiment.simd && amd64

package builtin

import (
	"encoding/binary"
	"unsafe"
)

// Tiles: the AVX2 kernels' own copy of a Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
// Q2_K, Q3_K, Q4_K, Q5_K or Q6_K matrix, eight rows interleaved, as
// llama.cpp repacks Q4_0 and Q4_K for its CPU kernels. A kernel reading
// one row at a time spends most of its instructions unpacking that row's
// blocks and summing its lanes; a tile puts four weights of each of eight
// rows side by side in one 32-byte vector, so one multiply-add
// (VPMADDUBSW) serves eight rows against four activations broadcast to
// every row, each int32 lane of the result is one row's sum, and eight
// outputs come out of one kernel call with no horizontal sum. The file's
// blocks stay where they are (mapped) for everything else: the portable
// kernels, row lookups, dequantizing. A Q8_0 matrix is tiled too, in
// place of its rows (q8tiles.go).

// Q6_K tile, per super-block of 256 columns (q6KTileBytes): the codes'
// four low bits and two high bits apart, as the file keeps them, so the
// tile is the blocks' 210 bytes a row (a tile of a byte a code took 274,
// +30%), and decode streams the tiles (a Q4_K_M file's tied classifier is
// Q6_K: 215 MB of blocks for Llama 3.2's vocabulary):
//   - per run s of 16 columns, 96 bytes at 96s: two vectors of nibbles,
//     weights 16s+4t…16s+4t+3 of rows 0…7 in vector t%2 at 4r, in the low
//     nibbles for t < 2 and the high for t ≥ 2; then a vector of high bit
//     pairs, the same weights at 64+4r, in bits 2t…2t+1;
//   - 128 bytes of scales: run s of rows 0…7 in bytes 8s…8s+7;
//   - 8 halves d, row r at r, as the blocks hold them (VCVTPH2PS makes
//     them floats).
const (
	q6KTileRun    = 96
	q6KTileScales = 16 * q6KTileRun
	q6KTileD      = q6KTileScales + tileRows*superBlock/16
	q6KTileBytes  = q6KTileD + 2*tileRows
)

// Q2_K tile, per super-block of 256 columns (q2KTileBytes):
//   - 512 bytes of 2-bit codes, the blocks' own bytes reordered: bytes
//     32n+4t…32n+4t+3 of rows 0…7 (bits 2j of each holding weight
//     128n+32j+4t…) in bytes 256n+32t…+31, row r at +4r, so one load
//     serves four runs of 16 and a shift brings each;
//   - 128 bytes of scales: run s of rows 0…7 in bytes 8s…8s+7;
//   - 128 bytes of mins, two runs to a pair of bytes: runs 2p and 2p+1 of
//     row r in bytes 16p+2r and 16p+2r+1, as VPMADDWD meets the
//     activations' sums of 16 two at a time;
//   - 8 halves d, then 8 halves dmin.
//
// 100 bytes a row per 256 columns, +19% over the file's blocks (a byte for
// each scale and min, where the blocks pack them in a nibble).
const (
	q2KTileCodes  = tileRows * superBlock / 4
	q2KTileScales = q2KTileCodes
	q2KTileMins   = q2KTileScales + tileRows*16
	q2KTileD      = q2KTileMins + tileRows*16
	q2KTileBytes  = q2KTileD + 2*2*tileRows
)

// Q3_K tile, per super-block of 256 columns (q3KTileBytes): a weight is
// d·scale·(q − 4), q its two low bits and 4 for its high bit, so the
// kernel sums q·y and pays for the −4 with the activations' sums of 16:
//   - 512 bytes of low bit pairs, laid out as a Q2_K tile's codes;
//   - 256 bytes of high bits, the blocks' own bytes reordered: bytes
//     4t…4t+3 of rows 0…7 in bytes 32t…32t+31, row r at +4r (bit 4n+j of
//     each holding weight 128n+32j+4t…'s, so one load serves all eight
//     runs of those columns);
//   - 128 bytes of scales (−32…31), laid out as a Q2_K tile's;
//   - 128 bytes of 4·scale, laid out as a Q2_K tile's mins;
//   - 8 halves d.
//
// 130 bytes a row per 256 columns, +18% over the file's blocks (Q6_K's
// tiles, which served Q3_K before, held a byte a weight: 2.4×).
const (
	q3KTileHigh    = q2KTileScales
	q3KTileScales  = q3KTileHigh + tileRows*superBlock/8
	q3KTileOffsets = q3KTileScales + tileRows*16
	q3KTileD       = q3KTileOffsets + tileRows*16
	q3KTileBytes   = q3KTileD + 2*tileRows
)

// Q4_0 tile, per group of 32 columns (q4_0TileBytes):
//   - 128 bytes of nibbles, the blocks' own bytes reordered: bytes 4t…4t+3
//     of rows 0…7 (weights 4t… in the low nibbles, 16+4t… in the high) in
//     bytes 32t…32t+31, row r at +4r;
//   - 8 halves d, as the blocks hold them (VCVTPH2PS makes them floats):
//     the tile is the blocks' 144 bytes, where float32 d made it 160, and
//     decode streams the tiles.
const (
	q4_0TileNibbles = tileRows * GroupSize / 2
	q4_0TileBytes   = q4_0TileNibbles + 2*tileRows
)

// Q4_K tile, for the AVX2 kernels (q4KByteScaleTiles), per super-block
// of 256 columns (q4KTileBytes), its places shared by Q5_K's tile:
//   - 1024 bytes of nibbles, the blocks' own bytes reordered: for groups
//     2c and 2c+1 (low and high nibbles, as in the block) and their
//     weights 4t…4t+3, rows 0…7 in bytes 32(8c+t)…+31, row r at +4r;
//   - 64 bytes of scales and 64 of mins: group j of rows 0…7 in bytes
//     8j…8j+7 of each;
//   - 8 halves d, then 8 halves dmin, as the blocks hold them (VCVTPH2PS
//     makes them floats). As float32 they made the tiles 6% larger than
//     the file's blocks where halves make it 3%, and decode streams the
//     tiles.
const (
	q4KTileNibbles = tileRows * superBlock / 2
	q4KTileScales  = q4KTileNibbles
	q4KTileMins    = q4KTileScales + tileRows*8
	q4KTileD       = q4KTileMins + tileRows*8
	q4KTileBytes   = q4KTileD + 2*2*tileRows
)

// Q4_K compact tile, for the VNNI kernels (q4KCompactTiles), per
// super-block of 256 columns (q4KCompactTileBytes): the blocks' 144 bytes
// a row, where a byte for each scale and min made it 148, and decode
// streams the tiles:
//   - 1024 bytes of nibbles, as in the Q4_K tile;
//   - 96 bytes of the blocks' packed six-bit scales and mins as they are:
//     byte k of rows 0…7 in bytes 8k…8k+7, so a vector holds bytes k…k+3
//     of every row and the kernels unpack the eight rows' 16 values a
//     block at once (K_BLOCK_START, gemm_amd64.s);
//   - 8 halves d, then 8 halves dmin.
const (
	q4KCompactScales    = q4KTileNibbles
	q4KCompactD         = q4KCompactScales + tileRows*12
	q4KCompactTileBytes = q4KCompactD + 2*2*tileRows
)

// Q5_K tile: a Q4_K tile (the nibbles, scales, mins, d and dmin at the
// same places), then the block's 32 bytes of fifth bits as they are, per
// row: byte j holds bit g of weight 32g+j, so weights 4t…4t+3 of rows
// 0…7 are bytes 32t…32t+31, row r at +4r, as the nibbles are laid out,
// and one load serves all eight groups (a shift brings each group's bit
// to bit 4 of its code). A byte for two bits (+59% over the file's
// blocks) read a third more a token, and decode streams the tiles.
const (
	q5KTileHigh  = q4KTileBytes
	q5KTileBytes = q5KTileHigh + tileRows*superBlock/8
)

// Q4_1 tile, per group of 32 columns (q4_1TileBytes): a Q4_0 tile (the
// nibbles and d at the same places), then 8 halves m: the file's
// blocks' 160 bytes, where a byte-code tile was twice them, and decode
// streams the tiles.
const q4_1TileBytes = q4_0TileBytes + 2*tileRows

// Five-bit tile (Q5_0, Q5_1), per group of 32 columns (fiveBitTileBytes):
//   - 128 bytes of nibbles, laid out as a Q4_0 tile's;
//   - 32 bytes of fifth bits, row r's four at 4r, arranged so that one
//     shift a step serves every row: bit t of byte k is the fifth bit of
//     weight 4t+k (a low nibble of the nibbles' vector t), bit 4+t that of
//     weight 16+4t+k (a high nibble);
//   - 8 halves d, then 8 halves o: each row's m (Q5_1), or its code
//     offset times −d (Q5_0: −16·d, exact as a half where it is finite;
//     see withTiles), so that w = d·code + o.
//
// 24 bytes a row per 32 columns: Q5_1's blocks, +9% over Q5_0's (o). With
// float32 d and o it was +27% and +17%, and decode streams the tiles.
const (
	fiveBitTileHigh  = q4_0TileNibbles
	fiveBitTileD     = fiveBitTileHigh + 4*tileRows
	fiveBitTileBytes = fiveBitTileD + 2*2*tileRows
)

// IQ4_NL tile, per group of 32 columns: a Q4_0 tile, as IQ4_NL's blocks
// are Q4_0's but for what a nibble means; its kernels look each nibble's
// level up in a register. (The AVX2 kernels read a tile of the levels
// themselves until 29 November: 272 bytes a group where this is 144,
// nearly twice the file's blocks.)

// tileKernel is a format's tile layout; its kernels are dotTile's and
// dotTiles'. A tile block covers one of the format's blocks, and the
// kernels read the activations the format's dot reads (Q8_K or Q8_0).
type tileKernel struct {
	bytes int // bytes of one tile block
	// put lays out row r of a tile block from the row's file block b.
	put func(tile []byte, r int, b []byte)
	// batches are the sizes of the format's batched kernels (dotTiles),
	// largest first.
	batches []int
}

// tileKernels are the formats' tile layouts on this CPU. With VNNI,
// Q4_K's kernels read a layout of their own (q4KCompactTiles), where the
// AVX2 kernels read q4KByteScaleTiles.
var tileKernels = func() map[format]*tileKernel {
	k := map[format]*tileKernel{
		formatQ8_0:   {q8_0TileBytes, nil, []int{4}}, // makeQ8_0Tiles lays it out
		formatQ4_0:   {q4_0TileBytes, q4_0TileRow, []int{4, 3}},
		formatQ2_K:   {q2KTileBytes, q2KTileRow, []int{3}},
		formatQ4_K:   q4KByteScaleTiles,
		formatQ5_K:   {q5KTileBytes, q5KTileRow, nil},
		formatQ6_K:   {q6KTileBytes, q6KTileRow, []int{3}},
		formatQ3_K:   {q3KTileBytes, q3KTileRow, []int{3}},
		formatQ4_1:   {q4_1TileBytes, q4_1TileRow, nil},
		formatQ5_0:   {fiveBitTileBytes, q5_0TileRow, []int{3}},
		formatQ5_1:   {fiveBitTileBytes, q5_1TileRow, []int{3}},
		formatIQ4_NL: {q4_0TileBytes, q4_0TileRow, []int{4}},
	}
	if haveVNNI {
		k[formatQ4_K] = q4KCompactTiles
	}
	return k
}()

// The two layouts of Q4_K: the AVX2 kernels', and the VNNI kernels'.
var (
	q4KByteScaleTiles = &tileKernel{q4KTileBytes, q4KTileRow, []int{3}}
	q4KCompactTiles   = &tileKernel{q4KCompactTileBytes, q4KCompactTileRow, []int{3}}
)

// withTiles returns m with its rows also laid out as tiles where this
// build and CPU have a tile kernel for its format. A Q8_0 or f32 matrix
// keeps its tiles alone: they are the rows' size, and the kernels read
// nothing else. An f32 matrix's tiles are taken from mem.
func withTiles(m *Matrix, mem *tileMemory, copied func(stored []byte)) *Matrix {
	k := tileKernels[m.format]
	switch {
	case !haveAVX2:
	case m.format == formatF32:
		if m.F32 != nil || m.halves != nil {
			m = makeF32Tiles(m, mem, copied)
		}
		f32Wide() // timed at load, not inside a prompt's first product
		if m.half == bfloat16 {
			bf16Dot()
		}
	case k == nil:
	case m.format == formatQ5_0 && !q5_0OffsetsAreHalves(m):
	case m.format == formatQ8_0:
		m.tiles, m.quant = makeQ8_0Tiles(m), nil
	default:
		m.tiles = makeTiles(m, k)
		usePairs(m.format) // the widths timed at load, not inside a prompt's first product
	}
	return m
}

// q8_0TilesOfFile is a GGUF's Q8_0 tensor laid out as withTiles lays
// out its rows, where it would; nil where it keeps rows.
func q8_0TilesOfFile(raw []byte, rows, cols int) []byte {
	if !haveAVX2 || tileKernels[formatQ8_0] == nil {
		return nil
	}
	return q8_0TilesOfBlocks(raw, rows, cols)
}

// tileForms is the activations m's tiles read, if it has any: Q8_K's
// codes, or Q8_0's and their sums.
func tileForms(m *Matrix) activationForms {
	switch {
	case m.tiles == nil || !m.Quantized(): // f32 tiles read the floats
		return activationForms{}
	case formats[m.format].q8K:
		return activationForms{q8K: true}
	}
	return activationForms{q8_0: true, sums: true}
}

// makeTiles lays m's rows out as tiles.
func makeTiles(m *Matrix, k *tileKernel) []byte {
	blocks, per := m.Cols/m.format.block(), m.format.fileBlockBytes()
	out := hugePaged(tileCount(m.Rows) * blocks * k.bytes)
	for row := range m.Rows {
		t, r := row/tileRows, row%tileRows
		raw := m.quantRow(row)
		for b := range blocks {
			k.put(out[(t*blocks+b)*k.bytes:(t*blocks+b+1)*k.bytes], r, raw[b*per:(b+1)*per])
		}
	}
	return out
}

func q4_0TileRow(tile []byte, r int, b []byte) {
	tileNibbles(tile, r, b[2:18])
	copy(tile[q4_0TileNibbles+2*r:][:2], b[:2])
}

func q4_1TileRow(tile []byte, r int, b []byte) {
	tileNibbles(tile, r, b[4:20])
	copy(tile[q4_0TileNibbles+2*r:][:2], b[:2])
	copy(tile[q4_0TileBytes+2*r:][:2], b[2:4])
}

// tileNibbles lays out row r's 16 bytes of nibbles of a Q4_0 or Q4_1
// block in a tile: bytes 4t…4t+3 at 32t+4r.
func tileNibbles(tile []byte, r int, nibbles []byte) {
	for t := range 4 {
		copy(tile[32*t+4*r:][:4], nibbles[4*t:])
	}
}

func q4KTileRow(tile []byte, r int, b []byte) {
	kQuantNibbles(tile, r, b[16:144])
	q4KTileScalesRow(tile, r, b)
}

// kQuantNibbles lays out row r's 128 bytes of nibbles of a Q4_K or Q5_K
// block in a tile: for groups 2c and 2c+1, bytes 4t…4t+3 at
// 32(8c+t)+4r.
func kQuantNibbles(tile []byte, r int, nibbles []byte) {
	for c := range 4 {
		for t := range 8 {
			copy(tile[32*(8*c+t)+4*r:][:4], nibbles[32*c+4*t:])
		}
	}
}

func q2KTileRow(tile []byte, r int, b []byte) {
	twoBitTileCodes(tile, r, b[16:80])
	for s, packed := range b[:16] {
		tile[q2KTileScales+8*s+r] = packed & 0x0f
		tile[runPairAt(q2KTileMins, r, s)] = packed >> 4
	}
	copy(tile[q2KTileD+2*r:][:2], b[80:82])
	copy(tile[q2KTileD+2*tileRows+2*r:][:2], b[82:84])
}

func q3KTileRow(tile []byte, r int, b []byte) {
	twoBitTileCodes(tile, r, b[32:96])
	for t := range 8 {
		copy(tile[q3KTileHigh+32*t+4*r:][:4], b[4*t:])
	}
	for s, scale := range q3KScales((*[12]byte)(b[96:108])) {
		tile[q3KTileScales+8*s+r] = scale
		tile[runPairAt(q3KTileOffsets, r, s)] = byte(4 * int8(scale))
	}
	copy(tile[q3KTileD+2*r:][:2], b[108:110])
}

// twoBitTileCodes lays out row r's 64 bytes of 2-bit codes of a Q2_K or
// Q3_K block in a tile: bytes 32n+4t…32n+4t+3 at 256n+32t+4r.
func twoBitTileCodes(tile []byte, r int, codes []byte) {
	for n := range 2 {
		for t := range 8 {
			copy(tile[256*n+32*t+4*r:][:4], codes[32*n+4*t:])
		}
	}
}

// runPairAt is where a tile keeps row r's byte for run s among bytes that
// pair runs 2p and 2p+1 for VPMADDWD, from at.
func runPairAt(at, r, s int) int { return at + 16*(s/2) + 2*r + s%2 }

// q4KTileScalesRow lays out a Q4_K or Q5_K block's scales, mins, d and
// dmin, which the two formats keep at the same places.
func q4KTileScalesRow(tile []byte, r int, b []byte) {
	scales, mins := q4KScalesMins(b[4:16])
	for j := range 8 {
		tile[q4KTileScales+8*j+r], tile[q4KTileMins+8*j+r] = scales[j], mins[j]
	}
	copy(tile[q4KTileD+2*r:][:2], b[:2])
	copy(tile[q4KTileD+2*tileRows+2*r:][:2], b[2:4])
}

// q4KCompactTileRow lays out a Q4_K block in a compact tile: its
// nibbles as q4KTileRow does, then its packed scales, d and dmin as the
// block holds them.
func q4KCompactTileRow(tile []byte, r int, b []byte) {
	kQuantNibbles(tile, r, b[16:144])
	for k, packed := range b[4:16] {
		tile[q4KCompactScales+8*k+r] = packed
	}
	copy(tile[q4KCompactD+2*r:][:2], b[:2])
	copy(tile[q4KCompactD+2*tileRows+2*r:][:2], b[2:4])
}

// q5KTileRow lays out a Q5_K block: its scales, d, dmin and nibbles
// (after the 32 bytes of fifth bits) as Q4_K's, then its fifth bits.
func q5KTileRow(tile []byte, r int, b []byte) {
	kQuantNibbles(tile, r, b[48:176])
	for t := range 8 {
		copy(tile[q5KTileHigh+32*t+4*r:][:4], b[16+4*t:])
	}
	q4KTileScalesRow(tile, r, b)
}

// orUint32 ors v into the four little-endian bytes at b.
func orUint32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)|v)
}

// q6KTileRow lays out a Q6_K block in a tile, which starts zeroed
// (makeTiles): each code's bits are or'd into place.
func q6KTileRow(tile []byte, r int, b []byte) {
	// Four weights at a time, 16s+4t…+3: they share q6KValue's half h and
	// group k, and their low nibbles and bit pairs are four neighbouring
	// bytes of the block's ql and qh (a load taking ~1.5 µs a block one
	// weight at a time, seven seconds for a 1 GB Q6_K file).
	for s := range 16 {
		run := tile[q6KTileRun*s:][:q6KTileRun]
		for t := range 4 {
			w := 16*s + 4*t
			h, k, j := w/128, w%128/32, w%32
			lo := binary.LittleEndian.Uint32(b[h*64+(k&1)*32+j:]) >> (4 * (k >> 1)) & 0x0f0f0f0f
			hi := binary.LittleEndian.Uint32(b[128+h*32+j:]) >> (2 * k) & 0x03030303
			orUint32(run[32*(t%2)+4*r:], lo<<(4*(t/2)))
			orUint32(run[64+4*r:], hi<<(2*t))
		}
	}
	for s := range 16 {
		tile[q6KTileScales+8*s+r] = b[192+s]
	}
	copy(tile[q6KTileD+2*r:][:2], b[208:210])
}

// q5_0TileRow lays out a Q5_0 block (d, fifth bits, nibbles): codes
// 0…31 less 16, so o = −16·d.
func q5_0TileRow(tile []byte, r int, b []byte) {
	fiveBitTileRow(tile, r, b[6:22], binary.LittleEndian.Uint32(b[2:6]), le16(b), q5_0Offset(le16(b)))
}

// q5_0Offset is a Q5_0 block's o = −16·d as a half: exact (a power of
// two), but infinite where |d| ≥ 4096 (q5_0OffsetsAreHalves).
func q5_0Offset(d uint16) uint16 { return f32ToF16(-16 * f16ToF32(d)) }

// q5_0OffsetsAreHalves is whether every block of the Q5_0 matrix m has a
// finite o as a half. A file's weights would have to reach 65,536 for one
// not to; such a matrix keeps no tiles (withTiles), and runs the
// portable kernels on its blocks.
func q5_0OffsetsAreHalves(m *Matrix) bool {
	per := m.format.fileBlockBytes()
	for at := 0; at < len(m.quant); at += per {
		if q5_0Offset(le16(m.quant[at:]))&0x7c00 == 0x7c00 {
			return false
		}
	}
	return true
}

// q5_1TileRow lays out a Q5_1 block (d, m, fifth bits, nibbles).
func q5_1TileRow(tile []byte, r int, b []byte) {
	fiveBitTileRow(tile, r, b[8:24], binary.LittleEndian.Uint32(b[4:8]), le16(b), le16(b[2:]))
}

// fiveBitTileRow lays out row r of a five-bit tile block from its 16
// bytes of nibbles, its 32 fifth bits (bit k for weight k), and the
// halves d and o.
func fiveBitTileRow(tile []byte, r int, nibbles []byte, high uint32, d, o uint16) {
	tileNibbles(tile, r, nibbles)
	var bits uint32
	for k := range 4 {
		for t := range 4 {
			bits |= (high>>(4*t+k)&1)<<(8*k+t) | (high>>(16+4*t+k)&1)<<(8*k+4+t)
		}
	}
	binary.LittleEndian.PutUint32(tile[fiveBitTileHigh+4*r:], bits)
	binary.LittleEndian.PutUint16(tile[fiveBitTileD+2*r:], d)
	binary.LittleEndian.PutUint16(tile[fiveBitTileD+2*tileRows+2*r:], o)
}

// tileInput is the activations as a tile kernel reads them: the codes as
// they are (each kernel broadcasts four at a time to every row's lanes
// as it loads them), and per block (Q8_K) or group (Q8_0) the scale and
// the sums. The four-vector kernels read an array of them: keep the
// fields' order.
type tileInput struct {
	codes, scales, sums unsafe.Pointer
	blocks              int
}

// matMatTiles computes rows [lo, hi) of a tiled matrix against every
// quantized vector of xs (a prompt chunk's tokens, or a decode step's
// streams): in batches of its format's batched kernels (its batches),
// which unpack each tile's codes once for the batch, largest first; the
// other formats, and the vectors left over, a vector at a time.
func matMatTiles(outs [][]float32, m *Matrix, xs []*quantized, lo, hi int) {
	s := 0
	k := tileKernels[m.format]
	per := m.Cols / m.format.block() * k.bytes
	pairs := usePairs(m.format)
	var in [maxTileBatch]tileInput
	var rows [maxTileBatch][tileRows]float32
	var pairRows [maxTileBatch][2 * tileRows]float32
	for _, n := range k.batches {
		for ; s+n <= len(xs); s += n {
			for j := range n {
				in[j] = tileInputOf(m, xs[s+j])
			}
			for t := lo / tileRows; t*tileRows < hi; t++ {
				first := max(lo, t*tileRows)
				if pairs && n == 4 && (t+1)*tileRows < hi { // tile t+1 has rows in the span too
					dotTilePair(m.format, unsafe.Pointer(&m.tiles[t*per]), per, &in, &pairRows)
					last := min(hi, (t+2)*tileRows)
					for j := range n {
						copy(outs[s+j][first:last], pairRows[j][first-t*tileRows:last-t*tileRows])
					}
					t++
					continue
				}
				dotTiles(m.format, n, unsafe.Pointer(&m.tiles[t*per]), &in, &rows)
				last := min(hi, (t+1)*tileRows)
				for j := range n {
					copy(outs[s+j][first:last], rows[j][first-t*tileRows:last-t*tileRows])
				}
			}
		}
	}
	for ; s < len(xs); s++ {
		matVecTiles(outs[s], m, xs[s], lo, hi)
	}
}

// maxTileBatch is the most vectors a batched tile kernel takes.
const maxTileBatch = 4

// dotTiles is one tile of format f against the first n of in (a size of
// tileKernels[f].batches), into the first n of out, each vector's result exactly
// dotTile's. The kernels are called directly, not through function
// values, so that in and out stay on the caller's stack.
func dotTiles(f format, n int, tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32) {
	if n == 4 {
		switch {
		case f == formatQ8_0 && haveVNNI:
			q8_0Tile4VNNI(tile, in, out)
		case f == formatQ8_0:
			q8_0Tile4(tile, in, out)
		case f == formatIQ4_NL && haveVNNI:
			iq4NLTile4VNNI(tile, in, out)
		case f == formatIQ4_NL:
			iq4NLTile4(tile, in, out)
		case haveVNNI:
			q4_0Tile4VNNI(tile, in, out)
		default:
			q4_0Tile4(tile, in, out)
		}
		return
	}
	a, b, c, three := &in[0], &in[1], &in[2], (*[3][tileRows]float32)(out[:3])
	switch f {
	case formatQ4_0:
		if haveVNNI {
			q4_0Tile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			q4_0Tile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	case formatQ4_K:
		if haveVNNI {
			q4KTile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			q4KTile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	case formatQ2_K:
		if haveVNNI {
			q2KTile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			q2KTile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	case formatQ3_K:
		if haveVNNI {
			q3KTile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			q3KTile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	case formatQ5_0, formatQ5_1:
		if haveVNNI {
			fiveBitTile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			fiveBitTile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	case formatQ6_K:
		if haveVNNI {
			q6KTile3VNNI(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		} else {
			q6KTile3(tile, a.codes, a.scales, a.sums, b.codes, b.scales, b.sums, c.codes, c.scales, c.sums, a.blocks, three)
		}
	}
}

// dotTile is one tile of format f's eight dot products with x's
// activations, into out; every kernel clears the vector registers'
// upper halves.
func dotTile(f format, tile unsafe.Pointer, x tileInput, out *[tileRows]float32) {
	switch f {
	case formatQ8_0:
		if haveVNNI {
			q8_0Tile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q8_0Tile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ4_0:
		if haveVNNI {
			q4_0Tile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q4_0Tile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ4_1:
		if haveVNNI {
			q4_1Tile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q4_1Tile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ5_0, formatQ5_1:
		if haveVNNI {
			fiveBitTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			fiveBitTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatIQ4_NL:
		if haveVNNI {
			iq4NLTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			iq4NLTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ2_K:
		if haveVNNI {
			q2KTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q2KTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ4_K:
		if haveVNNI {
			q4KTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q4KTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ5_K:
		if haveVNNI {
			q5KTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q5KTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ3_K:
		if haveVNNI {
			q3KTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q3KTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	case formatQ6_K:
		if haveVNNI {
			q6KTile1VNNI(tile, x.codes, x.scales, x.sums, x.blocks, out)
		} else {
			q6KTile1(tile, x.codes, x.scales, x.sums, x.blocks, out)
		}
	}
}

// The assembly tile kernels (gemm_amd64.s). q2KTile1, q3KTile1,
// q4KTile1, q5KTile1 and q6KTile1 are the K-quants': per 256 columns, the
// codes times the activations summed in integers (Q5_K's codes reach 31,
// so its int16 sums take four vectors at a time: 4 × 2 × 31 × 127 fits),
// weighed by each row's group or run scales (VPMADDWD), the mins or the
// codes' offset (Q3_K's −4, Q6_K's −32) taken off with the activations'
// sums of 16, then d·d_x (and dmin·d_x). q4_0Tile1 and q4_1Tile1 are
// Q4_0's and Q4_1's: per group, the nibbles times the activations in
// int16, then into int32, times d_x, and into each row's sum with d (and
// Q4_1's m, or Q4_0's −8, against the group's sum of x). In archsimd they
// compiled to an address computation before every load; the assembly
// folds the loads into the multiply-adds. The Tile3 and Tile4 kernels are
// dotTiles'. The VNNI kernels are the twins a CPU with VNNI takes (the
// same results from the same codes).

//go:noescape
func q8_0Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q8_0Tile4(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func q8_0Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q8_0Tile4VNNI(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func q4_0Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4_0Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4_1Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4_1Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func fiveBitTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func fiveBitTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func iq4NLTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func iq4NLTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func iq4NLTile4(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func iq4NLTile4VNNI(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func q2KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q2KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q3KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q3KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q5KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q5KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q6KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q6KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)

//go:noescape
func q4_0Tile4(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func q4_0Tile4VNNI(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)

//go:noescape
func q4_0Tile4x2Z(tile unsafe.Pointer, tileBytes int, in *[maxTileBatch]tileInput, out *[maxTileBatch][2 * tileRows]float32)

//go:noescape
func iq4NLTile4x2Z(tile unsafe.Pointer, tileBytes int, in *[maxTileBatch]tileInput, out *[maxTileBatch][2 * tileRows]float32)

// tile4Kernel is a four-vector tile kernel (q4_0Tile4VNNI's form), and
// tilePairKernel its 512-bit twin on two tiles, the second tileBytes
// after the first (q4_0Tile4x2Z's).
type (
	tile4Kernel    func(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)
	tilePairKernel func(tile unsafe.Pointer, tileBytes int, in *[maxTileBatch]tileInput, out *[maxTileBatch][2 * tileRows]float32)
)

// usePairs is whether format f's four-vector batches run two tiles a
// call through its 512-bit kernel (dotTilePair): where f has one and the
// timing on this core took it.
func usePairs(f format) bool {
	switch f {
	case formatQ4_0:
		return q4_0Wide().use512
	case formatIQ4_NL:
		return iq4NLWide().use512
	}
	return false
}

// dotTilePair is format f's two-tile kernel (usePairs), called directly:
// through a func value, the arrays passed would escape to the heap on
// every product.
func dotTilePair(f format, tile unsafe.Pointer, tileBytes int, in *[maxTileBatch]tileInput, out *[maxTileBatch][2 * tileRows]float32) {
	if f == formatQ4_0 {
		q4_0Tile4x2Z(tile, tileBytes, in, out)
		return
	}
	iq4NLTile4x2Z(tile, tileBytes, in, out)
}

//go:noescape
func q4_0Tile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q4_0Tile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q4KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q4KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q2KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q2KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q3KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q3KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func fiveBitTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func fiveBitTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q6KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

//go:noescape
func q6KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)

// timeQ4_0Widths times q4_0Tile4VNNI on two tiles against q4_0Tile4x2Z on
// the same two.
func timeQ4_0Widths() kernelWidths { return timeNibbleWidths(q4_0Tile4VNNI, q4_0Tile4x2Z) }

// timeIQ4_NLWidths is timeQ4_0Widths for IQ4_NL's kernels.
func timeIQ4_NLWidths() kernelWidths { return timeNibbleWidths(iq4NLTile4VNNI, iq4NLTile4x2Z) }

// timeNibbleWidths times a four-vector kernel of nibble tiles (Q4_0's
// layout, which IQ4_NL's shares) on two tiles against its two-tile
// 512-bit twin on the same two: 1024 columns (9 KiB of tiles) against
// four vectors.
func timeNibbleWidths(narrow4 tile4Kernel, wide tilePairKernel) kernelWidths {
	if !haveVNNI {
		return kernelWidths{}
	}
	const cols = 1024
	const groups = cols / GroupSize
	per := groups * q4_0TileBytes
	tiles := make([]byte, 2*per)
	for i := range tiles {
		tiles[i] = byte(i * 37)
	}
	for g := range 2 * groups { // every row's d 1.0: no sum a NaN or a denormal
		for r := range tileRows {
			binary.LittleEndian.PutUint16(tiles[g*q4_0TileBytes+q4_0TileNibbles+2*r:], 0x3c00)
		}
	}
	codes := make([]int8, maxTileBatch*cols)
	for i := range codes {
		codes[i] = int8(i%15 - 7)
	}
	scales, sums := make([]float32, maxTileBatch*groups), make([]float32, maxTileBatch*groups)
	var in [maxTileBatch]tileInput
	for j := range in {
		in[j] = tileInput{unsafe.Pointer(&codes[j*cols]), unsafe.Pointer(&scales[j*groups]), unsafe.Pointer(&sums[j*groups]), groups}
	}
	var narrow [maxTileBatch][tileRows]float32
	var wideOut [maxTileBatch][2 * tileRows]float32
	first, second := unsafe.Pointer(&tiles[0]), unsafe.Pointer(&tiles[per])
	return timeWidths(
		func() { narrow4(first, &in, &narrow); narrow4(second, &in, &narrow) },
		func() { wide(first, per, &in, &wideOut) })
}

// Q4_0PromptKernel is F32PromptKernel for Q4_0 matrices: which width
// their prompts run at on this CPU, and the timing that chose it; empty
// where there is no choice (no AVX-512 VNNI).
func Q4_0PromptKernel() string {
	if !haveVNNI {
		return ""
	}
	return q4_0Wide().String()
}

// IQ4_NLPromptKernel is Q4_0PromptKernel for IQ4_NL matrices.
func IQ4_NLPromptKernel() string {
	if !haveVNNI {
		return ""
	}
	return iq4NLWide().String()
}

// tileInputOf is x as m's tile kernel reads it.
func tileInputOf(m *Matrix, x *quantized) tileInput {
	blocks := m.Cols / m.format.block()
	switch {
	case formats[m.format].q8K:
		return tileInput{unsafe.Pointer(&x.kq[:m.Cols][0]), unsafe.Pointer(&x.kscales[:blocks][0]), unsafe.Pointer(&x.ksums[:blocks*16][0]), blocks}
	case m.format == formatQ8_0 || m.format == formatIQ4_NL: // Σx in integers
		return tileInput{unsafe.Pointer(&x.q[:m.Cols][0]), unsafe.Pointer(&x.scales[:blocks][0]), unsafe.Pointer(&x.isums[:blocks][0]), blocks}
	}
	return tileInput{unsafe.Pointer(&x.q[:m.Cols][0]), unsafe.Pointer(&x.scales[:blocks][0]), unsafe.Pointer(&x.sums[:blocks][0]), blocks}
}

// matVecTiles computes rows [lo, hi) of a tiled matrix, a whole tile at a
// time (rows of a tile outside the range are computed and dropped).
func matVecTiles(out []float32, m *Matrix, x *quantized, lo, hi int) {
	k := tileKernels[m.format]
	in := tileInputOf(m, x)
	per := in.blocks * k.bytes
	// Whole tiles store straight into out. A copy goes through memmove,
	// whose SSE moves ran many times slower while the vector registers'
	// upper halves were dirty (12% of a Q4_K_M prefill); the kernels now
	// clear them, and the span's partial tiles, at most two, go through
	// rows.
	var rows [tileRows]float32
	for t := lo / tileRows; t*tileRows < hi; t++ {
		first, last := max(lo, t*tileRows), min(hi, (t+1)*tileRows)
		if last-first == tileRows {
			dotTile(m.format, unsafe.Pointer(&m.tiles[t*per]), in, (*[tileRows]float32)(out[first:last]))
			continue
		}
		dotTile(m.format, unsafe.Pointer(&m.tiles[t*per]), in, &rows)
		copy(out[first:last], rows[first-t*tileRows:last-t*tileRows])
	}
}
