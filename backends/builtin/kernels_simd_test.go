//go:build goexperiment.simd && amd64

package builtin

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// Attention's row kernel (dotRows) is held to the references with the
// matrix kernels, on every shape, and so are Q8_0's tiles on a CPU with
// VNNI (a copy of the matrix tiled, as the loader tiles it).
func init() {
	if !haveAVX2 {
		return
	}
	f32Kernels["rows"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		dotRowsVector(out, m.F32, x, lo, hi, m.Cols, m.Cols, dotAVX2)
	}
	if !haveVNNI {
		return
	}
	tiled := map[*Matrix]*Matrix{} // so that benchmarks time the product alone
	q8Kernels["tiles"] = func(out []float32, m *Matrix, x *quantized, lo, hi int) {
		if tiled[m] == nil {
			tiled[m] = withTiles(&Matrix{Rows: m.Rows, Cols: m.Cols, format: formatQ8_0, quant: m.quant})
		}
		matVecTiles(out, tiled[m], x, lo, hi)
	}
}

func TestKernelNameSaysWhatRuns(t *testing.T) {
	if strings.Contains(KernelName, "AVX2") != haveAVX2 || strings.Contains(KernelName, "VNNI") != haveVNNI {
		t.Errorf("KernelName %q, AVX2 in use: %v, VNNI: %v", KernelName, haveAVX2, haveVNNI)
	}
}

// Each VNNI kernel sums the same integers as its AVX2 twin, so their
// results are equal bit for bit: on random weights, and on extreme codes
// (weights and activations all ±max: Q4_0 and Q4_K nibbles 0 and 15,
// Q6_K codes at their ends, against activations ±127).
func TestVNNIKernelsMatchTheirAVX2TwinsBitForBit(t *testing.T) {
	if !haveVNNI {
		t.Skip("this CPU has no AVX512_VNNI with AVX512VL")
	}
	rng := rand.New(rand.NewPCG(7, 37))
	const rows, cols = 16, 256
	extreme := func(v []float32, hi float32) {
		for i := range v {
			v[i] = hi
			if i%3 == 1 {
				v[i] = -hi
			}
		}
	}
	for _, extremes := range []bool{false, true} {
		w := randomMatrix(rng, rows, cols)
		xs, _ := randomBatch(rng, 4, rows, cols)
		if extremes {
			extreme(w.F32, 1)
			for _, x := range xs {
				v := make([]float32, cols)
				extreme(v, 1)
				x.quantize(v, allForms)
			}
		}
		// The AVX2 kernels read each four codes repeated eight times, the
		// VNNI ones the plain codes.
		q4 := quantizeTo(t, ggmlQ4_0, w)
		var in, v [maxTileBatch]tileInput
		for j := range 4 {
			v[j] = tileInputOf(q4, xs[j])
			in[j] = v[j]
			in[j].bcast = unsafe.Pointer(&xs[j].bcast[0])
		}
		per := in[0].blocks * q4_0TileBytes
		for tile := range rows / tileRows {
			p := unsafe.Pointer(&q4.tiles[tile*per])
			var one, oneVNNI [tileRows]float32
			q4_0Tile1(p, in[0].bcast, in[0].scales, in[0].sums, in[0].blocks, &one)
			q4_0Tile1VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[0].blocks, &oneVNNI)
			var three, threeVNNI [3][tileRows]float32
			q4_0Tile3(p, in[0].bcast, in[0].scales, in[0].sums, in[1].bcast, in[1].scales, in[1].sums, in[2].bcast, in[2].scales, in[2].sums, in[0].blocks, &three)
			q4_0Tile3VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[1].bcast, v[1].scales, v[1].sums, v[2].bcast, v[2].scales, v[2].sums, v[0].blocks, &threeVNNI)
			var four, fourVNNI [maxTileBatch][tileRows]float32
			q4_0Tile4(p, &in, &four)
			q4_0Tile4VNNI(p, &v, &fourVNNI)
			if one != oneVNNI || three != threeVNNI || four != fourVNNI {
				t.Fatalf("Q4_0 tile %d (extremes %v): %v %v %v, VNNI %v %v %v", tile, extremes, one, three, four, oneVNNI, threeVNNI, fourVNNI)
			}
		}

		q4K := quantizeTo(t, ggmlQ4_K, w)
		for j := range 3 {
			v[j] = tileInputOf(q4K, xs[j])
			in[j] = v[j]
			in[j].bcast = unsafe.Pointer(&xs[j].kbcast[0])
		}
		per = in[0].blocks * q4KTileBytes
		for tile := range rows / tileRows {
			p := unsafe.Pointer(&q4K.tiles[tile*per])
			var one, oneVNNI [tileRows]float32
			q4KTile1(p, in[0].bcast, in[0].scales, in[0].sums, in[0].blocks, &one)
			q4KTile1VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[0].blocks, &oneVNNI)
			var three, threeVNNI [3][tileRows]float32
			q4KTile3(p, in[0].bcast, in[0].scales, in[0].sums, in[1].bcast, in[1].scales, in[1].sums, in[2].bcast, in[2].scales, in[2].sums, in[0].blocks, &three)
			q4KTile3VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[1].bcast, v[1].scales, v[1].sums, v[2].bcast, v[2].scales, v[2].sums, v[0].blocks, &threeVNNI)
			if one != oneVNNI || three != threeVNNI {
				t.Fatalf("Q4_K tile %d (extremes %v): %v %v, VNNI %v %v", tile, extremes, one, three, oneVNNI, threeVNNI)
			}
		}

		q6K := quantizeTo(t, ggmlQ6_K, w)
		for j := range 3 {
			v[j] = tileInputOf(q6K, xs[j])
			in[j] = v[j]
			in[j].bcast = unsafe.Pointer(&xs[j].kbcast[0])
		}
		per = in[0].blocks * q6KTileBytes
		for tile := range rows / tileRows {
			p := unsafe.Pointer(&q6K.tiles[tile*per])
			var one, oneVNNI [tileRows]float32
			q6KTile1(p, in[0].bcast, in[0].scales, in[0].sums, in[0].blocks, &one)
			q6KTile1VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[0].blocks, &oneVNNI)
			var three, threeVNNI [3][tileRows]float32
			q6KTile3(p, in[0].bcast, in[0].scales, in[0].sums, in[1].bcast, in[1].scales, in[1].sums, in[2].bcast, in[2].scales, in[2].sums, in[0].blocks, &three)
			q6KTile3VNNI(p, v[0].bcast, v[0].scales, v[0].sums, v[1].bcast, v[1].scales, v[1].sums, v[2].bcast, v[2].scales, v[2].sums, v[0].blocks, &threeVNNI)
			if one != oneVNNI || three != threeVNNI {
				t.Fatalf("Q6_K tile %d (extremes %v): %v %v, VNNI %v %v", tile, extremes, one, three, oneVNNI, threeVNNI)
			}
		}
	}
}
