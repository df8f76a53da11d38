package builtin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ggml tensor types the engine reads: every type llama-quantize writes
// for its Q2_K…Q8_0 presets, and the fallbacks it picks for rows that are
// not a multiple of 256 wide (IQ4_NL, Q5_0, Q5_1, Q8_0, F16).
const (
	ggmlF32    = 0
	ggmlF16    = 1
	ggmlQ4_0   = 2
	ggmlQ4_1   = 3
	ggmlQ5_0   = 6
	ggmlQ5_1   = 7
	ggmlQ8_0   = 8
	ggmlQ2_K   = 10
	ggmlQ3_K   = 11
	ggmlQ4_K   = 12
	ggmlQ5_K   = 13
	ggmlQ6_K   = 14
	ggmlIQ4_NL = 20
)

// ggmlFormats are the quantized ggml types the engine multiplies as stored.
var ggmlFormats = func() map[uint32]format {
	m := map[uint32]format{}
	for f, spec := range formats {
		if format(f) != formatF32 {
			m[spec.ggml] = format(f)
		}
	}
	return m
}()

var ggmlTypeNames = map[uint32]string{0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
	19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}

// readableTypes lists the types the engine reads, for an error naming one
// it does not.
var readableTypes = func() string {
	names := []string{"F32", "F16"}
	for f := formatQ8_0; int(f) < len(formats); f++ {
		names = append(names, strings.ToUpper(f.String()))
	}
	return strings.Join(names, ", ")
}()

// GGUF is a parsed GGUF header: metadata and tensor directory.
type GGUF struct {
	Version    uint32
	Meta       map[string]any
	Tensors    map[string]GGUFTensor
	DataOffset int
}

// GGUFTensor locates one tensor. Dims are ggml's: Dims[0] varies fastest
// (the columns of a matrix).
type GGUFTensor struct {
	Dims   []uint64
	Type   uint32
	Offset uint64
}

type ggufReader struct {
	b   []byte
	pos int
	err error
}

var errShort = errors.New("file ends inside the header (truncated?)")

func (r *ggufReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) || r.pos+n < r.pos {
		r.err = errShort
		return nil
	}
	out := r.b[r.pos : r.pos+n]
	r.pos += n
	return out
}

func (r *ggufReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *ggufReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *ggufReader) str() string {
	n := r.u64()
	if n > uint64(len(r.b)) {
		r.err = errShort
		return ""
	}
	return string(r.take(int(n)))
}

// value reads one metadata value of type t; depth bounds nested arrays.
func (r *ggufReader) value(t uint32, depth int) any {
	switch t {
	case 0, 1:
		if b := r.take(1); b != nil {
			if t == 1 {
				return int64(int8(b[0]))
			}
			return uint64(b[0])
		}
	case 2, 3:
		if b := r.take(2); b != nil {
			v := binary.LittleEndian.Uint16(b)
			if t == 3 {
				return int64(int16(v))
			}
			return uint64(v)
		}
	case 4:
		return uint64(r.u32())
	case 5:
		return int64(int32(r.u32()))
	case 6:
		return float64(math.Float32frombits(r.u32()))
	case 7:
		if b := r.take(1); b != nil {
			return b[0] != 0
		}
	case 8:
		return r.str()
	case 9:
		elem, n := r.u32(), r.u64()
		if depth > 2 || n > uint64(len(r.b)-r.pos) { // every element takes at least a byte
			r.err = fmt.Errorf("metadata array of %d elements does not fit in the file (truncated?)", n)
			return nil
		}
		out := make([]any, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			out = append(out, r.value(elem, depth+1))
		}
		return out
	case 10:
		return r.u64()
	case 11:
		return int64(r.u64())
	case 12:
		return math.Float64frombits(r.u64())
	default:
		r.err = fmt.Errorf("unknown metadata value type %d", t)
	}
	return nil
}

