package builtin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ggufOf writes w as a llama GGUF (version 3) with vocab's tokenizer
// metadata, each matrix in the ggml type typeOf gives its tensor's name
// (F32 or any quantized format the engine reads), and the classifier tied to the
// embedding (no output.weight), as llama-quantize writes small models.
func ggufOf(t testing.TB, w *Weights, vocab []metaKV, typeOf func(tensor string) uint32) []byte {
	t.Helper()
	var meta, infos, data bytes.Buffer
	le := binary.LittleEndian
	s := w.Shape
	kvs := append([]metaKV{
		{"general.architecture", "llama"},
		{"llama.embedding_length", uint32(s.Dim)},
		{"llama.feed_forward_length", uint32(s.HiddenDim)},
		{"llama.block_count", uint32(s.Layers)},
		{"llama.attention.head_count", uint32(s.Heads)},
		{"llama.attention.head_count_kv", uint32(s.KVHeads)},
		{"llama.context_length", uint32(s.SeqLen)},
		{"llama.attention.layer_norm_rms_epsilon", w.NormEps},
	}, vocab...)
	for _, kv := range kvs {
		writeMeta(&meta, kv)
	}
	nTensors := 0
	tensor := func(name string, rows, cols int, values []float32, typ uint32) {
		for data.Len()%32 != 0 {
			data.WriteByte(0)
		}
		ggufString(&infos, name)
		binary.Write(&infos, le, uint32(2))
		binary.Write(&infos, le, uint64(cols))
		binary.Write(&infos, le, uint64(rows))
		binary.Write(&infos, le, typ)
		binary.Write(&infos, le, uint64(data.Len()))
		nTensors++
		switch typ {
		case ggmlF32:
			binary.Write(&data, le, values)
			return
		case ggmlF16, ggmlBF16:
			data.Write(halfBytes(halfOf(typ), values))
			return
		}
		q := quantizeTo(t, typ, NewF32(rows, cols, values))
		if q.format.storedAsBlocks() { // the engine keeps the file's blocks
			data.Write(q.quant)
			return
		}
		// The engine's rows hold a row's scales, then its groups'
		// payloads in file order: a GGUF block is a scale (as f16) and
		// its group's payload.
		groups := cols / GroupSize
		q = q.withRows()
		for r := range rows {
			scales, payloads := q.groupRow(r)
			per := len(payloads) / groups
			for g := range groups {
				binary.Write(&data, le, f32ToF16(scales[g]))
				data.Write(payloads[g*per : (g+1)*per])
			}
		}
	}
	d := s.Dim
	tensor("token_embd.weight", s.Vocab, d, w.Embedding, typeOf("token_embd.weight"))
	tensor("output_norm.weight", 1, d, w.FinalNorm, ggmlF32)
	for l, layer := range w.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		tensor(p+"attn_norm.weight", 1, d, layer.AttnNorm, ggmlF32)
		tensor(p+"ffn_norm.weight", 1, d, layer.FFNNorm, ggmlF32)
		for _, m := range []struct {
			name string
			m    *Matrix
		}{{"attn_q", layer.WQ}, {"attn_k", layer.WK}, {"attn_v", layer.WV}, {"attn_output", layer.WO}, {"ffn_gate", layer.W1}, {"ffn_down", layer.W2}, {"ffn_up", layer.W3}} {
			tensor(p+m.name+".weight", m.m.Rows, m.m.Cols, m.m.F32, typeOf(p+m.name+".weight"))
		}
	}
	var out bytes.Buffer
	out.WriteString("GGUF")
	binary.Write(&out, le, uint32(3))
	binary.Write(&out, le, uint64(nTensors))
	binary.Write(&out, le, uint64(len(kvs)))
	out.Write(meta.Bytes())
	out.Write(infos.Bytes())
	for out.Len()%32 != 0 {
		out.WriteByte(0)
	}
	out.Write(data.Bytes())
	return out.Bytes()
}

// metaKV is one GGUF metadata entry: a string, uint32, int32, float32,
// bool, or a slice of strings, float32s or int32s.
type metaKV struct {
	key   string
	value any
}

func ggufString(b *bytes.Buffer, s string) {
	binary.Write(b, binary.LittleEndian, uint64(len(s)))
	b.WriteString(s)
}

