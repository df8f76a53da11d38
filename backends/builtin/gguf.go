package builtin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// ggml tensor types the engine reads: every type llama-quantize writes
// for its Q2_K…Q8_0 presets, and the fallbacks it picks for rows that are
// not a multiple of 256 wide (IQ4_NL, Q5_0, Q5_1, Q8_0, F16), and BF16,
// which llama.cpp's converter writes for a model published in it.
const (
	ggmlF32    = 0
	ggmlF16    = 1
	ggmlBF16   = 30
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
	names := []string{"F32", "F16", "BF16"}
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
			return nil, fmt.Errorf("tensor %q has %d dimensions; GGUF allows at most 4", untrusted.Line(name), nDims)
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

// ggufArchitectures are the general.architecture values the engine runs,
// each with its rotary pairing (llama.cpp's rope type for it).
var ggufArchitectures = map[string]struct{ neox bool }{
	"llama": {}, "qwen2": {neox: true}, "qwen3": {neox: true}, "gemma3": {neox: true},
}

// ggufContextCap bounds the context the engine allocates for: files name
// their trained context (131,072 tokens for Llama 3.2), and a stream's
// rotary tables and attention rows are sized by it. Benchmarks' prompts
// and outputs are far shorter (llama.cpp, fitting a model into memory,
// goes no lower than this).
const ggufContextCap = 4096

// LoadGGUF builds a model and its tokenizer from a GGUF file of one of
// ggufArchitectures, reading each as llama.cpp reads it; anything the
// engine cannot run is refused, naming the key or tensor. F16 and BF16
// tensors' halves are widened to rows here (Load keeps them, as tiles).
func LoadGGUF(b []byte) (*Weights, *Tokenizer, error) {
	w, tok, err := loadGGUF(b, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range w.matrices() {
		if (*m).halves != nil {
			*m = (*m).withRows()
		}
	}
	return w, tok, nil
}

// loadGGUF is LoadGGUF, handing each quantized matrix's bytes to release
// once the engine holds its own copy of them (tiles, or Q8_0's rows), so
// that a mapped file's pages are not held beside the copies; release is
// nil where b is not a mapped file.
func loadGGUF(b []byte, release func([]byte)) (*Weights, *Tokenizer, error) {
	g, err := ParseGGUF(b)
	if err != nil {
		return nil, nil, err
	}
	return loadParsed(g, b, release)
}

// loadParsed is loadGGUF of a parsed file g of bytes b.
func loadParsed(g *GGUF, b []byte, release func([]byte)) (*Weights, *Tokenizer, error) {
	arch, _ := g.Meta["general.architecture"].(string)
	kind, ok := ggufArchitectures[arch]
	if !ok {
		return nil, nil, fmt.Errorf("GGUF general.architecture is %q; the builtin engine runs %s", untrusted.Line(arch), strings.Join(slices.Sorted(maps.Keys(ggufArchitectures)), ", "))
	}
	tok, err := ggufTokenizer(g)
	if err != nil {
		return nil, nil, err
	}
	key := func(name string) string { return arch + "." + name }
	shape := Shape{Vocab: len(tok.Pieces)}
	for _, field := range []struct {
		key string
		dst *int
	}{{"embedding_length", &shape.Dim}, {"feed_forward_length", &shape.HiddenDim}, {"block_count", &shape.Layers},
		{"attention.head_count", &shape.Heads}, {"context_length", &shape.SeqLen}} {
		v, err := g.intKey(key(field.key), true)
		if err != nil {
			return nil, nil, err
		}
		*field.dst = v
	}
	shape.KVHeads = shape.Heads
	if v, err := g.intKey(key("attention.head_count_kv"), false); err != nil {
		return nil, nil, err
	} else if v != 0 {
		shape.KVHeads = v
	}
	w := &Weights{NormEps: 1e-5, Layers: make([]Layer, shape.Layers), Arch: Arch{Name: arch, RopeNeox: kind.neox}}
	if shape.SeqLen > ggufContextCap {
		w.FileContext, shape.SeqLen = shape.SeqLen, ggufContextCap
	}
	if err := readHeadDim(g, key, &shape); err != nil {
		return nil, nil, err
	}
	if err := shape.Validate(); err != nil {
		return nil, nil, fmt.Errorf("GGUF model shape: %w", err)
	}
	w.Shape = shape
	if eps, ok := g.Meta[key("attention.layer_norm_rms_epsilon")].(float64); ok && eps > 0 {
		w.NormEps = float32(eps)
	}
	if err := w.readRope(g, key); err != nil {
		return nil, nil, err
	}
	if arch == "gemma3" {
		if err := w.readGemma3(g, key); err != nil {
			return nil, nil, err
		}
	}
	d, h, kv, qd, hs := shape.Dim, shape.HiddenDim, shape.KVDim(), shape.QDim(), shape.HeadSize()
	load := &tensorLoader{g: g, b: b, release: release}
	if embedType := g.Tensors["token_embd.weight"].Type; isQuantized(embedType) || halfOf(embedType) != notHalf {
		w.embedRows = load.rows("token_embd.weight", shape.Vocab, d)
	} else {
		w.Embedding = load.vector("token_embd.weight", shape.Vocab, d)
	}
	w.FinalNorm = load.vector("output_norm.weight", 1, d)
	if hasTensor(g, "rope_freqs.weight") {
		w.RopeFactors = load.vector("rope_freqs.weight", 1, hs/2)
	}
	switch {
	case hasTensor(g, "output.weight"):
		w.Classifier = load.matrix("output.weight", shape.Vocab, d)
	case w.embedRows != nil:
		// Tied and stored quantized (as llama-quantize writes it) or as
		// halves: the classifier multiplies as stored; the rows looked up
		// per token are decoded from the file's.
		w.Classifier = load.matrix("token_embd.weight", shape.Vocab, d)
	default:
		w.Classifier = NewF32(shape.Vocab, d, w.Embedding)
	}
	for l := range shape.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		layer := &w.Layers[l] // gemma3's marked sliding or global already (readGemma3)
		layer.AttnNorm, layer.FFNNorm = load.vector(p+"attn_norm.weight", 1, d), load.vector(p+"ffn_norm.weight", 1, d)
		layer.WQ, layer.WK = load.matrix(p+"attn_q.weight", qd, d), load.matrix(p+"attn_k.weight", kv, d)
		layer.WV, layer.WO = load.matrix(p+"attn_v.weight", kv, d), load.matrix(p+"attn_output.weight", d, qd)
		layer.W1, layer.W2 = load.matrix(p+"ffn_gate.weight", h, d), load.matrix(p+"ffn_down.weight", d, h)
		layer.W3 = load.matrix(p+"ffn_up.weight", h, d)
		switch arch {
		case "qwen2":
			layer.QBias, layer.KBias, layer.VBias = load.vector(p+"attn_q.bias", 1, qd), load.vector(p+"attn_k.bias", 1, kv), load.vector(p+"attn_v.bias", 1, kv)
		case "qwen3":
			layer.QNorm, layer.KNorm = load.vector(p+"attn_q_norm.weight", 1, hs), load.vector(p+"attn_k_norm.weight", 1, hs)
		case "gemma3":
			layer.QNorm, layer.KNorm = load.vector(p+"attn_q_norm.weight", 1, hs), load.vector(p+"attn_k_norm.weight", 1, hs)
			layer.PostAttnNorm, layer.PostFFNNorm = load.vector(p+"post_attention_norm.weight", 1, d), load.vector(p+"post_ffw_norm.weight", 1, d)
		}
	}
	if load.err != nil {
		return nil, nil, load.err
	}
	// A tensor the engine does not read is one llama.cpp would apply (a
	// bias, a scale, an expert) or refuse the file for: running without
	// it would be another model.
	if unread := load.unread(); len(unread) > 0 {
		return nil, nil, fmt.Errorf("GGUF has %d tensor(s) the builtin engine's %s does not read, %q first (a bias, scale or expert it does not add)", len(unread), arch, untrusted.Line(unread[0]))
	}
	return w, tok, nil
}

// intKey reads an integer metadata key; a missing one is an error when
// required, else 0.
func (g *GGUF) intKey(key string, required bool) (int, error) {
	if _, isList := g.Meta[key].([]any); isList {
		return 0, fmt.Errorf("GGUF %s is a list (a value per layer); the builtin engine runs models whose layers are alike", key)
	}
	v, ok := g.metaInt(key)
	if !ok && required {
		return 0, fmt.Errorf("GGUF metadata lacks %s", key)
	}
	if v < 0 {
		return 0, fmt.Errorf("GGUF %s is %d; it must not be negative", key, v)
	}
	return v, nil
}

// readHeadDim sets shape's head width where the file names its own, and
// refuses keys and values of different widths.
func readHeadDim(g *GGUF, key func(string) string, shape *Shape) error {
	k, err := g.intKey(key("attention.key_length"), false)
	if err != nil {
		return err
	}
	v, err := g.intKey(key("attention.value_length"), false)
	if err != nil {
		return err
	}
	if k != 0 && v != 0 && k != v {
		return fmt.Errorf("GGUF %s is %d and %s %d; the builtin engine runs heads whose keys and values are as wide", key("attention.key_length"), k, key("attention.value_length"), v)
	}
	if k != 0 && (shape.Heads == 0 || k != shape.Dim/shape.Heads) {
		shape.HeadDim = k
	}
	return nil
}

// readRope reads the rotary embeddings' base and scaling.
func (w *Weights) readRope(g *GGUF, key func(string) string) error {
	if base, ok := g.Meta[key("rope.freq_base")].(float64); ok {
		if !(base > 1) || math.IsInf(base, 0) {
			return fmt.Errorf("GGUF %s is %g; rotary embeddings need a base above 1", key("rope.freq_base"), base)
		}
		w.RopeBase = base
	}
	if n, err := g.intKey(key("rope.dimension_count"), false); err != nil {
		return err
	} else if n != 0 && n != w.Shape.HeadSize() {
		return fmt.Errorf("GGUF %s is %d, a part of the %d-wide heads; the builtin engine rotates whole heads", key("rope.dimension_count"), n, w.Shape.HeadSize())
	}
	// llama.cpp multiplies every rotated query and key by it.
	if f, ok := g.Meta[key("rope.scaling.attn_factor")].(float64); ok && f != 1 {
		return fmt.Errorf("GGUF %s is %g; the builtin engine runs rotary embeddings unscaled in size (1)", key("rope.scaling.attn_factor"), f)
	}
	scaling, _ := g.Meta[key("rope.scaling.type")].(string)
	factor, _ := g.Meta[key("rope.scaling.factor")].(float64)
	if factor == 0 {
		factor, _ = g.Meta[key("rope.scale_linear")].(float64)
	}
	switch scaling {
	case "", "none", "linear":
		// llama.cpp reads a factor with no type as linear scaling.
		if scaling != "none" && factor != 0 && factor != 1 {
			if !(factor > 0) || math.IsInf(factor, 0) {
				return fmt.Errorf("GGUF %s is %g; a scaling factor must be positive", key("rope.scaling.factor"), factor)
			}
			w.RopeScale = 1 / factor
		}
	default:
		return fmt.Errorf("GGUF %s is %q; the builtin engine runs linear rope scaling and Llama 3's rope_freqs", key("rope.scaling.type"), untrusted.Line(scaling))
	}
	return nil
}

// readGemma3 reads what gemma3's block adds to llama's, as llama.cpp's
// gemma3 graph uses it: the embedding scaled by √dim, GeGLU, queries
// scaled by 1/√headSize (1/√(dim/heads) for the 27B, 62 layers), sliding
// layers with a rotary base of 10000, and the logits' soft-capping where
// the file asks for it. The norms' +1 is already in the file's weights
// (llama.cpp's converter adds it).
func (w *Weights) readGemma3(g *GGUF, key func(string) string) error {
	s := w.Shape
	w.EmbedScale = float32(math.Sqrt(float64(s.Dim)))
	w.GELU = true
	w.AttnScale = float32(1 / math.Sqrt(float64(s.HeadSize())))
	if s.Layers == 62 {
		w.AttnScale = float32(1 / math.Sqrt(float64(s.Dim/s.Heads)))
	}
	window, err := g.intKey(key("attention.sliding_window"), false)
	if err != nil {
		return err
	}
	w.Window = window
	// as llama.cpp, which reads the pattern only for a model with a window
	if window > 0 {
		period, err := readSlidingPeriod(g, key("attention.sliding_window_pattern"), len(w.Layers))
		if err != nil {
			return err
		}
		for l := range w.Layers {
			w.Layers[l].Sliding = slidingLayer(period, l)
		}
	}
	w.SlidingRopeBase = 10000
	if base, ok := g.Meta[key("rope.freq_base_swa")].(float64); ok {
		if !(base > 1) || math.IsInf(base, 0) {
			return fmt.Errorf("GGUF %s is %g; rotary embeddings need a base above 1", key("rope.freq_base_swa"), base)
		}
		w.SlidingRopeBase = base
	}
	if c, ok := g.Meta[key("final_logit_softcapping")].(float64); ok && c != 0 {
		if !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("GGUF %s is %g; a soft cap must be positive", key("final_logit_softcapping"), c)
		}
		w.LogitSoftcap = float32(c)
	}
	return nil
}

