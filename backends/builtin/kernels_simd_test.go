//go:build goexperiment.simd && amd64

package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Attention's row kernel (dotRows) is held to the references with the
// matrix kernels, on every shape, and so are the f32 tiles and Q8_0's (a
// copy of the matrix tiled, as the loader tiles it).
func init() {
	if !haveAVX2 {
		return
	}
	f32Kernels["rows"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		dotRows(out, m.F32, x, lo, hi, m.Cols, m.Cols)
	}
	tiled := map[*Matrix]*Matrix{} // so that benchmarks time the product alone
	f32Kernels["tiles"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		if tiled[m] == nil {
			tiled[m] = withTiles(m, nil, nil)
		}
		matVecF32(out, tiled[m], x, lo, hi)
	}
	q8Kernels["tiles"] = func(out []float32, m *Matrix, x *quantized, lo, hi int) {
		if tiled[m] == nil {
			tiled[m] = withTiles(&Matrix{Rows: m.Rows, Cols: m.Cols, format: formatQ8_0, quant: m.quant}, nil, nil)
		}
		matVecTiles(out, tiled[m], x, lo, hi)
	}
}

func TestKernelNameSaysWhatRuns(t *testing.T) {
	if strings.HasPrefix(KernelName, "AVX2") != haveAVX2 || strings.Contains(KernelName, "VNNI") != haveVNNI { // the portable name says it lacks AVX2
		t.Errorf("KernelName %q, AVX2 in use: %v, VNNI: %v", KernelName, haveAVX2, haveVNNI)
	}
}

// Each VNNI kernel sums the same integers as its AVX2 twin, so their
// results are equal bit for bit: on random weights, and on extreme codes
// (weights and activations all ±max: Q4_0 and Q4_K nibbles 0 and 15,
// Q6_K codes at their ends, Q8_0 codes down to −128, against activations
// ±127).
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
		q4 := quantizeTo(t, ggmlQ4_0, w)
		twinsAgree(t, fmt.Sprintf("Q4_0, extremes %v", extremes), q4, xs, q4_0Tile1, q4_0Tile1VNNI, q4_0Tile3, q4_0Tile3VNNI)
		fourTwinsAgree(t, fmt.Sprintf("Q4_0, extremes %v", extremes), q4, xs, q4_0Tile4, q4_0Tile4VNNI)
		q8 := quantizeTo(t, ggmlQ8_0, w)
		q8_0TwinsAgree(t, fmt.Sprintf("Q8_0, extremes %v", extremes), q8, xs)
		// −128, which no quantizer writes but a file may hold (u = 0).
		low := &Matrix{Rows: q8.Rows, Cols: q8.Cols, format: formatQ8_0, tiles: slices.Clone(q8.tiles)}
		for g := 0; g < len(low.tiles); g += q8_0TileBytes {
			for i := 0; i < q8_0TileCodes; i += 3 {
				low.tiles[g+i] = 0
			}
		}
		q8_0TwinsAgree(t, fmt.Sprintf("Q8_0 with −128, extremes %v", extremes), low, xs)
		q4K := quantizeTo(t, ggmlQ4_K, w)
		q4KTwinsAgree(t, fmt.Sprintf("Q4_K, extremes %v", extremes), q4K, xs)
		// Every six-bit scale and min, their top bits among them, which
		// the compact tile's kernels unpack themselves.
		scaled := &Matrix{Rows: q4K.Rows, Cols: q4K.Cols, format: formatQ4_K, quant: slices.Clone(q4K.quant)}
		for b := 0; b < len(scaled.quant); b += formatQ4_K.fileBlockBytes() {
			for i := range 12 {
				scaled.quant[b+4+i] = byte(rng.Uint32())
			}
		}
		q4KTwinsAgree(t, fmt.Sprintf("Q4_K, every scale, extremes %v", extremes), scaled, xs)
		q6 := quantizeTo(t, ggmlQ6_K, w)
		twinsAgree(t, fmt.Sprintf("Q6_K, extremes %v", extremes), q6, xs, q6KTile1, q6KTile1VNNI, q6KTile3, q6KTile3VNNI)
		twinsAgree(t, fmt.Sprintf("Q5_K, extremes %v", extremes), quantizeTo(t, ggmlQ5_K, w), xs, q5KTile1, q5KTile1VNNI, nil, nil)
		twinsAgree(t, fmt.Sprintf("Q2_K, extremes %v", extremes), quantizeTo(t, ggmlQ2_K, w), xs, q2KTile1, q2KTile1VNNI, q2KTile3, q2KTile3VNNI)
		twinsAgree(t, fmt.Sprintf("Q4_1, extremes %v", extremes), quantizeTo(t, ggmlQ4_1, w), xs, q4_1Tile1, q4_1Tile1VNNI, nil, nil)
		twinsAgree(t, fmt.Sprintf("Q5_0, extremes %v", extremes), quantizeTo(t, ggmlQ5_0, w), xs, fiveBitTile1, fiveBitTile1VNNI, fiveBitTile3, fiveBitTile3VNNI)
		twinsAgree(t, fmt.Sprintf("Q5_1, extremes %v", extremes), quantizeTo(t, ggmlQ5_1, w), xs, fiveBitTile1, fiveBitTile1VNNI, fiveBitTile3, fiveBitTile3VNNI)
		iq4 := quantizeTo(t, ggmlIQ4_NL, w)
		twinsAgree(t, fmt.Sprintf("IQ4_NL, extremes %v", extremes), iq4, xs, iq4NLTile1, iq4NLTile1VNNI, nil, nil)
		fourTwinsAgree(t, fmt.Sprintf("IQ4_NL, extremes %v", extremes), iq4, xs, iq4NLTile4, iq4NLTile4VNNI)
		q3 := quantizeTo(t, ggmlQ3_K, w)
		twinsAgree(t, fmt.Sprintf("Q3_K, extremes %v", extremes), q3, xs, q3KTile1, q3KTile1VNNI, q3KTile3, q3KTile3VNNI)
		// The tests' encoder writes no negative scale; llama-quantize's do.
		signed := &Matrix{Rows: q3.Rows, Cols: q3.Cols, format: formatQ3_K, quant: slices.Clone(q3.quant)}
		for b := 0; b < len(signed.quant); b += formatQ3_K.fileBlockBytes() {
			for i := range 12 {
				signed.quant[b+96+i] = byte(rng.Uint32())
			}
		}
		twinsAgree(t, fmt.Sprintf("Q3_K, every scale, extremes %v", extremes), withTiles(signed, nil, nil), xs, q3KTile1, q3KTile1VNNI, q3KTile3, q3KTile3VNNI)
	}
}