// writeMeta encodes kv with GGUF's value types (4 uint32, 5 int32,
// 6 float32, 7 bool, 8 string, 9 array).
func writeMeta(b *bytes.Buffer, kv metaKV) {
	le := binary.LittleEndian
	ggufString(b, kv.key)
	array := func(elem uint32, n int) {
		binary.Write(b, le, uint32(9))
		binary.Write(b, le, elem)
		binary.Write(b, le, uint64(n))
	}
	switch v := kv.value.(type) {
	case string:
		binary.Write(b, le, uint32(8))
		ggufString(b, v)
	case uint32:
		binary.Write(b, le, uint32(4))
		binary.Write(b, le, v)
	case int32:
		binary.Write(b, le, uint32(5))
		binary.Write(b, le, v)
	case float32:
		binary.Write(b, le, uint32(6))
		binary.Write(b, le, v)
	case bool:
		binary.Write(b, le, uint32(7))
		binary.Write(b, le, v)
	case []string:
		array(8, len(v))
		for _, s := range v {
			ggufString(b, s)
		}
	case []float32:
		array(6, len(v))
		binary.Write(b, le, v)
	case []int32:
		array(5, len(v))
		binary.Write(b, le, v)
	default:
		panic(fmt.Sprintf("writeMeta: %s has a %T", kv.key, kv.value))
	}
}

// spmVocab is tok's sentencepiece metadata.
func spmVocab(tok *Tokenizer) []metaKV {
	return []metaKV{{"tokenizer.ggml.model", "llama"}, {"tokenizer.ggml.tokens", tok.Pieces}, {"tokenizer.ggml.scores", tok.Scores}}
}

// halfBits is f rounded to the nearest 16-bit float of kind h, ties to
// even, as the file stores it (finite values only).
func halfBits(h halfKind, f float32) uint16 {
	if h == ieeeHalf {
		return f32ToF16(f)
	}
	return bfloat16Bits(f)
}

// halfBytes is values stored as a GGUF F16 or BF16 tensor stores them
// (halfBits each, little-endian).
func halfBytes(h halfKind, values []float32) []byte {
	b := make([]byte, 2*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint16(b[2*i:], halfBits(h, v))
	}
	return b
}

// every gives each matrix the same ggml type.
func every(typ uint32) func(string) uint32 { return func(string) uint32 { return typ } }

// q4KM is llama-quantize's Q4_K_M mix for a model of the given layers:
// Q6_K for the tied embedding, and for attn_v and ffn_down in the first
// and last eighth of the layers and every third layer between; Q4_K for
// the rest.
func q4KM(layers int) func(string) uint32 {
	return func(tensor string) uint32 {
		if tensor == "token_embd.weight" {
			return ggmlQ6_K
		}
		var l int
		var name string
		if _, err := fmt.Sscanf(tensor, "blk.%d.%s", &l, &name); err == nil && (name == "attn_v.weight" || name == "ffn_down.weight") {
			if l < layers/8 || l >= 7*layers/8 || (l-layers/8)%3 == 2 {
				return ggmlQ6_K
			}
		}
		return ggmlQ4_K
	}
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
	path := writeTemp(t, "q8.gguf", ggufOf(t, w, spmVocab(ByteLevelTokenizer(q8Shape.Vocab)), every(ggmlQ8_0)))
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
	// A tied f32 file stays f32 and holds the embedding once: the
	// classifier shares its rows, or its tiles hold them (and each token's
	// row read out of them is the file's).
	f32File, err := Load(writeTemp(t, "f32.gguf", ggufOf(t, w, spmVocab(ByteLevelTokenizer(q8Shape.Vocab)), every(ggmlF32))), "")
	if err != nil {
		t.Fatal(err)
	}
	fw := f32File.Weights
	if fw.Format() != "f32" || !fw.tied() && fw.Embedding != nil {
		t.Errorf("tied f32 file: format %q, classifier shares the embedding %v, a copy of it kept %v", fw.Format(), fw.tied(), fw.Embedding != nil)
	}
	got, d := make([]float32, fw.Shape.Dim), fw.Shape.Dim
	for _, token := range []int{0, 9, fw.Shape.Vocab - 1} {
		fw.embed(got, token, nil)
		if want := w.Embedding[token*d : (token+1)*d]; !slices.Equal(got, want) {
			t.Errorf("token %d's embedding %v, the file's %v", token, got[:3], want[:3])
		}
	}
}

// lastLogits runs tokens through m one by one and returns the logits
// after the last.
// offFromF32 is how far m's logits for a fixed prompt are (relative L2)
// from those of the same file's weights run in f32.
func offFromF32(t *testing.T, m *Model, path string) float64 {
	t.Helper()
	f32, err := Load(path, "f32")
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int{1, 40, 80, 120, 7}
	return relativeL2(lastLogits(m, 2, tokens), lastLogits(f32, 2, tokens))
}

