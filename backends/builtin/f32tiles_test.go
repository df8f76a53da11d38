package builtin

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// An f32 matrix's tiles hold its rows exactly: copied back out (withRows,
// Dequantize, a row at a time) they are the rows, and the rows padding the
// tiles to a whole group (f32TileGroup) are zeros.
func TestF32TilesHoldTheRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 28))
	rows, cols := 19, 13 // three tiles, padded to a whole group
	tiles := (3 + f32TileGroup - 1) / f32TileGroup * f32TileGroup
	m := randomMatrix(rng, rows, cols)
	tiled := &Matrix{Rows: rows, Cols: cols, tiles: makeF32Tiles(m, nil, nil).tiles}
	if got, want := len(tiled.tiles), tiles*f32TileBytes(cols); got != want {
		t.Fatalf("%d bytes of tiles for %d rows, want %d (%d tiles)", got, rows, want, tiles)
	}
	if !slices.Equal(tiled.withRows().F32, m.F32) || !slices.Equal(tiled.Dequantize().F32, m.F32) {
		t.Fatal("the rows copied out of the tiles differ from the rows tiled")
	}
	row := make([]float32, cols)
	for r := range rows {
		if tiled.f32RowInto(row, r); !slices.Equal(row, m.F32[r*cols:(r+1)*cols]) {
			t.Fatalf("row %d out of the tiles %v, tiled %v", r, row, m.F32[r*cols:(r+1)*cols])
		}
	}
	padded := &Matrix{Rows: tiles * tileRows, Cols: cols, tiles: tiled.tiles}
	for r := rows; r < padded.Rows; r++ {
		if padded.f32RowInto(row, r); slices.ContainsFunc(row, func(w float32) bool { return w != 0 }) {
			t.Errorf("padding row %d is %v, want zeros", r, row)
		}
	}
	// Quantized, the tiles give the rows' Q8_0 (--dtype after tiling).
	m = randomMatrix(rng, 9, 64)
	want, _ := m.Quantize()
	got, err := (&Matrix{Rows: 9, Cols: 64, tiles: makeF32Tiles(m, nil, nil).tiles}).Quantize()
	if err != nil || !slices.Equal(got.quant, want.quant) {
		t.Errorf("tiles quantized: %v, equal to the rows' Q8_0: %v", err, err == nil && slices.Equal(got.quant, want.quant))
	}
}

// makeF32Tiles hands each run of copiedRun rows to copied, in order and
// each row once, only when the tiles hold it: a run cleared as it is
// handed back (as a mapped file's pages go back) is still whole in the
// tiles.
func TestF32TilesHandEachRunBackOnceTiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 29))
	rows, cols := 2*copiedRun+6, 3
	m := randomMatrix(rng, rows, cols)
	want := slices.Clone(m.F32)
	var handed []float32
	var ends []int
	tiled := makeF32Tiles(m, nil, func(run []byte) {
		handed = append(handed, floatsOf(run)...)
		ends = append(ends, len(handed)/cols)
		clear(run)
	})
	if !slices.Equal(handed, want) {
		t.Fatal("the runs handed back are not the rows, each once, in order")
	}
	if wantEnds := []int{copiedRun, 2 * copiedRun, rows}; !slices.Equal(ends, wantEnds) {
		t.Errorf("runs ended at rows %v, want %v", ends, wantEnds)
	}
	if !slices.Equal(tiled.withRows().F32, want) {
		t.Error("a run was handed back before the tiles held it")
	}
}

// An F16 or BF16 tensor's halves are laid out as tiles of halves, which
// hold the values the halves stand for (values both kinds hold exactly,
// so what they stand for is known without widening), in whole groups of
// halfTileGroup tiles whose padding is zeros, one after another or
// interleaved, and each run of halves is handed back once tiled, as a
// mapped file's are.
func TestF32TilesOfHalves(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		layHalvesGrouped(t, grouped)
		checkTilesOfHalves(t, grouped)
	}
}

// layHalvesGrouped has half tiles laid out in groups, or not, for the
// rest of tb (groupHalfTiles).
func layHalvesGrouped(tb testing.TB, grouped bool) {
	chosen := groupHalfTiles
	tb.Cleanup(func() { groupHalfTiles = chosen })
	groupHalfTiles = grouped
}

// checkTilesOfHalves is TestF32TilesOfHalves's checks with the layout
// grouped or not.
func checkTilesOfHalves(t *testing.T, grouped bool) {
	rng := rand.New(rand.NewPCG(8, 30))
	rows, cols := copiedRun+9, 5
	for _, kind := range []halfKind{ieeeHalf, bfloat16} {
		want := make([]float32, rows*cols)
		for i := range want {
			want[i] = float32(rng.IntN(256)-128) / 64 // seven bits and a sign
		}
		halves := halfBytes(kind, want)
		m := &Matrix{Rows: rows, Cols: cols, halves: slices.Clone(halves), half: kind}
		if !slices.Equal(m.withRows().F32, want) {
			t.Fatalf("%s: the halves widened to rows are not the values they stand for", kind)
		}
		var handed []byte
		tiled := makeF32Tiles(m, nil, func(run []byte) {
			handed = append(handed, run...)
			clear(run)
		})
		groups := (rows + halfGroupRows - 1) / halfGroupRows // padded with tiles of zeros
		if want := groups * halfGroupRows * cols * 2; tiled.half != kind || tiled.groupedHalves != grouped || len(tiled.tiles) != want {
			t.Fatalf("%s: tiles of %d bytes of %s, grouped %v; want %d (%d groups of %d rows), grouped %v",
				kind, len(tiled.tiles), tiled.half, tiled.groupedHalves, want, groups, halfGroupRows, grouped)
		}
		if !slices.Equal(handed, halves) {
			t.Errorf("%s: the runs handed back are not the halves, each once, in order", kind)
		}
		if !slices.Equal(tiled.withRows().F32, want) {
			t.Errorf("%s: the tiles do not hold the values the halves stand for", kind)
		}
		padded, row := &Matrix{Rows: groups * halfGroupRows, Cols: cols, tiles: tiled.tiles, half: kind, groupedHalves: grouped}, make([]float32, cols)
		for r := rows; r < padded.Rows; r++ {
			if padded.f32RowInto(row, r); slices.ContainsFunc(row, func(w float32) bool { return w != 0 }) {
				t.Fatalf("%s: padding row %d is %v, want zeros", kind, r, row)
			}
		}
	}
}