// gemma3DefaultSlidingPeriod is llama.cpp's: five sliding layers, then a
// global one.
const gemma3DefaultSlidingPeriod = 6

// readSlidingPeriod reads gemma3's layer period as llama.cpp does: an
// integer is the period (see slidingLayer). llama.cpp passes over a list
// there and runs the default, so a list is run only where it says the
// default, and refused where running either would be another model than
// the file describes.
func readSlidingPeriod(g *GGUF, patternKey string, layers int) (int, error) {
	var list []any
	switch raw := g.Meta[patternKey].(type) {
	case nil:
		return gemma3DefaultSlidingPeriod, nil
	case uint64, int64:
		return g.intKey(patternKey, false)
	case []any:
		list = raw
	default:
		return 0, fmt.Errorf("GGUF %s is a %T; llama.cpp reads an integer period there", patternKey, raw)
	}
	if len(list) != layers {
		return 0, fmt.Errorf("GGUF %s lists %d layers for a model of %d", patternKey, len(list), layers)
	}
	for l, v := range list {
		if sliding, _ := v.(bool); sliding != slidingLayer(gemma3DefaultSlidingPeriod, l) {
			return 0, fmt.Errorf("GGUF %s says layer %d is %s; llama.cpp passes over a list there and runs five sliding layers, then a global one, so the builtin engine refuses a list that says otherwise", patternKey, l, map[bool]string{true: "sliding", false: "global"}[sliding])
		}
	}
	return gemma3DefaultSlidingPeriod, nil
}

