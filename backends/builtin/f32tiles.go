package builtin

import "unsafe"

// f32 tile, for the AVX2 kernels (f32TilesVec, f32Tiles2x6, f32Tiles4x6): eight rows
// interleaved, for each column k the eight rows' weights k side by side
// (32 bytes), so a kernel reads the matrix as one stream from start to
// end, and one FMA serves eight rows. Read row by row, eight rows at a
// time, a 267 MB product against one vector drew 17.5–21.1 GB/s from
// memory where this layout drew 25.4–26.7, as fast as a plain read (by
// turns on one thread, scratch). The tiles replace the rows;
// the count is a multiple of f32TileGroup, the last padded with rows of
// zeros (and tiles of them), as matMatF32's kernels take tiles in groups.
//
// An F16 or BF16 file's matrices keep their 16-bit floats in tiles of
// eight rows too (16 bytes a column), which their kernels widen as they
// read: a decode step reads half the bytes. Where groupHalfTiles says so
// (Zen 4), they lie halfTileGroup tiles to a group with the group's
// columns interleaved: column k of the group's tile i is its 16 bytes at
// 128·k + 16·i, so the 64 rows' weights k are one 128-byte run and the
// decode kernel reads a group as one stream (f16GroupsVec), where four
// tiles one after another are four. Either way the tile count is a
// multiple of halfTileGroup, padded with tiles of zeros.

// halfTileGroup is how many half tiles lie interleaved as one group.
const halfTileGroup = 8

// halfGroupRows is how many rows a group of half tiles holds.
const halfGroupRows = halfTileGroup * tileRows

// f32TileBytes is the size of one f32 tile of cols columns.
func f32TileBytes(cols int) int { return 4 * tileRows * cols }

// tileBytes is the size of one of m's f32 tiles: of floats, or halves.
func (m *Matrix) tileBytes() int {
	if m.half != notHalf {
		return f32TileBytes(m.Cols) / 2
	}
	return f32TileBytes(m.Cols)
}

// tileStride is how far a tile's column is from the next tile's same
// column in m's tiles, which the multi-vector kernels step by: a tile's
// size, or within a group of half tiles a column of a tile (16 bytes).
func (m *Matrix) tileStride() int {
	if m.groupedHalves {
		return 2 * tileRows
	}
	return m.tileBytes()
}

// columnStep is how far a tile's column is from its next one: a column
// of a tile, or of a group of half tiles (128 bytes).
func (m *Matrix) columnStep() int {
	if m.groupedHalves {
		return 2 * halfGroupRows
	}
	return m.tileBytes() / m.Cols
}

// unitRows is how many rows lie interleaved in m's tiles: a tile's, or a
// group's of half tiles.
func (m *Matrix) unitRows() int {
	if m.groupedHalves {
		return halfGroupRows
	}
	return tileRows
}

// f32TilesSize is the size of the tiles of a rows × cols f32 matrix, of
// floats (whole groups of f32TileGroup tiles) or of halves (whole groups
// of halfTileGroup, a multiple of f32TileGroup).
func f32TilesSize(rows, cols int, halves bool) int {
	group, size := f32TileGroup, f32TileBytes(cols)
	if halves {
		group, size = halfTileGroup, size/2
	}
	return (tileCount(rows) + group - 1) / group * group * size
}

// makeF32Tiles lays an f32 matrix's rows, or an F16 or BF16 tensor's
// halves, out as tiles taken from mem (of floats or of halves, as the
// matrix's half says), handing the stored bytes of each run of copiedRun
// rows to copied (when not nil) once the tiles hold it: a mapped file's
// pages then go back as the tiles fill, where handed back a matrix at a
// time, the largest (a vocabulary's classifier, 1 GiB for Llama 3.2's)
// was resident twice at the peak.
func makeF32Tiles(m *Matrix, mem *tileMemory, copied func(stored []byte)) *Matrix {
	halves := m.halves != nil
	tiled := &Matrix{Rows: m.Rows, Cols: m.Cols, tiles: mem.take(f32TilesSize(m.Rows, m.Cols, halves)), half: m.half,
		bf16Products: m.bf16Products, groupedHalves: halves && groupHalfTiles}
	out := tiled.tiles
	if halves {
		layTiles(unsafe.Slice((*uint16)(unsafe.Pointer(&out[0])), len(out)/2),
			unsafe.Slice((*uint16)(unsafe.Pointer(&m.halves[0])), len(m.halves)/2), m.halves, m.Rows, m.Cols, tiled.unitRows(), copied)
	} else {
		layTiles(unsafe.Slice((*float32)(unsafe.Pointer(&out[0])), len(out)/4), m.F32, bytesOf(m.F32), m.Rows, m.Cols, tileRows, copied)
	}
	return tiled
}

