package builtin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// kShape is a small llama whose matrices are multiples of 256 wide, so
// K-quants can hold all of it.
var kShape = Shape{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 4, Vocab: 300, SeqLen: 64}

// randomMatrix is rows × cols standard normal values.
func randomMatrix(rng *rand.Rand, rows, cols int) *Matrix {
	data := make([]float32, rows*cols)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	return NewF32(rows, cols, data)
}

// kStep is the step between adjacent codes at weight i of a K-quant
// block: d·scale of its group (Q4_K) or run of 16 (Q6_K).
func kStep(f format, b []byte, i int) float64 {
	if f == formatQ4_K {
		sc, _ := q4KScaleMin(i/GroupSize, b[4:16])
		return float64(f16ToF32(le16(b))) * float64(sc)
	}
	return float64(f16ToF32(le16(b[208:]))) * math.Abs(float64(q6KScale(b, i/16)))
}

// Each K-quant, as documented in kquants.go: every weight comes back
// within half a step of the original, the formats' own error (the tests'
// quantizer never clamps); a matrix-vector product against quantized
// activations is within 1% (relative L2) of the f32 product of the same
// dequantized weights; and the kernel the engine runs agrees with the
// portable one.
func TestKQuantRoundTripAndMatVec(t *testing.T) {
	for _, c := range []struct {
		typ     uint32
		f       format
		generic func([]float32, *Matrix, *quantized, int, int)
		kernel  func([]float32, *Matrix, *quantized, int, int)
	}{{ggmlQ4_K, formatQ4_K, matVecBlocksGeneric, matVecBlocks}, {ggmlQ6_K, formatQ6_K, matVecBlocksGeneric, matVecBlocks}} {
		t.Run(c.f.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(c.f)))
			rows, cols := 40, 768
			f := randomMatrix(rng, rows, cols)
			f.F32[5] = 0 // a group with a zero, and a row of zeros
			clear(f.F32[3*cols : 4*cols])
			q := quantizeTo(t, c.typ, f)
			if q.DType() != c.f.String() || len(q.quant) != rows*c.f.rowBytes(cols) {
				t.Fatalf("%s, %d bytes", q.DType(), len(q.quant))
			}
			back := q.Dequantize()
			per := c.f.rowBytes(superBlock)
			var worst float64
			for r := range rows {
				raw := q.quantRow(r)
				for i := range cols {
					step := kStep(c.f, raw[i/superBlock*per:], i%superBlock)
					diff := math.Abs(float64(back.F32[r*cols+i] - f.F32[r*cols+i]))
					if diff > step/2*(1+1e-4)+1e-7 {
						t.Fatalf("row %d col %d: %g back as %g, step %g", r, i, f.F32[r*cols+i], back.F32[r*cols+i], step)
					}
					worst = max(worst, diff/step)
				}
			}
			if worst < 0.4 {
				t.Errorf("the worst error is %.2f steps: the quantizer did not round", worst)
			}
			x := randomMatrix(rng, 1, cols).F32
			xq := newQuantized(cols)
			xq.quantize(x, allForms)
			got, generic, want := make([]float32, rows), make([]float32, rows), make([]float32, rows)
			c.kernel(got, q, &xq, 0, rows)
			c.generic(generic, q, &xq, 0, rows)
			matVecF32(want, back, x, 0, rows)
			if rel := relativeL2(got, want); rel > 0.01 {
				t.Errorf("matvec off by %.4f (relative L2) from the f32 product of the same weights", rel)
			}
			if rel := relativeL2(got, generic); rel > 1e-5 {
				t.Errorf("the engine's kernel is off by %.2g from the portable one", rel)
			}
			if got[3] != 0 {
				t.Errorf("a row of zeros gives %g", got[3])
			}
		})
	}
}

func relativeL2(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		num += float64((got[i] - want[i]) * (got[i] - want[i]))
		den += float64(want[i] * want[i])
	}
	return math.Sqrt(num / den)
}