// q8_0TwinsAgree holds Q8_0's AVX2 tile kernels to their VNNI twins.
func q8_0TwinsAgree(t *testing.T, name string, m *Matrix, xs []*quantized) {
	t.Helper()
	twinsAgree(t, name, m, xs, q8_0Tile1, q8_0Tile1VNNI, nil, nil)
	fourTwinsAgree(t, name, m, xs, q8_0Tile4, q8_0Tile4VNNI)
}

// fourTwinsAgree holds a format's four-vector VNNI kernel to its AVX2
// twin, bit for bit, on every tile of m.
func fourTwinsAgree(t *testing.T, name string, m *Matrix, xs []*quantized, four, fourVNNI tileKernel4) {
	t.Helper()
	in := tileInputs(m, xs)
	per := len(m.tiles) / tileCount(m.Rows)
	for tile := range tileCount(m.Rows) {
		var a, b [maxTileBatch][tileRows]float32
		four(unsafe.Pointer(&m.tiles[tile*per]), &in, &a)
		fourVNNI(unsafe.Pointer(&m.tiles[tile*per]), &in, &b)
		if a != b {
			t.Fatalf("%s, four vectors, tile %d: %v, VNNI %v", name, tile, a, b)
		}
	}
}

// q4KTwinsAgree holds Q4_K's VNNI kernels, which read the compact tile
// (the blocks' packed scales), to the AVX2 kernels on the byte-scale
// tile, bit for bit, on every tile of m.
func q4KTwinsAgree(t *testing.T, name string, m *Matrix, xs []*quantized) {
	t.Helper()
	twinsAgreeOn(t, name, m, makeTiles(m, q4KByteScaleTiles), makeTiles(m, q4KCompactTiles), xs, q4KTile1, q4KTile1VNNI, q4KTile3, q4KTile3VNNI)
}

type (
	tileKernel1 func(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[tileRows]float32)
	tileKernel3 func(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][tileRows]float32)
	tileKernel4 func(tile unsafe.Pointer, in *[maxTileBatch]tileInput, out *[maxTileBatch][tileRows]float32)
)

// tileInputs is xs as m's tile kernels read them, the AVX2 kernels and
// their VNNI twins alike.
func tileInputs(m *Matrix, xs []*quantized) (in [maxTileBatch]tileInput) {
	for j := range maxTileBatch {
		in[j] = tileInputOf(m, xs[j])
	}
	return in
}

// twinsAgree holds the one- and three-vector VNNI kernels of m's format
// (three nil for a format without a three-vector kernel) to their AVX2
// twins, bit for bit, on every tile of m.
func twinsAgree(t *testing.T, name string, m *Matrix, xs []*quantized, one, oneVNNI tileKernel1, three, threeVNNI tileKernel3) {
	t.Helper()
	twinsAgreeOn(t, name, m, m.tiles, m.tiles, xs, one, oneVNNI, three, threeVNNI)
}

// twinsAgreeOn is twinsAgree for a format whose VNNI kernels read tiles of
// their own layout (vnniTiles) where the AVX2 kernels read avx2Tiles.
func twinsAgreeOn(t *testing.T, name string, m *Matrix, avx2Tiles, vnniTiles []byte, xs []*quantized, one, oneVNNI tileKernel1, three, threeVNNI tileKernel3) {
	t.Helper()
	in := tileInputs(m, xs)
	per, perVNNI := len(avx2Tiles)/tileCount(m.Rows), len(vnniTiles)/tileCount(m.Rows)
	for tile := range tileCount(m.Rows) {
		p, q := unsafe.Pointer(&avx2Tiles[tile*per]), unsafe.Pointer(&vnniTiles[tile*perVNNI])
		var a, b [tileRows]float32
		one(p, in[0].codes, in[0].scales, in[0].sums, in[0].blocks, &a)
		oneVNNI(q, in[0].codes, in[0].scales, in[0].sums, in[0].blocks, &b)
		var a3, b3 [3][tileRows]float32
		if three != nil {
			three(p, in[0].codes, in[0].scales, in[0].sums, in[1].codes, in[1].scales, in[1].sums, in[2].codes, in[2].scales, in[2].sums, in[0].blocks, &a3)
			threeVNNI(q, in[0].codes, in[0].scales, in[0].sums, in[1].codes, in[1].scales, in[1].sums, in[2].codes, in[2].scales, in[2].sums, in[0].blocks, &b3)
		}
		if a != b || a3 != b3 {
			t.Fatalf("%s tile %d: %v %v, VNNI %v %v", name, tile, a, a3, b, b3)
		}
	}
}

// The 512-bit four-tile f32 kernel gives f32Tiles4x6's sums bit for bit
// (a lane is a row, summed column by column at either width), tile by
// tile and vector by vector, so a swapped half or tile shows; and
// matMatF32 through it gives matVecF32's numbers, whichever width the
// timing on this core chose.
func TestF32WideKernelMatchesNarrow(t *testing.T) {
	if f32TileGroup != 4 {
		t.Skip("the 512-bit kernel needs AVX-512")
	}
	rng := rand.New(rand.NewPCG(5, 12))
	for _, cols := range []int{1, 7, 64, 896} {
		m := withTiles(NewF32(4*tileRows, cols, randomVec(rng, 4*tileRows*cols)), nil, nil)
		var x [6]unsafe.Pointer
		for j := range x {
			x[j] = unsafe.Pointer(&randomVec(rng, cols)[0])
		}
		var narrow, wide [6][4 * tileRows]float32
		f32Tiles4x6(m.f32Tile(0), f32TileBytes(cols), cols, &x, rowsOf(&narrow), m.f32Tile(0), 0)
		f32Tiles4x6Z(m.f32Tile(0), f32TileBytes(cols), cols, &x, rowsOf(&wide), m.f32Tile(0), 0)
		if narrow != wide {
			t.Fatalf("%d columns: 512-bit %v, 256-bit %v", cols, wide[0][:10], narrow[0][:10])
		}
	}

	chosen := f32Wide
	defer func() { f32Wide = chosen }()
	for _, use512 := range []bool{false, true} {
		f32Wide = func() kernelWidths { return kernelWidths{use512: use512} }
		rows, cols := 200, 300
		m := withTiles(NewF32(rows, cols, randomVec(rng, rows*cols)), nil, nil)
		for _, n := range []int{7, 10} { // 10: a last group of four
			xs, outs := make([][]float32, n), make([][]float32, n)
			for s := range xs {
				xs[s], outs[s] = randomVec(rng, cols), make([]float32, rows)
			}
			matMatF32(outs, m, xs, 5, rows-50, rows)
			for s := range xs {
				want := make([]float32, rows)
				matVecF32(want, m, xs[s], 5, rows-50)
				if !slices.Equal(outs[s][5:rows-50], want[5:rows-50]) {
					t.Fatalf("512-bit %v, vector %d of %d: batched %v, alone %v", use512, s, n, outs[s][5:8], want[5:8])
				}
			}
		}
	}
}

