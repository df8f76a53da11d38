package builtin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// ggufOf writes w and tok as a llama GGUF (version 3), every matrix in
// the given ggml type (F32, Q8_0 or Q4_0) and the classifier tied to the
// embedding (no output.weight), as llama-quantize writes small models.
func ggufOf(t testing.TB, w *Weights, tok *Tokenizer, typ uint32) []byte {
	t.Helper()
	var meta, infos, data bytes.Buffer
	le := binary.LittleEndian
	str := func(b *bytes.Buffer, s string) { binary.Write(b, le, uint64(len(s))); b.WriteString(s) }
	nKV := 0
	kv := func(key string, typ uint32, write func()) {
		str(&meta, key)
		binary.Write(&meta, le, typ)
		write()
		nKV++
	}
	u32 := func(key string, v int) { kv(key, 4, func() { binary.Write(&meta, le, uint32(v)) }) }
	kv("general.architecture", 8, func() { str(&meta, "llama") })
	s := w.Shape
	u32("llama.embedding_length", s.Dim)
	u32("llama.feed_forward_length", s.HiddenDim)
	u32("llama.block_count", s.Layers)
	u32("llama.attention.head_count", s.Heads)
	u32("llama.attention.head_count_kv", s.KVHeads)
	u32("llama.context_length", s.SeqLen)
	kv("llama.attention.layer_norm_rms_epsilon", 6, func() { binary.Write(&meta, le, w.NormEps) })
	kv("tokenizer.ggml.model", 8, func() { str(&meta, "llama") })
	kv("tokenizer.ggml.tokens", 9, func() {
		binary.Write(&meta, le, uint32(8))
		binary.Write(&meta, le, uint64(len(tok.Pieces)))
		for _, p := range tok.Pieces {
			str(&meta, p)
		}
	})
	kv("tokenizer.ggml.scores", 9, func() {
		binary.Write(&meta, le, uint32(6))
		binary.Write(&meta, le, uint64(len(tok.Scores)))
		for _, sc := range tok.Scores {
			binary.Write(&meta, le, sc)
		}
	})
	nTensors := 0
	tensor := func(name string, rows, cols int, values []float32, typ uint32) {
		for data.Len()%32 != 0 {
			data.WriteByte(0)
		}
		str(&infos, name)
		binary.Write(&infos, le, uint32(2))
		binary.Write(&infos, le, uint64(cols))
		binary.Write(&infos, le, uint64(rows))
		binary.Write(&infos, le, typ)
		binary.Write(&infos, le, uint64(data.Len()))
		nTensors++
		if typ == ggmlF32 {
			binary.Write(&data, le, values)
			return
		}
		quantize := NewF32(rows, cols, values).Quantize
		if typ == ggmlQ4_0 {
			quantize = NewF32(rows, cols, values).QuantizeQ4
		}
		q, err := quantize()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The engine's rows hold a row's scales, then its groups'
		// payloads in file order: a GGUF block is a scale (as f16) and
		// its group's payload.
		raw, rowBytes := q.stored()
		groups := cols / GroupSize
		for r := range rows {
			scales, payloads := q.row(r, raw, rowBytes)
			per := len(payloads) / groups
			for g := range groups {
				binary.Write(&data, le, f32ToF16(scales[g]))
				data.Write(payloads[g*per : (g+1)*per])
			}
		}
	}
	d := s.Dim
	tensor("token_embd.weight", s.Vocab, d, w.Embedding, typ)
	tensor("output_norm.weight", 1, d, w.FinalNorm, ggmlF32)
	for l, layer := range w.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		tensor(p+"attn_norm.weight", 1, d, layer.AttnNorm, ggmlF32)
		tensor(p+"ffn_norm.weight", 1, d, layer.FFNNorm, ggmlF32)
		for _, m := range []struct {
			name string
			m    *Matrix
		}{{"attn_q", layer.WQ}, {"attn_k", layer.WK}, {"attn_v", layer.WV}, {"attn_output", layer.WO}, {"ffn_gate", layer.W1}, {"ffn_down", layer.W2}, {"ffn_up", layer.W3}} {
			tensor(p+m.name+".weight", m.m.Rows, m.m.Cols, m.m.F32, typ)
		}
	}
	var out bytes.Buffer
	out.WriteString("GGUF")
	binary.Write(&out, le, uint32(3))
	binary.Write(&out, le, uint64(nTensors))
	binary.Write(&out, le, uint64(nKV))
	out.Write(meta.Bytes())
	out.Write(infos.Bytes())
	for out.Len()%32 != 0 {
		out.WriteByte(0)
	}
	out.Write(data.Bytes())
	return out.Bytes()
}