// A Q4_K_M GGUF (Q4_K and Q6_K, as llama-quantize mixes them) loads as
// stored, its K-quant rows viewed in the file, and runs: its logits stay
// close to those of the same weights in f32, and --dtype q8_0 converts.
func TestQ4KMGGUFRunsAsStored(t *testing.T) {
	w := Synthetic(kShape, 9)
	path := writeTemp(t, "q4km.gguf", ggufOf(t, w, spmVocab(ByteLevelTokenizer(kShape.Vocab)), q4KM(kShape.Layers)))
	m, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	// Of two layers only layer 1 is in the last eighth (and the first
	// eighth is empty), so its attn_v and ffn_down are Q6_K beside the
	// classifier; the rest is Q4_K.
	if got := m.Weights.Format(); got != "q4_K ×12, q6_K ×3" {
		t.Errorf("format %q", got)
	}
	if rel := offFromF32(t, m, path); !(rel <= 0.05) {
		t.Errorf("Q4_K_M logits off by %.4f (relative L2) from the same weights in f32", rel)
	}
	q8, err := Load(path, "q8_0")
	if err != nil || q8.Weights.Format() != "q8_0" {
		t.Errorf("--dtype q8_0 of a Q4_K_M file: %v, %q", err, q8.Weights.Format())
	}
}

// Every quantized format's GGUF, cut anywhere, fails with an error that
// names a tensor or the header, never a panic or a half-loaded model.
func TestQuantizedGGUFsFailCleanlyWhenCut(t *testing.T) {
	shape := kShape
	shape.Layers, shape.Vocab = 1, 16
	w := Synthetic(shape, 2)
	for _, typ := range quantizedTypes() {
		full := ggufOf(t, w, spmVocab(ByteLevelTokenizer(shape.Vocab)), every(typ))
		if _, _, err := LoadGGUF(full); err != nil {
			t.Fatalf("%s: %v", ggmlTypeNames[typ], err)
		}
		for _, n := range []int{len(full) - 1, len(full) - 3000, len(full) / 2} {
			_, _, err := LoadGGUF(full[:n])
			if err == nil || !strings.Contains(err.Error(), "runs past the end of the file") {
				t.Errorf("%s cut to %d bytes: %v", ggmlTypeNames[typ], n, err)
			}
		}
	}
}

// quantizedTypes are the ggml types of every quantized format the engine
// reads.
func quantizedTypes() []uint32 {
	var types []uint32
	for _, spec := range formats[formatQ8_0:] {
		types = append(types, spec.ggml)
	}
	return types
}

// kFuzzSeeds are small GGUFs of every quantized format, and one with a
// gpt2 vocabulary: seeds for FuzzParseGGUF.
func kFuzzSeeds(t testing.TB) [][]byte {
	shape := Shape{Dim: 256, HiddenDim: 256, Layers: 1, Heads: 2, KVHeads: 2, Vocab: 4, SeqLen: 8}
	w := Synthetic(shape, 1)
	var seeds [][]byte
	for _, typ := range quantizedTypes() {
		seeds = append(seeds, ggufOf(t, w, spmVocab(NewTokenizer([]string{"<unk>", "<s>", "</s>", "a"}, make([]float32, 4))), every(typ)))
	}
	tok, vocab := testBPE(t, "qwen2", "h e")
	shape.Dim, shape.HiddenDim, shape.Vocab = 32, 32, len(tok.Pieces)
	return append(seeds, ggufOf(t, Synthetic(shape, 1), vocab, every(ggmlF32)))
}

// stories110MFiles writes GGUFs of stories110M's shape (seeded synthetic
// weights) as llama-quantize's Q4_K_M mix, Q4_0 and Q8_0.
func stories110MFiles(t testing.TB) map[string]string {
	shape := SyntheticShapes["stories110M"]
	w := Synthetic(shape, 1)
	vocab := spmVocab(ByteLevelTokenizer(shape.Vocab))
	files := map[string]string{}
	for name, types := range map[string]func(string) uint32{"Q4_K_M": q4KM(shape.Layers), "Q4_0": every(ggmlQ4_0), "Q8_0": every(ggmlQ8_0)} {
		files[name] = writeTemp(t, name+".gguf", ggufOf(t, w, vocab, types))
	}
	return files
}