// layTiles lays rows (rows × cols values, stored as the bytes stored) out
// as makeF32Tiles's tiles, height rows interleaved (a tile's, or a
// group's of half tiles), handing each run of copiedRun rows to copied.
func layTiles[V float32 | uint16](tiles, values []V, stored []byte, rows, cols, height int, copied func(stored []byte)) {
	size := int(unsafe.Sizeof(values[0]))
	for row := range rows {
		t, r := row/height, row%height
		tile := tiles[t*height*cols:]
		for k, w := range values[row*cols : (row+1)*cols] {
			tile[k*height+r] = w
		}
		if end := row + 1; copied != nil && (end%copiedRun == 0 || end == rows) {
			copied(stored[(end-1)/copiedRun*copiedRun*cols*size : end*cols*size])
		}
	}
}

// bytesOf views f's memory as bytes.
func bytesOf(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// tileMemory is the one allocation a model's f32 tiles are laid out in,
// back to back from a huge page's start, asking the kernel for huge pages
// over all of it (hugePaged). Decode reads every tile once a token, and
// huge pages took f32's decode up 3–8% on the development VM. Allocated a
// matrix at a time, only the whole huge pages inside each could be huge:
// 58–61% of stories110M's f32 tiles, whose attention matrices (2.25 MiB
// each) held one or none. A quantized matrix's tiles are made as the
// file loads, before the next matrix is read, each hugePaged on its own.
type tileMemory struct {
	size int    // what every take together asks for
	all  []byte // made at the first take
	free []byte // what is left of all
}

// take is the next n bytes of t. Where t is nil (a matrix tiled alone,
// as tests do) or has fewer than n left, the n bytes are an allocation
// of their own.
func (t *tileMemory) take(n int) []byte {
	if t != nil && t.all == nil {
		t.all = hugePaged(t.size)
		t.free = t.all
	}
	if t == nil || n > len(t.free) {
		return hugePaged(n)
	}
	b := t.free[:n:n]
	t.free = t.free[n:]
	return b
}

// hugePaged is n bytes for tiles, asking for huge pages over the whole
// ones they span (adviseHugePages). n bytes of a huge page or more start
// at a huge page's start: unaligned, they could span one whole huge page
// fewer, which for a 2–4 MiB matrix is none. The allocation then
// holds up to a huge page more around them, whose pages are handed back
// (releasePages), so what is resident is the tiles alone.
func hugePaged(n int) []byte {
	if n < hugePageBytes {
		return make([]byte, n)
	}
	b := make([]byte, n+hugePageBytes)
	start := toBoundary(b, hugePageBytes)
	releasePages(b[:start])
	releasePages(b[start+n:])
	b = b[start : start+n : start+n]
	adviseHugePages(b)
	return b
}

// copiedRun is how many rows makeF32Tiles copies between calls of its
// copied: a few MiB of a wide matrix.
const copiedRun = 512

// f32RowsOfTiles copies an f32 matrix's rows out of its tiles.
func f32RowsOfTiles(m *Matrix) []float32 {
	out := make([]float32, m.Rows*m.Cols)
	for row := range m.Rows {
		m.f32RowInto(out[row*m.Cols:(row+1)*m.Cols], row)
	}
	return out
}

// f32RowInto copies row r of a tiled f32 matrix into x.
func (m *Matrix) f32RowInto(x []float32, r int) {
	if m.half != notHalf {
		height := m.unitRows()
		unit := m.tiles[2*(r/height*height*m.Cols):]
		for k := range m.Cols {
			m.half.widen(x[k:k+1], unit[2*(k*height+r%height):])
		}
		return
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&m.tiles[0])), len(m.tiles)/4)
	tile := f[r/tileRows*tileRows*m.Cols:]
	for k := range m.Cols {
		x[k] = tile[k*tileRows+r%tileRows]
	}
}
