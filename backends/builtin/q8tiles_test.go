package builtin

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// Tiles laid out straight from a file's Q8_0 blocks are the tiles of the
// rows the loader converts those blocks to, padding included.
func TestQ8_0TilesOfBlocksAreTheRowsTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 28))
	rows, cols := 13, 96
	m, err := randomMatrix(rng, rows, cols).Quantize()
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for r := range rows {
		scales, codes := m.groupRow(r)
		for g, d := range scales {
			raw = binary.LittleEndian.AppendUint16(raw, f32ToF16(d))
			raw = append(raw, codes[g*GroupSize:(g+1)*GroupSize]...)
		}
	}
	converted := (&tensorLoader{}).matrixOf(GGUFTensor{Type: ggmlQ8_0}, raw, rows, cols)
	if !slices.Equal(converted.quant, m.quant) {
		t.Fatal("the blocks written do not convert back to the rows")
	}
	if !slices.Equal(q8_0TilesOfBlocks(raw, rows, cols), makeQ8_0Tiles(m)) {
		t.Error("the tiles of the blocks differ from the tiles of the rows")
	}
}

// A Q8_0 matrix's tiles hold its rows exactly: copied back out they are
// the rows, scales and codes, and the rows that pad the last tile weigh
// nothing (d 0).
func TestQ8_0TilesHoldTheRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 27))
	rows, cols := 27, 96
	m, err := randomMatrix(rng, rows, cols).Quantize()
	if err != nil {
		t.Fatal(err)
	}
	tiled := &Matrix{Rows: rows, Cols: cols, format: formatQ8_0, tiles: makeQ8_0Tiles(m)}
	if got, want := len(tiled.tiles), 4*cols/GroupSize*q8_0TileBytes; got != want {
		t.Fatalf("%d bytes of tiles for %d rows, want %d (four tiles)", got, rows, want)
	}
	back := tiled.withRows()
	if !slices.Equal(back.quant, m.quant) {
		t.Fatal("the rows copied out of the tiles differ from the rows tiled")
	}
	if got := tiled.Dequantize().F32; !slices.Equal(got, m.Dequantize().F32) {
		t.Error("a tiled matrix dequantizes to other values than its rows")
	}
	last := tiled.tiles[len(tiled.tiles)-q8_0TileBytes:]
	for r := rows % tileRows; r < tileRows; r++ {
		if d := last[q8_0TileCodes+2*r : q8_0TileCodes+2*r+2]; !slices.Equal(d, []byte{0, 0}) {
			t.Errorf("padding row %d has d bytes %v, want 0", r, d)
		}
		if code := last[byteCodeAt(r, 5)]; code != 128 {
			t.Errorf("padding row %d has code %d, want 128 (w = 0)", r, code)
		}
	}
}