func lastLogits(m *Model, threads int, tokens []int) []float32 {
	e := NewEngine(m, threads)
	defer e.Close()
	s := e.acquire()
	defer e.release(s)
	var out []float32
	for i, tok := range tokens {
		out = e.forwardOne(s, tok, i)
	}
	return slices.Clone(out)
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
	path := writeTemp(b, "q8-15m.gguf", ggufOf(b, Synthetic(SyntheticShapes["stories15M"], 1), spmVocab(ByteLevelTokenizer(SyntheticShapes["stories15M"].Vocab)), every(ggmlQ8_0)))
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

// Q4_0 by ggml's rule brings every weight back within one step of the
// original (a code is rounded, and the extreme may clamp at +7 by half a
// step), and refuses a matrix whose rows are not whole groups.
func TestQ4RoundTripWithinAStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	rows, cols := 48, 256
	f := randomMatrix(rng, rows, cols)
	q := quantizeTo(t, ggmlQ4_0, f)
	back := q.Dequantize()
	for r := range rows {
		raw := q.quantRow(r)
		for i := range cols {
			d := f16ToF32(le16(raw[i/GroupSize*q4_0BlockBytes:]))
			if diff := math.Abs(float64(back.F32[r*cols+i] - f.F32[r*cols+i])); diff > math.Abs(float64(d))*(1+1e-3) {
				t.Fatalf("row %d col %d: %g back as %g, scale %g", r, i, f.F32[r*cols+i], back.F32[r*cols+i], d)
			}
		}
	}
	if _, err := quantizeK(NewF32(2, 40, make([]float32, 80)), formatQ4_0, encodeQ4_0); err == nil {
		t.Error("a 40-wide matrix quantized to Q4_0")
	}
}

// A Q4_0 GGUF loads as stored, its tied classifier included, and runs:
// its logits stay close to those of the same weights in f32.
func TestQ4GGUFRunsAsStored(t *testing.T) {
	w := Synthetic(q8Shape, 5)
	path := writeTemp(t, "q4.gguf", ggufOf(t, w, spmVocab(ByteLevelTokenizer(q8Shape.Vocab)), every(ggmlQ4_0)))
	q4, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if q4.Weights.Format() != "q4_0" || q4.Weights.Classifier.DType() != "q4_0" {
		t.Fatalf("format %q, classifier %s", q4.Weights.Format(), q4.Weights.Classifier.DType())
	}
	if rel := offFromF32(t, q4, path); !(rel <= 0.05) {
		t.Errorf("Q4_0 logits off by %.4f (relative L2) from the same weights in f32", rel)
	}
	q8, err := Load(path, "q8_0")
	if err != nil || q8.Weights.Format() != "q8_0" {
		t.Errorf("--dtype q8_0 of a Q4_0 file: %v, %q", err, q8.Weights.Format())
	}
}

// BenchmarkQ4File decodes a Q4_0 GGUF of stories15M's shape beside the
// same weights in Q8_0.
func BenchmarkQ4File(b *testing.B) {
	shape := SyntheticShapes["stories15M"]
	w := Synthetic(shape, 1)
	for _, typ := range []uint32{ggmlQ4_0, ggmlQ8_0} {
		path := writeTemp(b, "15m.gguf", ggufOf(b, w, spmVocab(ByteLevelTokenizer(shape.Vocab)), every(typ)))
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

// TestWriteSpeedTableFiles writes f32 GGUFs of the stories shapes (seeded
// synthetic weights, byte-level vocabulary) into $TOKENTOP_GGUF_DIR, for
// scripts/speed-table to quantize with llama-quantize and time against
// llama-bench. Without the variable it does nothing.
func TestWriteSpeedTableFiles(t *testing.T) {
	dir := os.Getenv("TOKENTOP_GGUF_DIR")
	if dir == "" {
		t.Skip("set TOKENTOP_GGUF_DIR to write the speed table's GGUFs")
	}
	for _, name := range []string{"stories15M", "stories42M", "stories110M"} {
		shape := SyntheticShapes[name]
		data := ggufOf(t, Synthetic(shape, 1), spmVocab(ByteLevelTokenizer(shape.Vocab)), every(ggmlF32))
		if err := os.WriteFile(filepath.Join(dir, name+"-f32.gguf"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