// Each two-tile 512-bit kernel (q4_0Tile4x2Z, iq4NLTile4x2Z) gives its
// 256-bit four-vector kernel's sums on each of its two tiles, bit for
// bit, and a product through it, with spans that start and end inside
// tiles and an odd tile at the end, gives each vector's product alone.
func TestNibbleWideKernelsMatchNarrow(t *testing.T) {
	if !haveVNNI {
		t.Skip("the 512-bit nibble kernels need AVX-512 VNNI")
	}
	for _, c := range []struct {
		name    string
		typ     uint32
		narrow4 tile4Kernel
		wide    tilePairKernel
		timing  *func() kernelWidths
	}{
		{"Q4_0", ggmlQ4_0, q4_0Tile4VNNI, q4_0Tile4x2Z, &q4_0Wide},
		{"IQ4_NL", ggmlIQ4_NL, iq4NLTile4VNNI, iq4NLTile4x2Z, &iq4NLWide},
	} {
		rng := rand.New(rand.NewPCG(6, 13))
		for _, cols := range []int{32, 96, 896} {
			m := withTiles(quantizeTo(t, c.typ, NewF32(2*tileRows, cols, randomVec(rng, 2*tileRows*cols))), nil, nil)
			var in [maxTileBatch]tileInput
			for j := range in {
				xq := newQuantized(cols)
				xq.quantize(randomVec(rng, cols), allForms)
				in[j] = tileInputOf(m, &xq)
			}
			per := cols / GroupSize * q4_0TileBytes
			var first, second [maxTileBatch][tileRows]float32
			var wide [maxTileBatch][2 * tileRows]float32
			c.narrow4(unsafe.Pointer(&m.tiles[0]), &in, &first)
			c.narrow4(unsafe.Pointer(&m.tiles[per]), &in, &second)
			c.wide(unsafe.Pointer(&m.tiles[0]), per, &in, &wide)
			for j := range in {
				if [2 * tileRows]float32(append(first[j][:], second[j][:]...)) != wide[j] {
					t.Fatalf("%s, %d columns, vector %d: 512-bit %v, 256-bit %v %v", c.name, cols, j, wide[j], first[j], second[j])
				}
			}
		}

		chosen := *c.timing
		t.Cleanup(func() { *c.timing = chosen }) // a failure below must not leave the width forced
		for _, use512 := range []bool{false, true} {
			*c.timing = func() kernelWidths { return kernelWidths{use512: use512} }
			rows, cols := 200, 320
			m := withTiles(quantizeTo(t, c.typ, NewF32(rows, cols, randomVec(rng, rows*cols))), nil, nil)
			xs, outs := make([]*quantized, 9), make([][]float32, 9)
			for s := range xs {
				xq := newQuantized(cols)
				xq.quantize(randomVec(rng, cols), allForms)
				xs[s], outs[s] = &xq, make([]float32, rows)
			}
			for _, span := range [][2]int{{5, rows}, {0, 3 * tileRows}, {11, 13}, {tileRows, 4*tileRows + 1}} {
				lo, hi := span[0], span[1]
				matMatTiles(outs, m, xs, lo, hi)
				for s := range xs {
					want := make([]float32, rows)
					matVecTiles(want, m, xs[s], lo, hi)
					if !slices.Equal(outs[s][lo:hi], want[lo:hi]) {
						t.Fatalf("%s, 512-bit %v, rows [%d, %d), vector %d: batched %v, alone %v", c.name, use512, lo, hi, s, outs[s][lo:lo+3], want[lo:lo+3])
					}
				}
			}
		}
	}
}

// A 512-bit prompt kernel is taken only when it is at least an
// eighth faster, so a tie on a core that runs both widths at one rate,
// or noise, keeps the 256-bit one; and the sentence the probe stores
// names the width chosen and the ratio that decided, either way.
func TestWidthRuleAndWords(t *testing.T) {
	for _, c := range []struct {
		narrow, wide time.Duration
		use512       bool
		words        string
	}{
		{1000, 1000, false, "256-bit (the 512-bit kernel ran at 1.00× its speed"},
		{1000, 1100, false, "256-bit (the 512-bit kernel ran at 0.91× its speed"},
		{1000, 876, false, "256-bit (the 512-bit kernel ran at 1.14× its speed"},
		{1000, 874, true, "512-bit (1.14× the 256-bit kernel's speed"},
		{1000, 560, true, "512-bit (1.79× the 256-bit kernel's speed"},
	} {
		w := kernelWidths{narrow: c.narrow, wide: c.wide, use512: prefer512(c.narrow, c.wide)}
		if w.use512 != c.use512 || !strings.HasPrefix(w.String(), c.words) {
			t.Errorf("%v against %v: 512-bit %v, %q; want %v, %q…", c.wide, c.narrow, w.use512, w.String(), c.use512, c.words)
		}
	}
	for _, c := range []struct {
		name   string
		choice bool // whether this CPU has both widths of the kernel
		named  func() string
		timing func() kernelWidths
	}{{"f32", f32TileGroup == 4, F32PromptKernel, f32Wide}, {"Q4_0", haveVNNI, Q4_0PromptKernel, q4_0Wide}, {"IQ4_NL", haveVNNI, IQ4_NLPromptKernel, iq4NLWide}} {
		if !c.choice {
			if got := c.named(); got != "" {
				t.Errorf("%s: with one width there is no choice to name, got %q", c.name, got)
			}
			continue
		}
		w := c.timing()
		if w.narrow <= 0 || w.wide <= 0 || w.narrow == time.Hour || w.wide == time.Hour {
			t.Fatalf("the %s timing on this core measured nothing: %+v", c.name, w)
		}
		t.Logf("%s prompts on this core: %s", c.name, w)
	}
}