// The bar: a Q4_K_M, a Q4_0 and a Q8_0 GGUF of stories110M's
// shape load as stored and generate. It is slow under the race detector,
// so .ci/run runs it once without.
func TestStories110MShapeGGUFsLoadAndGenerate(t *testing.T) {
	if raceEnabled || testing.Short() {
		// 111 s of CI's emulated arm64 suite (-short), whose portable
		// kernels the small shapes test on every quantization.
		t.Skip("110M weights under the race detector or emulation take minutes; .ci/run runs this natively, without -race")
	}
	files := stories110MFiles(t)
	for name, want := range map[string]string{"Q4_K_M": "q4_K ×72, q6_K ×13", "Q4_0": "q4_0", "Q8_0": "q8_0"} {
		m, err := Load(files[name], "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Weights.Shape != SyntheticShapes["stories110M"] || m.Weights.Format() != want {
			t.Errorf("%s: shape %s, format %q", name, m.Weights.Shape, m.Weights.Format())
		}
		e := NewEngine(m, 2)
		g, err := e.Generate(context.Background(), m.Tokenizer.Encode("Once upon a time", true), 16, Sampling{IgnoreEOS: true}, func(int) {})
		e.Close()
		if err != nil || len(g.Tokens) != 16 {
			t.Errorf("%s: %v, %d tokens", name, err, len(g.Tokens))
		}
	}
}

// BenchmarkStories110MFiles decodes (tok/s and weight GB/s at position
// 64) and prefills a 64-token prompt with each of the stories110M-shape
// GGUFs, at 1 and 2 threads.
func BenchmarkStories110MFiles(b *testing.B) {
	files := stories110MFiles(b)
	for _, name := range []string{"Q4_K_M", "Q4_0", "Q8_0"} {
		path := files[name]
		for _, threads := range []int{1, 2} {
			m, err := Load(path, "")
			if err != nil {
				b.Fatal(err)
			}
			e := NewEngine(m, threads)
			b.Run(fmt.Sprintf("%s/decode/threads=%d", name, threads), func(b *testing.B) { benchDecode(b, e) })
			b.Run(fmt.Sprintf("%s/prefill64/threads=%d", name, threads), func(b *testing.B) { benchPrefill64(b, e) })
			e.Close()
		}
	}
}

// q4KScaleMin is group j's 6-bit scale and min read one field at a time,
// as ggml's get_scale_min_k4 reads them: the reference for
// q4KScalesMins.
func q4KScaleMin(j int, packed []byte) (scale, min uint8) {
	if j < 4 {
		return packed[j] & 63, packed[j+4] & 63
	}
	return packed[j+4]&0x0f | packed[j-4]>>6<<4, packed[j+4]>>4 | packed[j]>>6<<4
}

// q3KScale is run s's scale less 32 read one field at a time: the
// reference for q3KScales.
func q3KScale(b []byte, s int) int32 {
	packed := b[96:108]
	low := packed[s%8] >> (4 * (s / 8)) & 0x0f
	high := packed[8+s%4] >> (2 * (s / 4)) & 3
	return int32(low|high<<4) - 32
}

// The decoders, kernels and tiles unpack a block's packed scales a word
// at a time; each field is the one a field-at-a-time reading gives, for
// every bit of the packed bytes.
func TestPackedScalesUnpackAsDecoded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 12))
	for trial := range 2000 {
		var packed [12]byte
		for i := range packed {
			packed[i] = byte(rng.Uint32())
			if trial < 2 {
				packed[i] = byte(0xff * trial)
			}
		}
		scales, mins := q4KScalesMins(packed[:])
		for j := range 8 {
			if sc, mn := q4KScaleMin(j, packed[:]); scales[j] != sc || mins[j] != mn {
				t.Fatalf("Q4_K % x, group %d: scale %d min %d, want %d %d", packed, j, scales[j], mins[j], sc, mn)
			}
		}
		block := make([]byte, q3KBlockBytes)
		copy(block[96:], packed[:])
		q3 := q3KScales(&packed)
		for s := range 16 {
			if got, want := int32(int8(q3[s])), q3KScale(block, s); got != want {
				t.Fatalf("Q3_K % x, run %d: scale %d, want %d", packed, s, got, want)
			}
		}
	}
}