// slidingLayer reports whether layer l slides under period n, as
// llama.cpp's set_swa_pattern has it: of each n layers the last is
// global and the rest slide; 0 makes every layer slide.
func slidingLayer(n, l int) bool { return n == 0 || l%n < n-1 }

// ggufTokenizer reads the vocabulary: "llama" (sentencepiece: pieces with
// scores) or "gpt2" (byte-level BPE: pieces, ranked merges and a
// pre-tokenizer), with its BOS and end tokens where the file names them.
func ggufTokenizer(g *GGUF) (*Tokenizer, error) {
	model, _ := g.Meta["tokenizer.ggml.model"].(string)
	tokens, err := metaStrings(g, "tokenizer.ggml.tokens")
	if err != nil || len(tokens) == 0 {
		return nil, fmt.Errorf("GGUF tokenizer.ggml.tokens is missing or not a list of strings (%v); the engine needs the vocabulary", err)
	}
	for id, text := range tokens {
		if text == "" { // named as llama.cpp's loader names it
			tokens[id] = "[EMPTY_" + strconv.Itoa(id) + "]"
		}
	}
	// Token types (llama.cpp's): a user-defined token's text is matched
	// whole in a prompt before the rest is tokenized, as llama.cpp does
	// without special parsing; its text as the file stores it.
	var types []int
	if raw, ok := g.Meta["tokenizer.ggml.token_type"].([]any); ok && len(raw) == len(tokens) {
		for _, v := range raw {
			n, _ := v.(int64)
			types = append(types, int(n))
		}
	}
	// before the user-defined tokens are chosen: it re-types some
	stops, err := recogniseByText(g, model, tokens, types)
	if err != nil {
		return nil, err
	}
	var user []userToken
	for id, typ := range types {
		if typ == tokenTypeUserDefined {
			user = append(user, userToken{text: tokens[id], id: id})
		}
	}
	slices.SortStableFunc(user, func(a, b userToken) int { return len(b.text) - len(a.text) })
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
			fscores[i] = float32(f)
		}
		tok = NewTokenizer(tokens, fscores)
		tok.asLlamaCpp = true
		if add, ok := g.Meta["tokenizer.ggml.add_space_prefix"].(bool); ok {
			tok.noSpacePrefix = !add
		}
	case "gpt2":
		merges, err := metaStrings(g, "tokenizer.ggml.merges")
		if err != nil || len(merges) == 0 {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.merges is missing or not a list of strings (%v); a gpt2 vocabulary needs its merges", err)
		}
		pre, _ := g.Meta["tokenizer.ggml.pre"].(string)
		bpe, err := newBPE(tokens, merges, pre)
		if err != nil {
			return nil, err
		}
		tok = NewTokenizer(tokens, make([]float32, len(tokens)))
		tok.bpe, tok.addBOS = bpe, bpe.addBOS
	default:
		return nil, fmt.Errorf("GGUF tokenizer.ggml.model is %q; the builtin engine reads \"llama\" (sentencepiece) and \"gpt2\" (BPE) vocabularies", untrusted.Line(model))
	}
	if len(tok.ids) < len(tokens) {
		return nil, repeatedToken(tok, tokens)
	}
	tok.userTokens, tok.types = user, types
	tok.stops = stops
	// whether a prompt starts with BOS is the pre-tokenizer's default
	// (llama.cpp's) or the file's add_bos_token; whether it ends with EOS,
	// add_eos_token
	bos, hasBOS, err := specialToken(g, model, "bos", len(tokens))
	if err != nil {
		return nil, err
	}
	eos, hasEOS, err := specialToken(g, model, "eos", len(tokens))
	if err != nil {
		return nil, err
	}
	tok.bos, tok.eos = bos, eos
	if add, ok := g.Meta["tokenizer.ggml.add_bos_token"].(bool); ok {
		tok.addBOS = add
	}
	tok.addEOS, _ = g.Meta["tokenizer.ggml.add_eos_token"].(bool)
	if tok.addBOS && !hasBOS || tok.addEOS && !hasEOS {
		return nil, errors.New("GGUF tokenizer.ggml.add_bos_token or add_eos_token asks for a token the vocabulary lacks (tokenizer.ggml.bos_token_id, eos_token_id)")
	}
	return tok, nil
}