// geGLU's kernel is its lookup, bit for bit: at every half, at each
// point halfway to the next half (where rounding decides the index) and
// a float either side of it, at ±10 where the lookup ends, and where a
// span starts or ends anywhere.
func TestGeGLUKernelIsTheLookup(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: geGLU is the lookup itself")
	}
	var h []float32
	for bits := range 1 << 16 {
		a := f16ToF32(uint16(bits))
		h = append(h, a)
		if next := f16ToF32(uint16(bits + 1)); bits&0x7fff < 0x7bff && !math.IsNaN(float64(next)) {
			mid := a + (next-a)/2
			h = append(h, mid, math.Nextafter32(mid, float32(math.Inf(1))), math.Nextafter32(mid, float32(math.Inf(-1))))
		}
	}
	for _, edge := range []float32{10, -10} {
		h = append(h, edge, math.Nextafter32(edge, 0), math.Nextafter32(edge, 100*edge))
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for range 4099 {
		h = append(h, float32(rng.NormFloat64()*4))
	}
	g := randomVec(rng, len(h))
	want := append([]float32(nil), h...)
	geGLUGeneric(want, g)
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || math.IsNaN(float64(a)) && math.IsNaN(float64(b))
	}
	got := append([]float32(nil), h...)
	geGLU(got, g)
	split := append([]float32(nil), h...)
	for lo := 0; lo < len(split); lo += 77 { // spans of 77: most start and end inside a vector
		hi := min(lo+77, len(split))
		geGLU(split[lo:hi], g[lo:hi])
	}
	for i := range want {
		if !same(got[i], want[i]) || !same(split[i], want[i]) {
			t.Fatalf("gelu(%g (%#08x))·%g: %g whole, %g in spans; the lookup gives %g", h[i], math.Float32bits(h[i]), g[i], got[i], split[i], want[i])
		}
	}
}

// BenchmarkGeGLU times a Gemma3-1B prompt chunk's GeGLU (6912 hidden
// values for each of 64 tokens) through the scalar lookup and the kernel.
func BenchmarkGeGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(23, 24))
	h, g := randomVec(rng, 6912*64), randomVec(rng, 6912*64)
	work := make([]float32, len(h))
	for name, kernel := range map[string]func(hb, hb2 []float32){"lookup": geGLUGeneric, "kernel": geGLU} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(8 * len(h)))
			for b.Loop() {
				copy(work, h)
				kernel(work, g)
			}
		})
	}
}

// BenchmarkF32PromptWidths is BenchmarkPrefillProduct's f32 product with
// each width of the four-tile kernel forced, one after the other: the
// figure the timing at first use (f32Wide) decides on, at a prompt's
// size. On a core with two 512-bit FMA units the 512-bit row should read
// near twice the other; on Zen 4 they tie.
func BenchmarkF32PromptWidths(b *testing.B) {
	if f32TileGroup != 4 {
		b.Skip("the 512-bit kernel needs AVX-512")
	}
	w, j := prefillJob()
	j.m[0] = withTiles(w, nil, nil)
	chosen := f32Wide
	defer func() { f32Wide = chosen }()
	benchPrefillEachWay(b, j, "512-bit", func(use512 bool) {
		f32Wide = func() kernelWidths { return kernelWidths{use512: use512} }
	})
	b.Logf("chosen on this core: %s", F32PromptKernel())
}