// ParseGGUF reads a GGUF header, checking every length against the file.
func ParseGGUF(b []byte) (*GGUF, error) {
	r := &ggufReader{b: b}
	if magic := r.take(4); r.err != nil || string(magic) != "GGUF" {
		return nil, errors.New("not a GGUF file (no GGUF magic)")
	}
	g := &GGUF{Version: r.u32(), Meta: map[string]any{}, Tensors: map[string]GGUFTensor{}}
	if g.Version < 2 || g.Version > 3 {
		return nil, fmt.Errorf("GGUF version %d is not supported (2 and 3 are)", g.Version)
	}
	nTensors, nKV := r.u64(), r.u64()
	if nTensors > uint64(len(b)) || nKV > uint64(len(b)) {
		return nil, fmt.Errorf("GGUF header claims %d tensors and %d metadata keys; the file is too small for that", nTensors, nKV)
	}
	for i := uint64(0); i < nKV && r.err == nil; i++ {
		key := r.str()
		g.Meta[key] = r.value(r.u32(), 0)
	}
	for i := uint64(0); i < nTensors && r.err == nil; i++ {
		name := r.str()
		nDims := r.u32()
		if nDims > 4 {
			return nil, fmt.Errorf("tensor %q has %d dimensions; GGUF allows at most 4", name, nDims)
		}
		t := GGUFTensor{Dims: make([]uint64, nDims)}
		for d := range t.Dims {
			t.Dims[d] = r.u64()
		}
		t.Type, t.Offset = r.u32(), r.u64()
		g.Tensors[name] = t
	}
	if r.err != nil {
		return nil, r.err
	}
	align := uint64(32)
	if a, ok := g.Meta["general.alignment"].(uint64); ok && a > 0 && a <= 1<<16 {
		align = a
	}
	g.DataOffset = int((uint64(r.pos) + align - 1) / align * align)
	return g, nil
}

func (g *GGUF) metaInt(key string) (int, bool) {
	switch v := g.Meta[key].(type) {
	case uint64:
		return int(min(v, math.MaxInt32)), true
	case int64:
		return int(v), true
	}
	return 0, false
}

// LoadGGUF builds a llama model and its tokenizer from a GGUF file.
func LoadGGUF(b []byte) (*Weights, *Tokenizer, error) {
	g, err := ParseGGUF(b)
	if err != nil {
		return nil, nil, err
	}
	if arch, _ := g.Meta["general.architecture"].(string); arch != "llama" {
		return nil, nil, fmt.Errorf("GGUF general.architecture is %q; the builtin engine runs llama models only", arch)
	}
	tok, err := ggufTokenizer(g)
	if err != nil {
		return nil, nil, err
	}
	shape := Shape{Vocab: len(tok.Pieces)}
	for _, field := range []struct {
		key string
		dst *int
	}{{"llama.embedding_length", &shape.Dim}, {"llama.feed_forward_length", &shape.HiddenDim}, {"llama.block_count", &shape.Layers},
		{"llama.attention.head_count", &shape.Heads}, {"llama.context_length", &shape.SeqLen}} {
		v, ok := g.metaInt(field.key)
		if !ok {
			return nil, nil, fmt.Errorf("GGUF metadata lacks %s", field.key)
		}
		*field.dst = v
	}
	shape.KVHeads = shape.Heads
	if v, ok := g.metaInt("llama.attention.head_count_kv"); ok {
		shape.KVHeads = v
	}
	if err := shape.Validate(); err != nil {
		return nil, nil, fmt.Errorf("GGUF model shape: %w", err)
	}
	w := &Weights{Shape: shape, NormEps: 1e-5, Layers: make([]Layer, shape.Layers)}
	if eps, ok := g.Meta["llama.attention.layer_norm_rms_epsilon"].(float64); ok && eps > 0 {
		w.NormEps = float32(eps)
	}
	if base, ok := g.Meta["llama.rope.freq_base"].(float64); ok {
		if !(base > 1) || math.IsInf(base, 0) {
			return nil, nil, fmt.Errorf("GGUF llama.rope.freq_base is %g; rotary embeddings need a base above 1", base)
		}
		w.RopeBase = base
	}
	if scaling, ok := g.Meta["llama.rope.scaling.type"].(string); ok && scaling != "none" {
		return nil, nil, fmt.Errorf("GGUF llama.rope.scaling.type is %q; the builtin engine runs unscaled rotary embeddings only", scaling)
	}
	if hasTensor(g, "rope_freqs.weight") {
		return nil, nil, errors.New("GGUF has tensor rope_freqs.weight (Llama 3.1-style rotary scaling); the builtin engine runs unscaled rotary embeddings only")
	}
	d, h, kv := shape.Dim, shape.HiddenDim, shape.KVDim()
	load := &tensorLoader{g: g, b: b}
	w.Embedding = load.vector("token_embd.weight", shape.Vocab, d)
	w.FinalNorm = load.vector("output_norm.weight", 1, d)
	switch {
	case hasTensor(g, "output.weight"):
		w.Classifier = load.matrix("output.weight", shape.Vocab, d)
	case isQuantized(g.Tensors["token_embd.weight"].Type):
		// Tied and stored quantized (as llama-quantize writes it): the
		// classifier multiplies as stored; the rows looked up per token
		// are the f32 embedding above.
		w.Classifier = load.matrix("token_embd.weight", shape.Vocab, d)
	default:
		w.Classifier = NewF32(shape.Vocab, d, w.Embedding)
	}
	for l := range shape.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		w.Layers[l] = Layer{
			AttnNorm: load.vector(p+"attn_norm.weight", 1, d), FFNNorm: load.vector(p+"ffn_norm.weight", 1, d),
			WQ: load.matrix(p+"attn_q.weight", d, d), WK: load.matrix(p+"attn_k.weight", kv, d),
			WV: load.matrix(p+"attn_v.weight", kv, d), WO: load.matrix(p+"attn_output.weight", d, d),
			W1: load.matrix(p+"ffn_gate.weight", h, d), W2: load.matrix(p+"ffn_down.weight", d, h),
			W3: load.matrix(p+"ffn_up.weight", h, d),
		}
	}
	if load.err != nil {
		return nil, nil, load.err
	}
	return w, tok, nil
}