// repeatedToken names the first token whose text an earlier one has (tok
// indexes each text's first id). llama.cpp's loader stops on such a
// vocabulary (its text-to-id map would lose one), so the engine refuses it.
func repeatedToken(tok *Tokenizer, tokens []string) error {
	for id, text := range tokens {
		if first := tok.ids[text]; first != id {
			return fmt.Errorf("GGUF tokenizer.ggml.tokens has %q as token %d and again as token %d; a vocabulary names each token once (llama.cpp refuses this file too)", untrusted.Line(text), first, id)
		}
	}
	return nil
}

// specialToken is a vocabulary's BOS or EOS (name "bos" or "eos") as
// llama.cpp takes it: the file's tokenizer.ggml.NAME_token_id, else its
// default for model's kind: 1 and 2 for sentencepiece, 11 and 11 for
// gpt2 (GPT-2's); ok is false where that is outside the n tokens.
func specialToken(g *GGUF, model, name string, n int) (id int, ok bool, err error) {
	if id, ok, err = tokenKey(g, name, n); err != nil || ok {
		return id, ok, err
	}
	id = map[string]int{"bos": tokenBOS, "eos": tokenEOS}[name]
	if model == "gpt2" {
		id = 11
	}
	return id, id < n, nil
}

// tokenKey reads tokenizer.ggml.NAME_token_id, an id in a vocabulary of
// n tokens.
func tokenKey(g *GGUF, name string, n int) (id int, ok bool, err error) {
	key := "tokenizer.ggml." + name + "_token_id"
	if id, ok = g.metaInt(key); ok && (id < 0 || id >= n) {
		return 0, false, fmt.Errorf("GGUF %s is %d, outside the %d-token vocabulary", key, id, n)
	}
	return id, ok, nil
}