// benchPrefillEachWay times j's product (prefillJob's, its matrix set)
// with force(false), then with force(true): a kernel choice forced each
// way, whatever the timing at load chose, as sub-benchmarks name=false
// and name=true.
func benchPrefillEachWay(b *testing.B, j *matJob, name string, force func(bool)) {
	m := j.m[0]
	flops := float64(2 * m.Rows * m.Cols * len(j.x))
	for _, on := range []bool{false, true} {
		force(on)
		b.Run(fmt.Sprintf("%s=%v", name, on), func(b *testing.B) {
			for b.Loop() {
				j.do(0, m.Rows)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkBF16PromptKernels is BenchmarkPrefillProduct's bf16 product
// through bf16Tiles4x6Dot (VDPBF16PS) and through the kernel that widens
// each weight for an f32 FMA, each forced, one after the other, on the
// same rounded inputs (the two give the same sums).
func BenchmarkBF16PromptKernels(b *testing.B) {
	if !haveBF16Dot {
		b.Skip("VDPBF16PS needs AVX512_BF16")
	}
	w, j := prefillJob()
	j.m[0] = withTiles(&Matrix{Rows: w.Rows, Cols: w.Cols, halves: halfBytes(bfloat16, w.F32), half: bfloat16, bf16Products: true}, nil, nil)
	chosen := bf16Dot
	defer func() { bf16Dot = chosen }()
	benchPrefillEachWay(b, j, "VDPBF16PS", func(dot bool) {
		bf16Dot = func() bf16Kernels { return bf16Kernels{useDot: dot} }
	})
}

// A Q5_0 matrix keeps its tiles (whose o = −16·d is a half) only where
// every block's o is finite: at d = 4094 (o = −65504) it has them, and
// they multiply as the blocks do; at d = 4096 (o would be −65536) it
// keeps none and multiplies through the portable kernels.
func TestQ5_0TilesOnlyWhereTheOffsetIsAHalf(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no tiles without AVX2")
	}
	rng := rand.New(rand.NewPCG(17, 71))
	const rows, cols = 16, 256
	q := quantizeTo(t, ggmlQ5_0, randomMatrix(rng, rows, cols))
	x := randomMatrix(rng, 1, cols).F32
	xq := newQuantized(cols)
	xq.quantize(x, allForms)
	for _, c := range []struct {
		d     uint16
		tiled bool
	}{{0x6bff, true}, {0x6c00, false}} {
		raw := slices.Clone(q.quant)
		binary.LittleEndian.PutUint16(raw[5*formatQ5_0.fileBlockBytes():], c.d)
		m := withTiles(&Matrix{Rows: rows, Cols: cols, format: formatQ5_0, quant: raw}, nil, nil)
		if (m.tiles != nil) != c.tiled {
			t.Fatalf("d %#04x: tiled %v, want %v", c.d, m.tiles != nil, c.tiled)
		}
		got, want := make([]float32, rows), make([]float32, rows)
		matVecBlocks(got, m, &xq, 0, rows)
		matVecBlocksGeneric(want, m, &xq, 0, rows)
		if rel := relativeL2(got, want); !(rel <= 1e-5) {
			t.Errorf("d %#04x: the product is off by %.2g from the portable one", c.d, rel)
		}
	}
}

// A Q6_K tile holds each weight's code where its layout says
// (q6KTileBytes): with every bit of eight blocks random, each code read
// back from its nibble and bit pair is q6KValue's, and each run's scale
// and each row's d are its block's.
func TestQ6KTileHoldsEveryCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 210))
	tile := make([]byte, q6KTileBytes)
	blocks := make([][]byte, tileRows)
	for r := range blocks {
		blocks[r] = make([]byte, formatQ6_K.fileBlockBytes())
		for i := range blocks[r] {
			blocks[r][i] = byte(rng.Uint32())
		}
		q6KTileRow(tile, r, blocks[r])
	}
	for r, b := range blocks {
		for w := range superBlock {
			run, step, i := tile[q6KTileRun*(w/16):], w%16/4, w%4
			code := int32(run[32*(step%2)+4*r+i]>>(4*(step/2))&0x0f | run[64+4*r+i]>>(2*step)&3<<4)
			if want := q6KValue(b, w/128, w%128/32, w%32) + 32; code != want {
				t.Fatalf("row %d weight %d: code %d in the tile, %d in the block", r, w, code, want)
			}
		}
		for s := range 16 {
			if tile[q6KTileScales+8*s+r] != b[192+s] {
				t.Fatalf("row %d run %d: scale %d, want %d", r, s, tile[q6KTileScales+8*s+r], b[192+s])
			}
		}
		if d := tile[q6KTileD+2*r:][:2]; d[0] != b[208] || d[1] != b[209] {
			t.Fatalf("row %d: d % x, want % x", r, d, b[208:210])
		}
	}
}

// The half-tile kernels, for halves and for bfloat16s, give the f32
// kernels' sums on the same weights widened, bit for bit: a product alone
// and batched, at either width, over spans that start and end inside
// tiles, and the two-tile kernel called alone (it runs only on cores
// without AVX-512's registers).
func TestHalfTileKernelsMatchF32BitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 13))
	chosen := f32Wide
	defer func() { f32Wide = chosen }()
	twoTiles := map[halfKind]tilesKernel{ieeeHalf: f16Tiles2x6, bfloat16: bf16Tiles2x6}
	for _, shape := range kernelShapes {
		for _, c := range halfLayouts {
			kind := c.kind
			layHalvesGrouped(t, c.grouped)
			rows, cols := shape[0], shape[1]
			halves := halfBytes(kind, randomVec(rng, rows*cols))
			half := withTiles(&Matrix{Rows: rows, Cols: cols, halves: halves, half: kind}, nil, nil)
			full := withTiles((&Matrix{Rows: rows, Cols: cols, halves: halves, half: kind}).withRows(), nil, nil)
			if half.half != kind || half.tiles == nil || half.groupedHalves != c.grouped || full.half != notHalf || half.DType() != kind.String() {
				t.Fatalf("%d×%d %s: tiles of %s (grouped %v), %s", rows, cols, c, half.DType(), half.groupedHalves, full.DType())
			}
			for _, use512 := range []bool{false, true} {
				f32Wide = func() kernelWidths { return kernelWidths{use512: use512 && f32TileGroup == 4} }
				for _, n := range []int{1, 2, 4, 6, 7, 10, 13} { // 4 and 10: a last group of four
					xs, got, want := make([][]float32, n), make([][]float32, n), make([][]float32, n)
					for s := range n {
						xs[s], got[s], want[s] = randomVec(rng, cols), make([]float32, rows), make([]float32, rows)
					}
					lo, hi := rows/3, rows-rows/5
					matMatF32(got, half, xs, lo, hi, rows)
					matMatF32(want, full, xs, lo, hi, hi)
					for s := range n {
						if !slices.Equal(got[s][lo:hi], want[s][lo:hi]) {
							t.Fatalf("%d×%d %s, 512-bit %v, vector %d of %d: halves %v, floats %v", rows, cols, c, use512, s, n, got[s][lo:min(lo+3, hi)], want[s][lo:min(lo+3, hi)])
						}
					}
				}
			}
			if rows < 2*tileRows {
				continue
			}
			var x [6]unsafe.Pointer
			for j := range x {
				x[j] = unsafe.Pointer(&randomVec(rng, cols)[0])
			}
			var fromHalves, fromFloats [6][2 * tileRows]float32
			twoTiles[kind](half.f32Tile(0), half.tileStride(), cols, &x, rowsOf(&fromHalves), half.f32Tile(1), 3, half.columnStep())
			f32Tiles2x6(full.f32Tile(0), full.tileStride(), cols, &x, rowsOf(&fromFloats), full.f32Tile(0), 0)
			if fromHalves != fromFloats {
				t.Fatalf("%d×%d %s: the two-tile kernel %v, f32Tiles2x6 %v", rows, cols, c, fromHalves[0][:4], fromFloats[0][:4])
			}
		}
	}
}

