package builtin

import (
	"encoding/binary"
	"unsafe"
)

// Q8_0 tile, per group of 32 columns (q8_0TileBytes), for the tile
// kernels (tiles_simd.go):
//   - 256 bytes of codes, each as u = w+128 (0…255, so VPDPBUSD meets the
//     activations' signed codes without a sign trick; the AVX2 kernels
//     flip the top bit back): weights 4t…4t+3
//     of rows 0…7 in bytes 32t…32t+31, row r at 32t+4r;
//   - 8 halves d, row r at r, as the blocks hold them (the engine's own
//     quantizer rounds d to a half, as llama-quantize does).
//
// 34 bytes a row per group, the blocks' own size and less than the rows'
// (a float32 scale and 32 codes), so a tiled Q8_0 matrix keeps its tiles
// alone.
const (
	q8_0TileCodes = tileRows * GroupSize
	q8_0TileBytes = q8_0TileCodes + 2*tileRows
)

// makeQ8_0Tiles lays a Q8_0 matrix's rows out as tiles, the last padded
// with rows of zeros (codes 128 and d 0).
func makeQ8_0Tiles(m *Matrix) []byte {
	return q8_0Tiles(m.Rows, m.Cols, func(row, g int) (uint16, []byte) {
		scales, codes := m.groupRow(row)
		return f32ToF16(scales[g]), codes[g*GroupSize:]
	})
}

// q8_0TilesOfBlocks lays a GGUF's Q8_0 blocks (a half, then 32 codes) out
// as the same tiles, straight from the file: through the engine's rows
// they were a third copy of the matrix at the load's peak.
func q8_0TilesOfBlocks(raw []byte, rows, cols int) []byte {
	groups, block := cols/GroupSize, formatQ8_0.fileBlockBytes()
	return q8_0Tiles(rows, cols, func(row, g int) (uint16, []byte) {
		b := raw[(row*groups+g)*block:]
		return le16(b), b[2:]
	})
}

// q8_0Tiles lays out rows × cols Q8_0 weights, group g of row r being
// group(r, g)'s half scale and codes.
func q8_0Tiles(rows, cols int, group func(row, g int) (d uint16, codes []byte)) []byte {
	groups := cols / GroupSize
	out := hugePaged(tileCount(rows) * groups * q8_0TileBytes)
	for i := range out {
		out[i] = 128
	}
	for row := range tileCount(rows) * tileRows {
		t, r := row/tileRows, row%tileRows
		for g := range groups {
			tile := out[(t*groups+g)*q8_0TileBytes:][:q8_0TileBytes]
			var d uint16
			if row < rows {
				var codes []byte
				d, codes = group(row, g)
				// Four codes at a time, as the tile keeps them side by
				// side (a code at a time took 1.9 s of a 1.3 GB file's
				// load).
				for w := 0; w < GroupSize; w += 4 {
					u := binary.LittleEndian.Uint32(codes[w:]) ^ 0x80808080
					binary.LittleEndian.PutUint32(tile[byteCodeAt(r, w):], u)
				}
			}
			binary.LittleEndian.PutUint16(tile[q8_0TileCodes+2*r:], d)
		}
	}
	return out
}

// withRows is m with its rows: an F16 or BF16 tensor's halves widened,
// a tiled f32 or Q8_0 matrix, which keeps no rows, copied out of its
// tiles, and every other matrix as it is.
func (m *Matrix) withRows() *Matrix {
	switch {
	case m.halves != nil:
		rows := make([]float32, m.Rows*m.Cols)
		m.half.widen(rows, m.halves)
		widened := NewF32(m.Rows, m.Cols, rows)
		widened.bf16Products = m.bf16Products
		return widened
	case m.format == formatF32 && m.F32 == nil && m.tiles != nil:
		rows := NewF32(m.Rows, m.Cols, f32RowsOfTiles(m))
		rows.bf16Products = m.bf16Products
		return rows
	case m.format != formatQ8_0 || m.quant != nil:
		return m
	}
	groups := m.Cols / GroupSize
	q := newQuantMatrix(formatQ8_0, m.Rows, m.Cols)
	for row := range m.Rows {
		t, r := row/tileRows, row%tileRows
		scales, values := q.q8Row(row)
		for g := range groups {
			tile := m.tiles[(t*groups+g)*q8_0TileBytes:][:q8_0TileBytes]
			scales[g] = f16ToF32(le16(tile[q8_0TileCodes+2*r:]))
			for w := range GroupSize {
				values[g*GroupSize+w] = int8(tile[byteCodeAt(r, w)] ^ 0x80)
			}
		}
	}
	return q
}

// byteCodeAt is where a tile that holds a byte a weight keeps weight w
// of row r: four weights of each of the eight rows to 32 bytes.
func byteCodeAt(r, w int) int { return w/4*32 + 4*r + w%4 }

// tileCount is how many tiles cover rows rows, the last padded with rows
// of zeros.
func tileCount(rows int) int { return (rows + tileRows - 1) / tileRows }

func putFloat(b []byte, f float32) { *(*float32)(unsafe.Pointer(&b[0])) = f }