// recogniseByText does what llama.cpp's vocabulary loader does with the
// tokens it recognises by their text (llama-vocab.cpp at d32676d7), for
// a vocabulary of model's kind whose tokens' texts are texts. It returns
// the end-of-generation set, sorted: the EOS (specialToken), EOT and EOM;
// the fill-in-the-middle pad, repository and file-separator tokens; and
// every token with one of endOfGenerationTexts, a normal token's too
// (Qwen's and Gemma's "</s>"); never BOS, as llama2.c's rule would. Where
// the file names no EOT, EOM or fill-in-the-middle token by key, it finds
// one by text (recognisedTexts). It re-types in types (the file's token
// types, or nil) each token it found by text as a control token, which a
// prompt's text never matches whole: Gemma's user-defined "</s>".
func recogniseByText(g *GGUF, model string, texts []string, types []int) ([]int, error) {
	byText := make(map[string]int, len(recognisable))
	for id, text := range texts {
		if recognisable[text] {
			byText[text] = id // the last of a repeated text, as llama.cpp's map
		}
	}
	control := map[int]bool{}
	set := map[int]bool{}
	eos, ok, err := specialToken(g, model, "eos", len(texts))
	if err != nil {
		return nil, err
	}
	if ok {
		set[eos] = true
	}
	for _, r := range recognisedTexts {
		id, ok, err := tokenKey(g, r.key, len(texts))
		if err != nil {
			return nil, err
		}
		if !ok {
			// where several of the texts are in the vocabulary, llama.cpp
			// takes the first its hash map yields; the engine the lowest id
			for _, text := range r.texts {
				if found, in := byText[text]; in && (!ok || found < id) {
					id, ok = found, true
				}
			}
			if ok {
				control[id] = true
			}
		}
		if ok && r.ends {
			set[id] = true
		}
	}
	for _, text := range endOfGenerationTexts {
		if id, ok := byText[text]; ok {
			set[id], control[id] = true, true
		}
	}
	// llama.cpp's two exceptions: gpt-oss's and Solar Open's <|end|>, and
	// Gemma 4's </s>, end nothing and are no control tokens (it also
	// re-types gpt-oss's <|channel|> and its kin; the engine refuses that
	// architecture)
	has := func(text string) bool { id, ok := byText[text]; return ok && set[id] }
	for _, exception := range []struct {
		text string
		when bool
	}{
		{"<|end|>", has("<|end|>") && (has("<|call|>") || has("<|calls|>")) && (has("<|return|>") || has("<|flush|>"))},
		{"</s>", has("<|tool_response>") && has("</s>")},
	} {
		if exception.when {
			delete(set, byText[exception.text])
			delete(control, byText[exception.text])
		}
	}
	for id := range control {
		if id < len(types) {
			types[id] = tokenTypeControl
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// recognisedTexts are, for each special token llama.cpp finds by its text
// where the file names none by key (tokenizer.ggml.KEY_token_id), the
// texts it looks for, and whether the token ends a generation.
var recognisedTexts = []struct {
	key   string
	texts []string
	ends  bool
}{
	{"eot", []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
		"_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}, true},
	{"eom", []string{"<|eom_id|>"}, true},
	{"fim_pre", []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}, false},
	{"fim_suf", []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}, false},
	{"fim_mid", []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}, false},
	{"fim_pad", []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}, true},
	{"fim_rep", []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}, true},
	{"fim_sep", []string{"<|file_sep|>"}, true},
}