// matMatF32's read ahead asks for every byte of the next block's tiles,
// in order and with no gap, within the kernel calls it makes on the
// current block, starting each share inside the matrix's tiles; with one
// group of vectors, no rows, or no next block, it asks for nothing.
func TestReadAheadCoversTheNextBlock(t *testing.T) {
	m := withTiles(NewF32(200, 40, make([]float32, 200*40)), nil, nil)
	tiles := uintptr(m.f32Tile(0))
	for _, c := range []struct{ lo, hi, ahead, groups int }{
		{0, 64, 128, 11}, {0, 64, 128, 2}, {64, 128, 200, 11}, {130, 160, 200, 3},
		{5, 37, 200, 7}, {0, 64, 128, 1}, {0, 200, 200, 11}, {160, 200, 260, 4},
		{0, 16, 200, 153}, // 29440 bytes over 153 calls: 192.4 a call, 192 (three lines) rounded down
		{8, 8, 64, 11},    // no rows: no calls, and nothing to read ahead for
	} {
		calls := 0
		for t := c.lo / tileRows / f32TileGroup * f32TileGroup; t*tileRows < c.hi; t += f32TileGroup {
			calls += c.groups
		}
		first := (c.hi + tileRows - 1) / tileRows
		last := min((c.ahead+tileRows-1)/tileRows, len(m.tiles)/m.tileBytes())
		start, end := tiles+uintptr(first*m.tileBytes()), tiles+uintptr(last*m.tileBytes())
		if c.groups < 2 || last <= first || c.hi <= c.lo {
			start, end = 0, 0 // nothing to ask for
		}
		r := m.readAhead(c.lo, c.hi, c.ahead, f32TileGroup, c.groups)
		reached := start // how far the shares so far reach
		for range calls {
			p, step := r.share()
			if uintptr(p) < tiles || uintptr(p) >= tiles+uintptr(len(m.tiles)) {
				t.Fatalf("%+v: a share starts outside the tiles", c)
			}
			if step == 0 {
				continue
			}
			if uintptr(p) > reached || uintptr(p) < start {
				t.Fatalf("%+v: a share starts at byte %d of the tiles, where the shares before reach %d", c, uintptr(p)-tiles, reached-tiles)
			}
			reached = max(reached, uintptr(p)+uintptr(step*m.Cols))
		}
		if reached < end || r.left != 0 {
			t.Errorf("%+v: %d calls reached byte %d of the tiles (%d bytes left), want %d", c, calls, reached-tiles, r.left, end-tiles)
		}
		if start == 0 && reached != 0 {
			t.Errorf("%+v: asked for tiles with nothing to read ahead", c)
		}
	}
}

// bf16Tiles4x6Dot gives bf16Tiles4x6Z's sums, bit for bit, on vectors
// already rounded to bfloat16 (VDPBF16PS's products are exact and each
// lane adds column k's before k+1's, as the FMA kernels do), tile by tile
// and vector by vector, and bf16Tiles4x12Dot its sums on each six of its
// twelve vectors; and matMatBF16 gives matMatF32's numbers on the
// matrix widened to floats, through it where the columns pair up (and
// the timing chose it: both choices are forced here) and through the
// widening kernels where they do not, alone and batched, over spans that
// start and end inside tiles.
func TestBFloat16DotKernelMatchesWidened(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 14))
	chosen := bf16Dot
	defer func() { bf16Dot = chosen }()
	for _, useDot := range []bool{false, true} {
		bf16Dot = func() bf16Kernels { return bf16Kernels{useDot: useDot} }
		for _, grouped := range []bool{false, true} {
			layHalvesGrouped(t, grouped)
			checkBFloat16Products(t, rng)
		}
	}
	bf16Dot = chosen
	if haveBF16Dot {
		k := bf16Dot()
		if k.widening <= 0 || k.dot <= 0 || k.widening == time.Hour || k.dot == time.Hour {
			t.Fatalf("the BF16 timing on this core measured nothing: %+v", k)
		}
		t.Logf("BF16 prompts on this core: %s", BF16PromptKernel())
	}
}

// checkBFloat16Products is TestBFloat16DotKernelMatchesWidened's checks
// with bf16Dot's choice as the test set it.
func checkBFloat16Products(t *testing.T, rng *rand.Rand) {
	for _, shape := range kernelShapes {
		rows, cols := shape[0], shape[1]
		halves := halfBytes(bfloat16, randomVec(rng, rows*cols))
		half := withTiles(&Matrix{Rows: rows, Cols: cols, halves: halves, half: bfloat16}, nil, nil)
		full := withTiles((&Matrix{Rows: rows, Cols: cols, halves: halves, half: bfloat16}).withRows(), nil, nil)
		xq := make([]*quantized, 26)
		rounded := make([][]float32, len(xq))
		for s := range xq {
			q := newQuantized(cols)
			q.quantize(randomVec(rng, cols), activationForms{bf16: true})
			xq[s], rounded[s] = &q, q.bf16
		}
		if haveBF16Dot && cols%2 == 0 {
			six, twelve := bf16Tiles4x6Dot, bf16Tiles4x12Dot
			if half.groupedHalves {
				six, twelve = bf16Groups4x6Dot, bf16Groups4x12Dot
			}
			var x [6]unsafe.Pointer
			var pairs, widened [6][4 * tileRows]float32
			for j := range x {
				x[j] = unsafe.Pointer(&xq[j].bf16Pairs[0])
			}
			six(half.f32Tile(0), half.tileStride(), cols, &x, rowsOf(&pairs), half.f32Tile(0), 0)
			for j := range x {
				x[j] = unsafe.Pointer(&rounded[j][0])
			}
			bf16Tiles4x6Z(half.f32Tile(0), half.tileStride(), cols, &x, rowsOf(&widened), half.f32Tile(0), 0, half.columnStep())
			if pairs != widened {
				t.Fatalf("%d×%d, grouped %v: VDPBF16PS %v, widened %v", rows, cols, half.groupedHalves, pairs[0][:4], widened[0][:4])
			}
			var twelveX, twelveRows [12]unsafe.Pointer
			var twelveSums, halves [12][4 * tileRows]float32
			for j := range twelveX {
				twelveX[j], twelveRows[j] = unsafe.Pointer(&xq[j].bf16Pairs[0]), unsafe.Pointer(&twelveSums[j])
			}
			twelve(half.f32Tile(0), half.tileStride(), cols, &twelveX, &twelveRows, half.f32Tile(0), 0)
			six(half.f32Tile(0), half.tileStride(), cols, (*[6]unsafe.Pointer)(twelveX[:6]), rowsOf((*[6][4 * tileRows]float32)(halves[:6])), half.f32Tile(0), 0)
			six(half.f32Tile(0), half.tileStride(), cols, (*[6]unsafe.Pointer)(twelveX[6:]), rowsOf((*[6][4 * tileRows]float32)(halves[6:])), half.f32Tile(0), 0)
			if twelveSums != halves {
				t.Fatalf("%d×%d, grouped %v: twelve vectors %v, six and six %v", rows, cols, half.groupedHalves, twelveSums[7][:4], halves[7][:4])
			}
		}
		for _, n := range []int{1, 2, 4, 6, 7, 10, 12, 13, 16, 23, 26} { // 2, 4, 10 and 16: a last group of four; from 12, twelve at once
			got, want := make([][]float32, n), make([][]float32, n)
			for s := range n {
				got[s], want[s] = make([]float32, rows), make([]float32, rows)
			}
			lo, hi := rows/3, rows-rows/5
			matMatBF16(got, half, rounded[:n], xq[:n], lo, hi, rows)
			matMatF32(want, full, rounded[:n], lo, hi, hi)
			for s := range n {
				if !slices.Equal(got[s][lo:hi], want[s][lo:hi]) {
					t.Fatalf("%d×%d, grouped %v, vector %d of %d: %v, widened %v", rows, cols, half.groupedHalves, s, n, got[s][lo:min(lo+3, hi)], want[s][lo:min(lo+3, hi)])
				}
			}
		}
	}
}