// f32ToF16 rounds to the nearest half (normal range only: scales are).
func f32ToF16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case f == 0:
		return sign
	case exp <= 0 || exp >= 31:
		panic(fmt.Sprintf("f32ToF16: %g is outside the half range this writer needs", f))
	}
	h := uint32(exp)<<10 | mant>>13
	if mant&0x1000 != 0 { // round half up
		h++
	}
	return sign | uint16(h)
}

// A small llama whose every matrix is a multiple of 32 wide, so Q8_0 can
// hold all of it.
var q8Shape = Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 4, Vocab: 256, SeqLen: 64}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A Q8_0 GGUF runs as Q8_0 by default, its tied classifier included
// (before, the classifier ran as an f32 matvec unless --dtype q8_0 was
// given); --dtype f32 converts it, and the format says what runs.
func TestDTypeFollowsTheFile(t *testing.T) {
	w := Synthetic(q8Shape, 3)
	path := writeTemp(t, "q8.gguf", ggufOf(t, w, ByteLevelTokenizer(q8Shape.Vocab), ggmlQ8_0))
	asStored, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if !asStored.Weights.Classifier.Quantized() || asStored.Weights.Format() != "q8_0" {
		t.Fatalf("as stored: classifier quantized %v, format %q", asStored.Weights.Classifier.Quantized(), asStored.Weights.Format())
	}
	asked, err := Load(path, "q8_0")
	if err != nil {
		t.Fatal(err)
	}
	f32, err := Load(path, "f32")
	if err != nil || f32.Weights.Format() != "f32" {
		t.Fatalf("f32: %v, format %q", err, f32.Weights.Format())
	}
	// Asking for the file's own format changes nothing.
	tokens := func(m *Model) []int {
		e := NewEngine(m, 1)
		defer e.Close()
		var ids []int
		s := e.acquire()
		defer e.release(s)
		for i, tok := 0, 1; i < 16; i++ {
			tok = argmax(e.forwardOne(s, tok, i))
			ids = append(ids, tok)
		}
		return ids
	}
	if a, b := tokens(asStored), tokens(asked); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("as stored %v, asked for q8_0 %v", a, b)
	}
	// A tied f32 file stays f32 and shares the embedding's storage.
	f32File, err := Load(writeTemp(t, "f32.gguf", ggufOf(t, w, ByteLevelTokenizer(q8Shape.Vocab), ggmlF32)), "")
	if err != nil || f32File.Weights.Format() != "f32" || &f32File.Weights.Classifier.F32[0] != &f32File.Weights.Embedding[0] {
		t.Errorf("tied f32 file: %v, format %q", err, f32File.Weights.Format())
	}
}

func TestFormatNamesMixedMatrices(t *testing.T) {
	w := Synthetic(q8Shape, 3)
	q, _ := w.Layers[0].WQ.Quantize()
	w.Layers[0].WQ = q
	if got := w.Format(); got != "q8_0 ×1, f32 ×14" {
		t.Errorf("format %q", got)
	}
}

// BenchmarkTiedQ8File decodes a Q8_0 GGUF of stories15M's shape with a
// tied classifier: as stored (the classifier in Q8_0), and as it ran
// before the weights' format became the default (the classifier in f32).
func BenchmarkTiedQ8File(b *testing.B) {
	path := writeTemp(b, "q8-15m.gguf", ggufOf(b, Synthetic(SyntheticShapes["stories15M"], 1), ByteLevelTokenizer(SyntheticShapes["stories15M"].Vocab), ggmlQ8_0))
	for _, classifier := range []string{"q8_0", "f32"} {
		b.Run("classifier="+classifier, func(b *testing.B) {
			m, err := Load(path, "")
			if err != nil {
				b.Fatal(err)
			}
			if classifier == "f32" {
				m.Weights.Classifier = m.Weights.Classifier.Dequantize()
			}
			e := NewEngine(m, 2)
			defer e.Close()
			benchDecode(b, e)
		})
	}
}