// recognisable is every text recogniseByText looks for.
var recognisable = func() map[string]bool {
	texts := map[string]bool{}
	for _, r := range recognisedTexts {
		for _, text := range r.texts {
			texts[text] = true
		}
	}
	for _, text := range endOfGenerationTexts {
		texts[text] = true
	}
	return texts
}()

// endOfGenerationTexts are the tokens llama.cpp ends a generation at by
// their text, whatever the file's keys say.
var endOfGenerationTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
	"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}

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

// halfOf is the kind of 16-bit float a tensor of ggml type typ holds, or
// notHalf.
func halfOf(typ uint32) halfKind {
	switch typ {
	case ggmlF16:
		return ieeeHalf
	case ggmlBF16:
		return bfloat16
	}
	return notHalf
}

func hasTensor(g *GGUF, name string) bool {
	_, ok := g.Tensors[name]
	return ok
}

// tensorLoader reads tensors by name, keeping the first error and the
// names it has read.
type tensorLoader struct {
	g       *GGUF
	b       []byte
	release func([]byte) // see loadGGUF
	err     error
	read    map[string]bool
}

// unread returns the file's tensors the loader has not read, sorted.
func (l *tensorLoader) unread() []string {
	var names []string
	for name := range l.g.Tensors {
		if !l.read[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
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
	if l.read == nil {
		l.read = make(map[string]bool)
	}
	l.read[name] = true
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
	case halfOf(t.Type) != notHalf:
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
	case ggmlF16, ggmlBF16:
		out := make([]float32, n)
		halfOf(t.Type).widen(out, raw)
		return out
	default: // quantized: dequantized through the matrix form
		return l.matrixOf(t, raw, rows, cols).Dequantize().F32
	}
}

// rows reads a quantized, F16 or BF16 rows × cols tensor as a table
// decoded a row at a time, in place in the file.
func (l *tensorLoader) rows(name string, rows, cols int) *quantRows {
	t, raw := l.data(name, rows, cols)
	if raw == nil {
		return nil
	}
	if half := halfOf(t.Type); half != notHalf {
		return &quantRows{raw: raw, cols: cols, block: cols, blockBytes: 2 * cols, decode: half.widen}
	}
	f := ggmlFormats[t.Type]
	decode := formats[f].decode
	if f == formatQ8_0 {
		decode = decodeQ8_0File
	}
	return &quantRows{raw: raw, cols: cols, block: f.block(), blockBytes: f.fileBlockBytes(), decode: decode}
}

// matrix reads a rows × cols weight; quantized ones stay quantized.
func (l *tensorLoader) matrix(name string, rows, cols int) *Matrix {
	t, raw := l.data(name, rows, cols)
	if raw == nil {
		return nil
	}
	switch {
	case halfOf(t.Type) != notHalf:
		return &Matrix{Rows: rows, Cols: cols, halves: raw, half: halfOf(t.Type), bf16Products: halfOf(t.Type) == bfloat16}
	case !isQuantized(t.Type):
		return NewF32(rows, cols, l.vector(name, rows, cols))
	}
	// Tiles only here, for the matrices that multiply: an embedding read
	// as vector is dequantized and its matrix dropped. Each copy made,
	// the file's pages go back at once, so a matrix is held at most twice
	// while it loads (the file and the tiles, or the converted rows and
	// their tiles).
	if t.Type == ggmlQ8_0 {
		if tiles := q8_0TilesOfFile(raw, rows, cols); tiles != nil {
			l.releaseRaw(raw)
			return &Matrix{Rows: rows, Cols: cols, format: formatQ8_0, tiles: tiles}
		}
	}
	m := l.matrixOf(t, raw, rows, cols)
	if !m.format.storedAsBlocks() { // converted: the rows are a copy
		l.releaseRaw(raw)
	}
	m = withTiles(m, nil, nil)
	if m.tiles != nil && m.format.storedAsBlocks() { // the kernels read the tiles alone
		l.releaseRaw(raw)
	}
	return m
}

// releaseRaw hands a tensor's bytes back where the engine holds a copy.
func (l *tensorLoader) releaseRaw(raw []byte) {
	if l.release != nil {
		l.release(raw)
	}
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

// f32ToF16 rounds f to the nearest half, ties to even (as the F16C
// instruction ggml converts with does), subnormals included; beyond the
// half range it is ±infinity.
func f32ToF16(f float32) uint16 { return f32BitsToF16(math.Float32bits(f)) }

// f32BitsToF16 is f32ToF16 of the float whose bits are f, in integer
// instructions only (the vector kernels call it between AVX instructions,
// where a scalar float instruction would stall them).
func f32BitsToF16(f uint32) uint16 {
	sign := uint16(f>>16) & 0x8000
	exp := int(f>>23&0xff) - 127
	mant := f & 0x7fffff
	switch {
	case exp == 128: // infinity or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 15:
		return sign | 0x7c00
	case exp < -25:
		return sign
	}
	// The half's mantissa is the float's, shifted right by 13 bits (more
	// for a subnormal half, whose leading 1 becomes explicit).
	mant |= 0x800000
	shift := uint(13)
	if exp < -14 {
		shift += uint(-14 - exp)
	}
	half := mant >> shift
	rest, tie := mant&(1<<shift-1), uint32(1)<<(shift-1)
	if rest > tie || rest == tie && half&1 == 1 {
		half++
	}
	if exp < -14 {
		return sign | uint16(half) // a carry into bit 10 makes it the smallest normal, as it should
	}
	// half holds the leading 1 at bit 10; the exponent adds onto it, and
	// a carry out of the mantissa moves the exponent up by itself.
	return sign | uint16(uint32(exp+14)<<10+half)
}

// halfRoundedBits is the bits of the float whose bits are f, rounded to
// the nearest half, in integer instructions only (see f32BitsToF16).
func halfRoundedBits(f uint32) uint32 {
	h := uint32(f32BitsToF16(f))
	sign, exp, mant := h&0x8000<<16, h>>10&0x1f, h&0x3ff
	switch {
	case exp == 0x1f:
		return sign | 0x7f800000 | mant<<13
	case exp != 0:
		return sign | (exp+112)<<23 | mant<<13
	case mant == 0:
		return sign
	}
	// a subnormal half: its leading 1 becomes the float's implicit one
	shift := uint32(bits.LeadingZeros32(mant)) - 21
	return sign | (113-shift)<<23 | (mant<<shift&0x3ff)<<13
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