// A multi-vector kernel's signature (tilesX6's half kernels; fixedStep's
// for the others).
type tilesKernel = func(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, columnBytes int)

// fixedStep is an f32 or dot kernel, whose column step its layout fixes,
// as a tilesKernel.
func fixedStep(k func(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)) tilesKernel {
	return func(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep, _ int) {
		k(tiles, tileBytes, cols, x, out, ahead, aheadStep)
	}
}

// halfLayout is a kind of half tiles and whether they lie in groups.
type halfLayout struct {
	kind    halfKind
	grouped bool
}

func (l halfLayout) String() string {
	if l.grouped {
		return l.kind.String() + " in groups"
	}
	return l.kind.String()
}

// halfLayouts are both kinds of half tiles in both layouts.
var halfLayouts = []halfLayout{{ieeeHalf, false}, {ieeeHalf, true}, {bfloat16, false}, {bfloat16, true}}

// Each four-vector kernel gives its six-vector twin's sums for the first
// four vectors, bit for bit, and writes nothing through out[4] and out[5]
// (where a last group's repeats would go): for floats, halves and
// bfloat16s (in both layouts), two tiles, and on AVX-512 four at either
// width and through VDPBF16PS, and a group of eight half tiles.
func TestFourVectorKernelsMatchSix(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the tile kernels need AVX2")
	}
	type pair struct {
		name      string
		half      halfKind
		grouped   bool
		tiles     int
		dot       bool
		four, six tilesKernel
	}
	pairs := []pair{{"f32 2x4", notHalf, false, 2, false, fixedStep(f32Tiles2x4), fixedStep(f32Tiles2x6)}}
	if f32TileGroup == 4 {
		pairs = append(pairs,
			pair{"f32 4x4", notHalf, false, 4, false, fixedStep(f32Tiles4x4), fixedStep(f32Tiles4x6)},
			pair{"f32 4x4Z", notHalf, false, 4, false, fixedStep(f32Tiles4x4Z), fixedStep(f32Tiles4x6Z)})
	}
	for _, grouped := range []bool{false, true} {
		pairs = append(pairs,
			pair{"f16 2x4", ieeeHalf, grouped, 2, false, f16Tiles2x4, f16Tiles2x6},
			pair{"bf16 2x4", bfloat16, grouped, 2, false, bf16Tiles2x4, bf16Tiles2x6})
		if f32TileGroup == 4 {
			pairs = append(pairs,
				pair{"f16 4x4", ieeeHalf, grouped, 4, false, f16Tiles4x4, f16Tiles4x6},
				pair{"bf16 4x4", bfloat16, grouped, 4, false, bf16Tiles4x4, bf16Tiles4x6},
				pair{"f16 4x4Z", ieeeHalf, grouped, 4, false, f16Tiles4x4Z, f16Tiles4x6Z},
				pair{"bf16 4x4Z", bfloat16, grouped, 4, false, bf16Tiles4x4Z, bf16Tiles4x6Z})
		}
	}
	if f32TileGroup == 4 {
		pairs = append(pairs,
			pair{"f16 groups 8x4Z", ieeeHalf, true, 8, false, fixedStep(f16Groups8x4Z), fixedStep(f16Groups8x6Z)},
			pair{"bf16 groups 8x4Z", bfloat16, true, 8, false, fixedStep(bf16Groups8x4Z), fixedStep(bf16Groups8x6Z)})
	}
	if haveBF16Dot {
		pairs = append(pairs,
			pair{"bf16 4x4Dot", bfloat16, false, 4, true, fixedStep(bf16Tiles4x4Dot), fixedStep(bf16Tiles4x6Dot)},
			pair{"bf16 groups 4x4Dot", bfloat16, true, 4, true, fixedStep(bf16Groups4x4Dot), fixedStep(bf16Groups4x6Dot)})
	}
	rng := rand.New(rand.NewPCG(5, 15))
	for _, c := range pairs {
		layHalvesGrouped(t, c.grouped)
		for _, cols := range []int{2, 64, 898} {
			rows := c.tiles * tileRows
			values := randomVec(rng, rows*cols)
			m := tiledMatrix(c.half, rows, cols, values)
			if m.groupedHalves != c.grouped {
				t.Fatalf("%s: tiles grouped %v, want %v", c.name, m.groupedHalves, c.grouped)
			}
			var x [6]unsafe.Pointer
			for j := range x {
				q := newQuantized(cols)
				q.quantize(randomVec(rng, cols), activationForms{bf16: true})
				x[j] = unsafe.Pointer(&q.bf16[0])
				if c.dot {
					x[j] = unsafe.Pointer(&q.bf16Pairs[0])
				}
			}
			var six, four [6][halfGroupRows]float32
			for j := 4; j < 6; j++ {
				for r := range four[j] {
					four[j][r] = -7
				}
			}
			c.six(m.f32Tile(0), m.tileStride(), cols, &x, rowsOf(&six), m.f32Tile(0), 0, m.columnStep())
			c.four(m.f32Tile(0), m.tileStride(), cols, &x, rowsOf(&four), m.f32Tile(0), 0, m.columnStep())
			for j := range 4 {
				if !slices.Equal(four[j][:rows], six[j][:rows]) {
					t.Fatalf("%s (grouped %v), %d columns, vector %d: four-vector %v, six-vector %v", c.name, c.grouped, cols, j, four[j][:4], six[j][:4])
				}
			}
			if slices.ContainsFunc(append(four[4][:], four[5][:]...), func(v float32) bool { return v != -7 }) {
				t.Fatalf("%s (grouped %v), %d columns: wrote through out[4] or out[5]", c.name, c.grouped, cols)
			}
		}
	}
}