// Q4_0 as ggml defines it: each value within one scale of the original
// (the largest magnitude maps to −8 exactly; its opposite clamps at 7),
// and a matrix-vector product within the activations' own quantization
// of the f32 product of the same (dequantized) weights.
func TestQ4RoundTripAndMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	rows, cols := 48, 256
	data := make([]float32, rows*cols)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	f := NewF32(rows, cols, data)
	q, err := f.QuantizeQ4()
	if err != nil || q.DType() != "q4_0" || q.Bytes() != int64(rows*cols/32*20) {
		t.Fatalf("%v, %s, %d bytes", err, q.DType(), q.Bytes())
	}
	back := q.Dequantize()
	for r := range rows {
		scales, _ := q.q4Row(r)
		for i := range cols {
			d := scales[i/GroupSize]
			if diff := math.Abs(float64(back.F32[r*cols+i] - data[r*cols+i])); diff > math.Abs(float64(d))*(1+1e-5) {
				t.Fatalf("row %d col %d: %g back as %g, scale %g", r, i, data[r*cols+i], back.F32[r*cols+i], d)
			}
		}
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	xq := newQuantized(cols)
	quantizeInto(xq.q, xq.scales[:cols/GroupSize], x)
	got, want := make([]float32, rows), make([]float32, rows)
	matVecQ4(got, q, &xq, 0, rows)
	matVecF32(want, back, x, 0, rows)
	var num, den float64
	for r := range rows {
		num += float64((got[r] - want[r]) * (got[r] - want[r]))
		den += float64(want[r] * want[r])
	}
	if rel := math.Sqrt(num / den); rel > 0.01 {
		t.Errorf("Q4_0 matvec off by %.4f (relative L2) from the f32 product of the same weights", rel)
	}
	if _, err := NewF32(2, 40, make([]float32, 80)).QuantizeQ4(); err == nil {
		t.Error("a 40-wide matrix quantized to Q4_0")
	}
}

// A Q4_0 GGUF loads as stored, its tied classifier included, and runs:
// its logits stay close to those of the same weights in f32.
func TestQ4GGUFRunsAsStored(t *testing.T) {
	w := Synthetic(q8Shape, 5)
	path := writeTemp(t, "q4.gguf", ggufOf(t, w, ByteLevelTokenizer(q8Shape.Vocab), ggmlQ4_0))
	q4, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if q4.Weights.Format() != "q4_0" || q4.Weights.Classifier.DType() != "q4_0" {
		t.Fatalf("format %q, classifier %s", q4.Weights.Format(), q4.Weights.Classifier.DType())
	}
	f32, err := Load(path, "f32") // the same stored weights, dequantized
	if err != nil {
		t.Fatal(err)
	}
	logits := func(m *Model) []float32 {
		e := NewEngine(m, 1)
		defer e.Close()
		s := e.acquire()
		defer e.release(s)
		var out []float32
		for i, tok := range []int{1, 40, 80, 120} {
			out = e.forwardOne(s, tok, i)
		}
		return append([]float32(nil), out...)
	}
	a, b := logits(q4), logits(f32)
	var num, den float64
	for i := range a {
		num += float64((a[i] - b[i]) * (a[i] - b[i]))
		den += float64(b[i] * b[i])
	}
	if rel := math.Sqrt(num / den); !(den > 0) || rel > 0.05 {
		t.Errorf("Q4_0 logits off by %.4f (relative L2, over logits of norm² %g) from the same weights in f32", rel, den)
	}
	q8, err := Load(path, "q8_0")
	if err != nil || q8.Weights.Format() != "q8_0" {
		t.Errorf("--dtype q8_0 of a Q4_0 file: %v, %q", err, q8.Weights.Format())
	}
}

// BenchmarkQ4File decodes a Q4_0 GGUF of stories15M's shape (its portable
// kernel: no SIMD one yet) beside the same weights in Q8_0.
func BenchmarkQ4File(b *testing.B) {
	shape := SyntheticShapes["stories15M"]
	w := Synthetic(shape, 1)
	for _, typ := range []uint32{ggmlQ4_0, ggmlQ8_0} {
		path := writeTemp(b, "15m.gguf", ggufOf(b, w, ByteLevelTokenizer(shape.Vocab), typ))
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", ggmlTypeNames[typ], threads), func(b *testing.B) {
				m, err := Load(path, "")
				if err != nil {
					b.Fatal(err)
				}
				e := NewEngine(m, threads)
				defer e.Close()
				benchDecode(b, e)
			})
		}
	}
}
