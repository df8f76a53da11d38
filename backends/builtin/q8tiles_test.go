package builtin

import (
	"math/rand/v2"
	"slices"
	"testing"
)

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