// ggufTokenizer reads the vocabulary: "llama" (sentencepiece: pieces with
// scores) or "gpt2" (byte-level BPE: pieces, ranked merges and a
// pre-tokenizer), with its BOS and end tokens where the file names them.
func ggufTokenizer(g *GGUF) (*Tokenizer, error) {
	model, _ := g.Meta["tokenizer.ggml.model"].(string)
	tokens, err := metaStrings(g, "tokenizer.ggml.tokens")
	if err != nil || len(tokens) == 0 {
		return nil, fmt.Errorf("GGUF tokenizer.ggml.tokens is missing or not a list of strings (%v); the engine needs the vocabulary", err)
	}
	var tok *Tokenizer
	switch model {
	case "llama":
		scores, _ := g.Meta["tokenizer.ggml.scores"].([]any)
		if len(scores) != len(tokens) {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.scores has %d entries for %d tokens; a sentencepiece vocabulary scores every piece", len(scores), len(tokens))
		}
		fscores := make([]float32, len(tokens))
		for i := range tokens {
			f, ok := scores[i].(float64)
			if !ok {
				return nil, fmt.Errorf("GGUF tokenizer.ggml.scores entry %d is not a float", i)
			}
			tokens[i] = strings.ReplaceAll(tokens[i], "\u2581", " ") // sentencepiece's space mark
			fscores[i] = float32(f)
		}
		tok = NewTokenizer(tokens, fscores)
		if add, ok := g.Meta["tokenizer.ggml.add_space_prefix"].(bool); ok {
			tok.noSpacePrefix = !add
		}
	case "gpt2":
		merges, err := metaStrings(g, "tokenizer.ggml.merges")
		if err != nil || len(merges) == 0 {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.merges is missing or not a list of strings (%v); a gpt2 vocabulary needs its merges", err)
		}
		pre, _ := g.Meta["tokenizer.ggml.pre"].(string)
		var types []int
		if raw, ok := g.Meta["tokenizer.ggml.token_type"].([]any); ok && len(raw) == len(tokens) {
			for _, v := range raw {
				n, _ := v.(int64)
				types = append(types, int(n))
			}
		}
		bpe, err := newBPE(tokens, merges, pre, types)
		if err != nil {
			return nil, err
		}
		tok = NewTokenizer(tokens, make([]float32, len(tokens)))
		tok.bpe, tok.bos, tok.addBOS, tok.stops = bpe, -1, false, nil
	default:
		return nil, fmt.Errorf("GGUF tokenizer.ggml.model is %q; the builtin engine reads \"llama\" (sentencepiece) and \"gpt2\" (BPE) vocabularies", model)
	}
	for _, key := range []string{"bos", "eos", "eot", "eom"} {
		id, ok := g.metaInt("tokenizer.ggml." + key + "_token_id")
		if !ok {
			continue
		}
		if id < 0 || id >= len(tokens) {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.%s_token_id is %d, outside the %d-token vocabulary", key, id, len(tokens))
		}
		if key == "bos" {
			tok.bos, tok.addBOS = id, true
			continue
		}
		if !slices.Contains(tok.stops, id) {
			tok.stops = append(tok.stops, id)
		}
	}
	if add, ok := g.Meta["tokenizer.ggml.add_bos_token"].(bool); ok {
		tok.addBOS = add && tok.bos >= 0
	}
	return tok, nil
}

// metaStrings reads a metadata array of strings.
func metaStrings(g *GGUF, key string) ([]string, error) {
	raw, ok := g.Meta[key].([]any)
	if !ok {
		return nil, errors.New("no such array")
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		if out[i], ok = v.(string); !ok {
			return nil, fmt.Errorf("entry %d is not a string", i)
		}
	}
	return out, nil
}

// isQuantized reports whether ggml type typ is one the engine multiplies
// as stored.
func isQuantized(typ uint32) bool {
	_, ok := ggmlFormats[typ]
	return ok
}

func hasTensor(g *GGUF, name string) bool {
	_, ok := g.Tensors[name]
	return ok
}