// decodeKernel is a decode kernel: on n tiles of floats, n half tiles
// one after another, or n groups of them.
type decodeKernel = func(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)

// decodeKernels are f32's decode kernel with its asks ahead and without
// (askAhead's choice), and each kind of half tiles' in each layout.
var decodeKernels = []struct {
	name    string
	kind    halfKind
	grouped bool
	kernel  decodeKernel
}{
	{"f32/asked", notHalf, false, f32TilesVec},
	{"f32/unasked", notHalf, false, f32TilesVecUnasked},
	{"f16/tiles", ieeeHalf, false, f16TilesVec},
	{"f16/tiles-unasked", ieeeHalf, false, f16TilesVecUnasked},
	{"f16/groups", ieeeHalf, true, f16GroupsVec},
	{"bf16/tiles", bfloat16, false, bf16TilesVec},
	{"bf16/tiles-unasked", bfloat16, false, bf16TilesVecUnasked},
	{"bf16/groups", bfloat16, true, bf16GroupsVec},
}

// tiledMatrix is values as a rows×cols matrix of kind (f32, or halves
// the kind's way) with its tiles built, as the loader builds them.
func tiledMatrix(kind halfKind, rows, cols int, values []float32) *Matrix {
	if kind == notHalf {
		return withTiles(NewF32(rows, cols, values), nil, nil)
	}
	return withTiles(&Matrix{Rows: rows, Cols: cols, halves: halfBytes(kind, values), half: kind}, nil, nil)
}

// Every decode kernel gives f32TilesVec's sums bit for bit on the same
// values (widened from halves: asks are hints, and each kernel sums a row
// column by column): 21 tiles (four at a time, then one), or for the
// groups 24 tiles (three groups), odd and even column counts, and columns
// past 2 KiB of a tile (where the asking kernels' asks turn to the next
// tiles).
func TestDecodeKernelsMatch(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the tile kernels need AVX2")
	}
	rng := rand.New(rand.NewPCG(5, 16))
	for _, c := range decodeKernels {
		layHalvesGrouped(t, c.grouped)
		for _, cols := range []int{1, 7, 64, 129, 768} {
			units, rows := 21, 21*tileRows
			if c.grouped {
				units, rows = 3, 3*halfGroupRows
			}
			values := randomVec(rng, rows*cols)
			if c.kind != notHalf { // the values the halves stand for
				values = (&Matrix{Rows: rows, Cols: cols, halves: halfBytes(c.kind, values), half: c.kind}).withRows().F32
			}
			m := tiledMatrix(c.kind, rows, cols, values)
			if m.groupedHalves != c.grouped {
				t.Fatalf("%s: tiles grouped %v", c.name, m.groupedHalves)
			}
			x := randomVec(rng, cols)
			got, want := make([]float32, rows), make([]float32, rows)
			c.kernel(m.f32Tile(0), units, cols, unsafe.Pointer(&x[0]), unsafe.Pointer(&got[0]))
			f32TilesVec(tiledMatrix(notHalf, rows, cols, values).f32Tile(0), rows/tileRows, cols, unsafe.Pointer(&x[0]), unsafe.Pointer(&want[0]))
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d columns: %v, f32TilesVec %v", c.name, cols, got[:4], want[:4])
			}
		}
	}
}

// amdFamily reads the family Linux gives in /proc/cpuinfo on an AMD CPU
// (where the decode kernels' asks are chosen by it), and 0 elsewhere.
func TestAMDFamilyIsCPUInfos(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo here")
	}
	vendor, family := "", ""
	for line := range strings.Lines(string(info)) {
		key, value, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(key) {
		case "vendor_id":
			vendor = strings.TrimSpace(value)
		case "cpu family":
			family = strings.TrimSpace(value)
		}
		if vendor != "" && family != "" {
			break
		}
	}
	want := "0"
	if vendor == "AuthenticAMD" {
		want = family
	}
	if got := fmt.Sprint(amdFamily()); got != want {
		t.Fatalf("amdFamily %s; /proc/cpuinfo says %s, family %s", got, vendor, family)
	}
	t.Logf("%s, family %s: decode kernels ask ahead: %v; 16-bit tiles in groups: %v", vendor, family, askAhead, groupHalfTiles)
}

// BenchmarkDecodeKernels is the decode kernels on one thread, in GB/s of
// tiles read: 256×768 held in cache and 32768×768 read from memory (96
// MiB of f32, 48 of halves); f32's with and without its asks ahead
// (askAhead's choice), halves' and bfloat16s' in each layout
// (groupHalfTiles'). On Zen 4 (2 December) the unasked f32 kernel read
// 21.5–22.4 GB/s from memory against 15.2–18.2 asked; on 3 December the
// half kernel read 25.9–27.1 GB/s of F16 groups against 21.7–23.9 of
// tiles side by side (eight at a time, the kernel before the groups).
func BenchmarkDecodeKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 9))
	const cols = 768
	for _, rows := range []int{256, 32768} {
		values := randomVec(rng, rows*cols)
		x, out := randomVec(rng, cols), make([]float32, rows)
		for _, c := range decodeKernels {
			layHalvesGrouped(b, c.grouped)
			m, bytes := tiledMatrix(c.kind, rows, cols, values), 4
			if c.kind != notHalf {
				bytes = 2
			}
			b.Run(fmt.Sprintf("%dx%d/%s", rows, cols, c.name), func(b *testing.B) {
				for b.Loop() {
					c.kernel(m.f32Tile(0), rows/m.unitRows(), cols, unsafe.Pointer(&x[0]), unsafe.Pointer(&out[0]))
				}
				b.ReportMetric(float64(rows*cols*bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