// tensorLoader reads tensors by name, keeping the first error.
type tensorLoader struct {
	g   *GGUF
	b   []byte
	err error
}

// data returns tensor name's bytes after checking its shape and type.
func (l *tensorLoader) data(name string, rows, cols int) (GGUFTensor, []byte) {
	if l.err != nil {
		return GGUFTensor{}, nil
	}
	t, ok := l.g.Tensors[name]
	if !ok {
		l.err = fmt.Errorf("GGUF lacks tensor %s", name)
		return t, nil
	}
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	if n != uint64(rows)*uint64(cols) || (len(t.Dims) > 0 && t.Dims[0] != uint64(cols)) {
		l.err = fmt.Errorf("tensor %s has dims %v; the model's shape needs %d×%d", name, t.Dims, cols, rows)
		return t, nil
	}
	var size uint64
	f, quantized := ggmlFormats[t.Type]
	switch {
	case t.Type == ggmlF32:
		size = n * 4
	case t.Type == ggmlF16:
		size = n * 2
	case quantized:
		if cols%f.block() != 0 {
			l.err = fmt.Errorf("tensor %s: %s rows of %d values, not a multiple of its %d-weight block", name, ggmlTypeNames[t.Type], cols, f.block())
			return t, nil
		}
		size = n / uint64(f.block()) * uint64(f.fileBlockBytes())
	default:
		typeName := ggmlTypeNames[t.Type]
		if typeName == "" {
			typeName = fmt.Sprintf("type %d", t.Type)
		}
		l.err = fmt.Errorf("tensor %s is %s; the builtin engine reads %s (requantize with llama-quantize, e.g. to Q4_K_M)", name, typeName, readableTypes)
		return t, nil
	}
	start := uint64(l.g.DataOffset) + t.Offset
	if start < t.Offset || start+size > uint64(len(l.b)) || start+size < start {
		l.err = fmt.Errorf("tensor %s runs past the end of the file (truncated?)", name)
		return t, nil
	}
	return t, l.b[start : start+size]
}

// vector reads a rows × cols tensor as f32 values.
func (l *tensorLoader) vector(name string, rows, cols int) []float32 {
	t, raw := l.data(name, rows, cols)
	if raw == nil {
		return nil
	}
	n := rows * cols
	switch t.Type {
	case ggmlF32:
		return floatsOf(raw)
	case ggmlF16:
		out := make([]float32, n)
		for i := range out {
			out[i] = f16ToF32(le16(raw[2*i:]))
		}
		return out
	default: // quantized: dequantized through the matrix form
		return l.matrixOf(t, raw, rows, cols).Dequantize().F32
	}
}

// matrix reads a rows × cols weight; quantized ones stay quantized.
func (l *tensorLoader) matrix(name string, rows, cols int) *Matrix {
	t, raw := l.data(name, rows, cols)
	if raw == nil {
		return nil
	}
	if !isQuantized(t.Type) {
		return NewF32(rows, cols, l.vector(name, rows, cols))
	}
	// Tiles only here, for the matrices that multiply: an embedding read
	// as vector is dequantized and its matrix dropped.
	return withTiles(l.matrixOf(t, raw, rows, cols))
}

// matrixOf makes a quantized tensor a Matrix. Most formats' rows are the
// file's bytes, viewed in place. Q8_0 and Q4_0 blocks (an f16 scale, then
// the group's payload) become the engine's rows (the scales, then the
// payloads).
func (l *tensorLoader) matrixOf(t GGUFTensor, raw []byte, rows, cols int) *Matrix {
	f := ggmlFormats[t.Type]
	if f.storedAsBlocks() {
		return &Matrix{Rows: rows, Cols: cols, format: f, quant: raw}
	}
	m := newQuantMatrix(f, rows, cols)
	groups := cols / GroupSize
	block := f.fileBlockBytes()
	payload := block - 2
	for r := range rows {
		scales, payloads := m.groupRow(r)
		for g := range groups {
			b := raw[(r*groups+g)*block:]
			scales[g] = f16ToF32(le16(b))
			copy(payloads[g*payload:(g+1)*payload], b[2:block])
		}
	}
	return m
}

// f16ToF32 converts an IEEE half-precision value. The block kernels
// convert one per block, so it is small enough to inline (a call makes
// a kernel spill its registers every block): the half's bits moved into
// a float32's places read 2^112 too small, for normal and subnormal
// halves alike, and a multiply by 2^112 is exact.
func f16ToF32(h uint16) float32 {
	bits := uint32(h&0x8000)<<16 | uint32(h&0x7fff)<<13
	if h&0x7c00 == 0x7c00 { // infinity or NaN
		return math.Float32frombits(bits | 0x7f800000)
	}
	return math.Float32frombits(bits) * 0x1p112
}
